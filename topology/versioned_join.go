package topology

import (
	"fmt"
	"time"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/statestore"
)

// The joins with versioned tables: stream–table as of the stream record's
// time (with an optional grace buffer, joinbuffer.go) and table–table with
// versioned semantics. See versioned.go.

// versionedJoin is Join and LeftJoin with a versioned table: the stream
// record meets the table as of its timestamp, after a grace period when
// cfg.grace is set.
func versionedJoin[K, V, VT, VR any](s Stream[K, V], t Table[K, VT], prefix string, cfg config, join func(K, V, VT, bool) (VR, bool)) Stream[K, VR] {
	b := s.b
	if !t.versioned {
		b.failf("%s: a grace period needs a versioned table; read it with NewTable(..., Versioned(retention))", prefix)
		return Stream[K, VR]{b: b, node: s.node}
	}
	in := s.partitioned("")
	if cfg.grace != nil && *cfg.grace < 0 {
		b.failf("%s: negative grace period %v", prefix, *cfg.grace)
	}
	if cfg.grace != nil && *cfg.grace > t.history {
		b.failf("%s: grace period %v is longer than the history retention %v of table store %q", prefix, *cfg.grace, t.history, t.store)
	}
	if cfg.grace != nil && (in.ks == nil || in.vs == nil) {
		b.failf("%s: the grace buffer needs serdes for %s and %s; set them with WithKeySerde and WithValueSerde", prefix, typeName[K](), typeName[V]())
	}
	var buffer string // set once the node has its name
	store, history, ks, vts, vs := t.store, t.history, t.ks, t.vs, in.vs
	grace := cfg.grace
	n := b.addNode(&nodeDef{
		kind: processor.KindProcessor,
		newProc: func() processor.Processor[any, any, any, any] {
			p := &versionedJoinProc[K, V, VT, VR]{store: store, history: history, ks: ks, vts: vts, join: join}
			if grace != nil {
				p.buf = &joinBuffer[K, V]{store: buffer, grace: grace.Milliseconds(), ks: ks, vs: vs}
			}
			return p
		},
	}, prefix, cfg, in.node)
	b.connectStore(n, store)
	if grace != nil {
		buffer = n.name + "-Buffer"
		b.addStore(statestore.Spec{Name: buffer, Kind: statestore.KindKeyValue, Logged: true}, n)
		if sd, ok := b.stores[buffer]; ok {
			sd.companion = true
		}
	}
	return Stream[K, VR]{b: b, node: n, ks: in.ks, vs: inferSerde[VR]()}
}

// versionedJoinProc joins stream records with a versioned table as of
// their timestamps, through a grace buffer when buf is set.
type versionedJoinProc[K, V, VT, VR any] struct {
	store   string
	history time.Duration
	ks      serde.Serde[K]
	vts     serde.Serde[VT]
	join    func(K, V, VT, bool) (VR, bool)
	table   *statestore.Versions[K, VT]
	buf     *joinBuffer[K, V]
}

func (p *versionedJoinProc[K, V, VT, VR]) Init(ctx processor.Context[any, any]) error {
	var err error
	if p.table, err = versionedStore(ctx, p.store, p.history, p.ks, p.vts); err != nil {
		return err
	}
	if p.buf != nil {
		return p.buf.init(ctx)
	}
	return nil
}

func (p *versionedJoinProc[K, V, VT, VR]) Process(ctx processor.Context[any, any], r processor.Record[any, any]) error {
	if r.Key == nil && r.Value != nil {
		return p.joinNullKey(ctx, r)
	}
	if dropNull(ctx, r.Value == nil) {
		return nil
	}
	tr, err := processor.Assert[K, V](r)
	if err != nil {
		return err
	}
	if p.buf == nil {
		return p.doJoin(ctx, r, tr.Key, tr.Value)
	}
	held, err := p.buf.put(tr.Key, tr.Value, r)
	if err != nil {
		return fmt.Errorf("topology: join with %q: %w", p.store, err)
	}
	if !held {
		return p.doJoin(ctx, r, tr.Key, tr.Value)
	}
	return p.buf.evict(func(k K, v V, held processor.Record[any, any]) error {
		return p.doJoin(ctx, held, k, v)
	})
}

// joinNullKey handles a stream record with a null key: a left join joins
// it at once with no table value and forwards it with its null key, as
// Kafka Streams does (KIP-962); an inner join drops and counts it. The
// joiner sees K's zero value for the key.
func (p *versionedJoinProc[K, V, VT, VR]) joinNullKey(ctx processor.Context[any, any], r processor.Record[any, any]) error {
	v, err := processor.As[V](r.Value)
	if err != nil {
		return err
	}
	var (
		k  K
		vt VT
	)
	out, ok := p.join(k, v, vt, false)
	if dropNull(ctx, !ok) {
		return nil
	}
	r.Value = out
	return ctx.Forward(r)
}

// doJoin joins r (key k, value v) with the table as of r's timestamp.
func (p *versionedJoinProc[K, V, VT, VR]) doJoin(ctx processor.Context[any, any], r processor.Record[any, any], k K, v V) error {
	ver, found, err := p.table.GetAsOf(k, r.Timestamp)
	if err != nil {
		return fmt.Errorf("topology: join with %q: %w", p.store, err)
	}
	out, ok := p.join(k, v, ver.Value, found)
	return forwardJoined(ctx, r, out, ok)
}

// joinVersionedTables is JoinTables, LeftJoinTables or OuterJoinTables
// when a side is versioned (Kafka Streams' KTableKTable*Join with
// versioned semantics, KIP-914): each side's node skips its side's
// out-of-order updates when that side is versioned (they only enter its
// history, and the result is unchanged), and reads the other side's
// latest value as it is stored. keepA and keepB say which sides keep
// their keys when the other side does not have them, as in joinTables.
func joinVersionedTables[K, V1, V2, VR any](a Table[K, V1], c Table[K, V2], keepA, keepB bool, joiner func(K, V1, bool, V2, bool) VR, cfg config) Table[K, VR] {
	b := a.b
	ks := a.ks
	aSide, cSide := tableSideOf(a), tableSideOf(c)
	var aPresent, cPresent string // set once the nodes have their names; read when tasks start
	left := b.addNode(&nodeDef{
		kind: processor.KindProcessor,
		newProc: func() processor.Processor[any, any, any, any] {
			return &versionedTableJoinSide[K, V1, V2, VR]{own: aSide, other: cSide, present: aPresent, ks: ks, vs: a.vs, vos: c.vs,
				tableJoinUpdate: tableJoinUpdate[K, V1, V2, VR]{keepThis: keepA, keepOther: keepB, join: joiner}}
		},
	}, "KTABLE-JOINTHIS", config{}, a.node)
	right := b.addNode(&nodeDef{
		kind: processor.KindProcessor,
		newProc: func() processor.Processor[any, any, any, any] {
			return &versionedTableJoinSide[K, V2, V1, VR]{own: cSide, other: aSide, present: cPresent, ks: ks, vs: c.vs, vos: a.vs,
				tableJoinUpdate: tableJoinUpdate[K, V2, V1, VR]{keepThis: keepB, keepOther: keepA,
					join: func(k K, v2 V2, ok2 bool, v1 V1, ok1 bool) VR { return joiner(k, v1, ok1, v2, ok2) }}}
		},
	}, "KTABLE-JOINOTHER", config{}, c.node)
	for _, side := range []struct {
		n          *nodeDef
		own, other tableSide
	}{{left, aSide, cSide}, {right, cSide, aSide}} {
		if side.own.versioned {
			b.connectStore(side.n, side.own.store)
		}
		b.connectStore(side.n, side.other.store)
		if !side.other.versioned {
			b.connectStore(side.n, side.other.timestamps)
		}
	}
	aPresent, cPresent = b.keepKeys(left, right, keepA, keepB)
	return mergeTableJoin[K, VR](b, cfg, a.ks, left, right)
}

// tableSide is what a table–table join knows of one side's store.
type tableSide struct {
	store      string
	versioned  bool
	history    time.Duration
	timestamps string // the keys' timestamps, beside a store that is not versioned
}

func tableSideOf[K, V any](t Table[K, V]) tableSide {
	if t.versioned {
		return tableSide{store: t.store, versioned: true, history: t.history}
	}
	return tableSide{store: t.store, timestamps: t.b.timestampsOf(t.store)}
}

// versionedTableJoinSide handles the updates of one side of a table–table
// join of which a side is versioned.
type versionedTableJoinSide[K, V, VO, VR any] struct {
	own, other tableSide
	present    string // this side's keys; "" unless keepThis
	ks         serde.Serde[K]
	vs         serde.Serde[V]
	vos        serde.Serde[VO]
	tableJoinUpdate[K, V, VO, VR]

	ownVersions   *statestore.Versions[K, V]  // when own is versioned
	otherVersions *statestore.Versions[K, VO] // when other is versioned
	otherKV       *statestore.KV[K, VO]       // otherwise, with otherTS
	otherTS       *statestore.KV[K, int64]
}

func (p *versionedTableJoinSide[K, V, VO, VR]) Init(ctx processor.Context[any, any]) error {
	var err error
	if p.own.versioned {
		if p.ownVersions, err = versionedStore(ctx, p.own.store, p.own.history, p.ks, p.vs); err != nil {
			return err
		}
	}
	if p.present != "" {
		if p.keys, err = processor.KeyValueStore(ctx, p.present, p.ks, serde.Int64()); err != nil {
			return err
		}
	}
	if p.other.versioned {
		p.otherVersions, err = versionedStore(ctx, p.other.store, p.other.history, p.ks, p.vos)
		return err
	}
	if p.otherKV, err = processor.KeyValueStore(ctx, p.other.store, p.ks, p.vos); err != nil {
		return err
	}
	p.otherTS, err = processor.KeyValueStore(ctx, p.other.timestamps, p.ks, serde.Int64())
	return err
}

func (p *versionedTableJoinSide[K, V, VO, VR]) Process(ctx processor.Context[any, any], r processor.Record[any, any]) error {
	k, ok, err := tableKey[K](ctx, r)
	if !ok {
		return err
	}
	if p.own.versioned {
		latest, ok, err := p.ownVersions.LatestTimestamp(k)
		if err != nil {
			return fmt.Errorf("topology: join of %q: %w", p.own.store, err)
		}
		if ok && latest.After(r.Timestamp) {
			return nil // out of order: only in this side's history
		}
	}
	return p.update(ctx, r, k, p.other.store, p.lookup)
}

// lookup returns the other side's value of k and its timestamp.
func (p *versionedTableJoinSide[K, V, VO, VR]) lookup(k K) (VO, time.Time, bool, error) {
	if p.other.versioned {
		ver, found, err := p.otherVersions.Get(k)
		return ver.Value, ver.ValidFrom, found, err
	}
	vo, found, err := p.otherKV.Get(k)
	if err != nil || !found {
		return vo, time.Time{}, false, err
	}
	ts, _, err := p.otherTS.Get(k)
	return vo, time.UnixMilli(ts), true, err
}
