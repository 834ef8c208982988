package topology

import (
	"fmt"
	"time"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/statestore"
)

// Foreign-key joins of versioned tables follow Kafka Streams' versioned
// semantics (KIP-914): an update of a versioned side older than that
// side's latest version (a delete too) went into the side's history only,
// so it sends no subscription (left side) and reaches no subscriber (right
// side); a versioned right side is looked up by its latest version,
// stamped with that version's timestamp.

// versionGate tells a versioned table's out-of-order updates, which a
// join skips, from its others. Its zero value (a table that is not
// versioned) skips nothing.
type versionGate[K, V any] struct {
	side     tableSide
	ks       serde.Serde[K]
	vs       serde.Serde[V]
	versions *statestore.Versions[K, V]
}

func newVersionGate[K, V any](t Table[K, V]) versionGate[K, V] {
	if !t.versioned {
		return versionGate[K, V]{}
	}
	return versionGate[K, V]{side: tableSideOf(t), ks: t.ks, vs: t.vs}
}

// connect connects the versioned store to n, when there is one.
func (g versionGate[K, V]) connect(b *Builder, n *nodeDef) {
	if g.side.versioned {
		b.connectStore(n, g.side.store)
	}
}

func (g *versionGate[K, V]) init(ctx processor.Context[any, any]) error {
	if !g.side.versioned {
		return nil
	}
	var err error
	g.versions, err = versionedStore(ctx, g.side.store, g.side.history, g.ks, g.vs)
	return err
}

// outOfOrder reports whether an update of k at ts is older than the
// table's latest version of k, which the table's source stored before
// forwarding it.
func (g *versionGate[K, V]) outOfOrder(k K, ts time.Time) (bool, error) {
	if g.versions == nil {
		return false, nil
	}
	latest, ok, err := g.versions.LatestTimestamp(k)
	if err != nil {
		return false, fmt.Errorf("topology: join of %q: %w", g.side.store, err)
	}
	return ok && latest.After(ts), nil
}

// latest returns k's latest value and its timestamp.
func (g *versionGate[K, V]) latest(k K) (V, time.Time, bool, error) {
	ver, found, err := g.versions.Get(k)
	return ver.Value, ver.ValidFrom, found, err
}
