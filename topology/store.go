package topology

import (
	"fmt"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/statestore"
)

// AddStore declares a state store for custom processors. Connect it to the
// processors that use it with the WithStores option of Process; a store
// connected to several processors puts them in the same sub-topology.
// Set spec.Logged to back the store with a changelog topic
// ("<application id>-<name>-changelog"), so it survives restarts and moves
// with its partition.
func (b *Builder) AddStore(spec statestore.Spec) {
	if spec.Name == "" {
		b.failf("AddStore: empty store name")
		return
	}
	switch spec.Kind {
	case statestore.KindKeyValue, statestore.KindWindow, statestore.KindSession:
	default:
		b.failf("AddStore(%q): unknown kind %d", spec.Name, int(spec.Kind))
		return
	}
	if _, dup := b.stores[spec.Name]; dup {
		b.failf("store %q declared twice", spec.Name)
		return
	}
	b.stores[spec.Name] = &storeDef{spec: spec}
}

// kvStore returns the raw key-value store name, for the stores operators
// keep beside their typed ones (timestamps, buffers, indexes).
func kvStore(ctx processor.Context[any, any], name string) (statestore.KeyValueStore, error) {
	s, err := ctx.StateStore(name)
	if err != nil {
		return nil, err
	}
	kv, ok := s.(statestore.KeyValueStore)
	if !ok {
		return nil, fmt.Errorf("topology: store %q is a %T, not a key-value store", name, s)
	}
	return kv, nil
}
