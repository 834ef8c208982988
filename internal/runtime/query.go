package runtime

import (
	"context"
	"errors"
	"fmt"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/statestore"
)

// ErrUnknownStore is wrapped by QueryStore's error for a store the topology
// does not have, or cannot be queried (no codecs: a store of AddStore).
var ErrUnknownStore = errors.New("runtime: unknown store")

// ErrNotOwner is wrapped by QueryStore's error when this instance does not
// run the store's task for the partition, or still restores it.
var ErrNotOwner = errors.New("runtime: this instance does not run the partition")

// StoreInfo is what interactive queries need to know of a store.
type StoreInfo struct {
	Spec  statestore.Spec
	Codec processor.StoreCodec
	// Subtopology runs the store; Partitions is its partition count (0
	// before Prepare).
	Subtopology int
	Partitions  int32
}

// Store describes a queryable store.
func (r *Runtime) Store(name string) (StoreInfo, error) {
	g := r.cfg.Graph
	codec, ok := g.StoreCodecs[name]
	if !ok {
		return StoreInfo{}, fmt.Errorf("%w: %q", ErrUnknownStore, name)
	}
	for _, st := range g.Subtopologies {
		for _, spec := range st.Stores {
			if spec.Name != name {
				continue
			}
			info := StoreInfo{Spec: spec, Codec: codec, Subtopology: st.ID}
			if p := r.plan; p != nil && st.ID < len(p.Partitions) {
				info.Partitions = p.Partitions[st.ID]
			}
			return info, nil
		}
	}
	return StoreInfo{}, fmt.Errorf("%w: %q", ErrUnknownStore, name)
}

// QueryStore returns a read-only handle on the committed rows of a store
// partition that this instance runs — rows in Badger, never the staged
// writes of an epoch or batch that has not committed. Close it after use.
// A partition this instance does not run, or still restores, gives an
// error wrapping ErrNotOwner: its rows here may be old or partial.
func (r *Runtime) QueryStore(name string, partition int32) (statestore.Store, error) {
	info, err := r.Store(name)
	if err != nil {
		return nil, err
	}
	if !r.tasks.running(processor.TaskID{Subtopology: info.Subtopology, Partition: partition}) {
		return nil, fmt.Errorf("%w: store %q partition %d", ErrNotOwner, name, partition)
	}
	s, err := r.db.Reader(info.Spec, partition)
	if err != nil {
		return nil, fmt.Errorf("runtime: %w", err)
	}
	return s, nil
}

// running reports whether the task runs here, restored.
func (ts *Tasks) running(id processor.TaskID) bool {
	ts.mu.Lock()
	t, ok := ts.m[id]
	ts.mu.Unlock()
	if !ok {
		return false
	}
	select {
	case <-t.ready:
		return t.err == nil
	default:
		return false
	}
}

// GroupMembers describes the members of the application's consumer group
// with the data they advertise (see SetMemberData).
func (r *Runtime) GroupMembers(ctx context.Context) ([]kafka.GroupMember, error) {
	return r.admin.GroupMembers(ctx, r.cfg.ApplicationID)
}
