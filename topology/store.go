package topology

import (
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
