package topology

import (
	"fmt"
	"time"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/statestore"
)

// Table–table joins follow Kafka Streams' KTableKTableInnerJoin,
// KTableKTableLeftJoin (with KTableKTableRightJoin for the right side) and
// KTableKTableOuterJoin (4.4), with old values not sent downstream. An
// update of one side looks its key up in the other side's store:
//
//   - other side present: the result is recomputed and forwarded, stamped
//     with the later of the two sides' timestamps. A delete of this side
//     recomputes it with no value for this side when the other side is
//     kept (the right side of a left join, either side of an outer join),
//     and otherwise deletes it.
//   - other side absent: nothing, unless this side is kept (the left side
//     of a left join, either side of an outer join); then the result is
//     recomputed with no value for the other side, or deleted by a delete
//     — but a delete of a key this side did not have forwards nothing (the
//     result did not exist). Stamped with this update's timestamp.
//
// So an inner join's result exists while both sides have the key, a left
// join's while the left side has it, an outer join's while either has it.
// While the other side has the key, a delete of this side is forwarded (as
// a delete or a recomputed result) even if this side did not have the key:
// Kafka Streams does the same. With a versioned side, the three joins go
// through joinVersionedTables (versioned_join.go), which also skips that
// side's out-of-order updates.

// JoinTables joins two tables on their keys (an inner join): the result has
// joiner(k, v1, v2) for each key present in both, and is updated by updates
// on either side. A delete on either side deletes the result. Each update
// is stamped with the later of the two sides' timestamps.
func JoinTables[K, V1, V2, VR any](a Table[K, V1], c Table[K, V2], joiner func(K, V1, V2) VR, opts ...Option) Table[K, VR] {
	if (a.versioned || c.versioned) && a.b == c.b && a.store != "" && c.store != "" {
		return joinVersionedTables(a, c, false, false, func(k K, v1 V1, _ bool, v2 V2, _ bool) VR {
			return joiner(k, v1, v2)
		}, newConfig(opts))
	}
	return joinTables(a, c, "JoinTables", false, false, func(k K, v1 V1, _ bool, v2 V2, _ bool) VR {
		return joiner(k, v1, v2)
	}, opts)
}

// LeftJoinTables joins two tables on their keys, keeping every key of a
// (Kafka Streams' KTable.leftJoin): the result has joiner(k, v1, v2, found)
// for each key of a, found false and v2 V2's zero value when c does not
// have the key. An update of a recomputes the result; a delete of a
// deletes it. An update of c recomputes the result of a key a has; a
// delete of c recomputes it with found false.
func LeftJoinTables[K, V1, V2, VR any](a Table[K, V1], c Table[K, V2], joiner func(k K, v1 V1, v2 V2, found bool) VR, opts ...Option) Table[K, VR] {
	join := func(k K, v1 V1, _ bool, v2 V2, found bool) VR { return joiner(k, v1, v2, found) }
	if (a.versioned || c.versioned) && a.b == c.b && a.store != "" && c.store != "" {
		return joinVersionedTables(a, c, true, false, join, newConfig(opts))
	}
	return joinTables(a, c, "LeftJoinTables", true, false, join, opts)
}

// OuterJoinTables joins two tables on their keys, keeping every key of
// either (Kafka Streams' KTable.outerJoin): the result has
// joiner(k, v1, found1, v2, found2) for each key of a or c, found1 (found2)
// false and v1 (v2) the zero value when a (c) does not have the key. An
// update or delete of either side recomputes the result; the result is
// deleted when the key is deleted from the only side that had it.
func OuterJoinTables[K, V1, V2, VR any](a Table[K, V1], c Table[K, V2], joiner func(k K, v1 V1, found1 bool, v2 V2, found2 bool) VR, opts ...Option) Table[K, VR] {
	if (a.versioned || c.versioned) && a.b == c.b && a.store != "" && c.store != "" {
		return joinVersionedTables(a, c, true, true, joiner, newConfig(opts))
	}
	return joinTables(a, c, "OuterJoinTables", true, true, joiner, opts)
}

// joinTables adds the two sides of a table-table join and their merge;
// keepA and keepB say which sides keep their keys when the other side does
// not have them (left: a; outer: both).
func joinTables[K, V1, V2, VR any](a Table[K, V1], c Table[K, V2], op string, keepA, keepB bool, joiner func(K, V1, bool, V2, bool) VR, opts []Option) Table[K, VR] {
	b := a.b
	cfg := newConfig(opts)
	if c.b != b {
		b.failf("%s: tables from different builders", op)
		return Table[K, VR]{b: b, node: a.node}
	}
	if a.store == "" || c.store == "" {
		b.failf("%s: both tables must be materialized; give them Materialized(name)", op)
	}
	ks := a.ks
	// A result is stamped with the later of the two sides' timestamps, as
	// in Kafka Streams: each table keeps its keys' timestamps beside it.
	aTS, cTS := b.timestampsOf(a.store), b.timestampsOf(c.store)
	var aPresent, cPresent string // set once the nodes have their names; read when tasks start
	left := b.addNode(&nodeDef{
		kind: processor.KindProcessor,
		newProc: func() processor.Processor[any, any, any, any] {
			return &tableJoinSide[K, V1, V2, VR]{other: c.store, otherTS: cTS, present: aPresent, ks: ks, vos: c.vs,
				tableJoinUpdate: tableJoinUpdate[K, V1, V2, VR]{keepThis: keepA, keepOther: keepB, join: joiner}}
		},
	}, "KTABLE-JOINTHIS", config{}, a.node)
	b.connectStore(left, c.store)
	b.connectStore(left, cTS)
	right := b.addNode(&nodeDef{
		kind: processor.KindProcessor,
		newProc: func() processor.Processor[any, any, any, any] {
			return &tableJoinSide[K, V2, V1, VR]{other: a.store, otherTS: aTS, present: cPresent, ks: ks, vos: a.vs,
				tableJoinUpdate: tableJoinUpdate[K, V2, V1, VR]{keepThis: keepB, keepOther: keepA,
					join: func(k K, v2 V2, ok2 bool, v1 V1, ok1 bool) VR { return joiner(k, v1, ok1, v2, ok2) }}}
		},
	}, "KTABLE-JOINOTHER", config{}, c.node)
	b.connectStore(right, a.store)
	b.connectStore(right, aTS)
	aPresent, cPresent = b.keepKeys(left, right, keepA, keepB)
	return mergeTableJoin[K, VR](b, cfg, a.ks, left, right)
}

// keepKeys declares the key stores of the kept sides of a table–table
// join (left: the first; outer: both) and returns their names, "" for a
// side not kept. A kept side remembers its keys: Kafka Streams sends it
// the old value, and forwards a delete only for a key that had one.
func (b *Builder) keepKeys(left, right *nodeDef, keepA, keepB bool) (aPresent, cPresent string) {
	if keepA {
		aPresent = left.name + "-present"
		b.addCompanion(aPresent, left)
	}
	if keepB {
		cPresent = right.name + "-present"
		b.addCompanion(cPresent, right)
	}
	return aPresent, cPresent
}

// mergeTableJoin merges the two sides of a table–table join into its
// result table, materialized when cfg names a store.
func mergeTableJoin[K, VR any](b *Builder, cfg config, ks serde.Serde[K], left, right *nodeDef) Table[K, VR] {
	merge := b.stateless("KTABLE-MERGE", cfg, forwardAll, left, right)
	out := Table[K, VR]{b: b, node: merge, ks: ks, vs: inferSerde[VR]()}
	if cfg.store != "" {
		out = out.materialize("KTABLE-JOIN", cfg.store)
	}
	return out
}

// addCompanion declares a logged key-value store owned by n that Describe
// does not list: state weir keeps where Kafka Streams keeps it inside
// another store.
func (b *Builder) addCompanion(name string, n *nodeDef) {
	b.addStore(statestore.Spec{Name: name, Kind: statestore.KindKeyValue, Logged: true}, n)
	if sd, ok := b.stores[name]; ok {
		sd.companion = true
	}
}

// tableJoinSide handles the updates of one side of a table-table join,
// looking the key up in the other side's store.
type tableJoinSide[K, V, VO, VR any] struct {
	other   string
	otherTS string // the other side's timestamps
	present string // this side's keys; "" unless keepThis
	ks      serde.Serde[K]
	vos     serde.Serde[VO]
	tableJoinUpdate[K, V, VO, VR]

	kv *statestore.KV[K, VO]
	ts *statestore.KV[K, int64]
}

func (p *tableJoinSide[K, V, VO, VR]) Init(ctx processor.Context[any, any]) error {
	kv, err := processor.KeyValueStore(ctx, p.other, p.ks, p.vos)
	p.kv = kv
	if err == nil {
		p.ts, err = processor.KeyValueStore(ctx, p.otherTS, p.ks, serde.Int64())
	}
	if err == nil && p.present != "" {
		p.keys, err = processor.KeyValueStore(ctx, p.present, p.ks, serde.Int64())
	}
	return err
}

func (p *tableJoinSide[K, V, VO, VR]) Process(ctx processor.Context[any, any], r processor.Record[any, any]) error {
	k, ok, err := tableKey[K](ctx, r)
	if !ok {
		return err
	}
	return p.update(ctx, r, k, p.other, p.lookup)
}

// lookup returns the other side's value of k and its timestamp.
func (p *tableJoinSide[K, V, VO, VR]) lookup(k K) (VO, time.Time, bool, error) {
	vo, found, err := p.kv.Get(k)
	if err != nil || !found {
		return vo, time.Time{}, false, err
	}
	ts, ok, err := p.ts.Get(k)
	if err != nil || !ok {
		return vo, time.Time{}, true, err
	}
	return vo, time.UnixMilli(ts), true, nil
}

// tableJoinUpdate is what a side of a table–table join, versioned or not,
// does with an update of its own.
type tableJoinUpdate[K, V, VO, VR any] struct {
	// keepThis: this side's keys have a result when the other side does
	// not have them; keepOther: the other side's keys have one when this
	// side does not.
	keepThis, keepOther bool
	join                func(k K, v V, found bool, vo VO, foundOther bool) VR
	keys                *statestore.KV[K, int64] // this side's keys, when keepThis
}

// update joins r, an update of key k on this side, with the other side's
// value of k and its timestamp as lookup returns them (other names the
// other side's store in errors), and forwards the result stamped with the
// later of the two timestamps.
func (p *tableJoinUpdate[K, V, VO, VR]) update(ctx processor.Context[any, any], r processor.Record[any, any], k K,
	other string, lookup func(K) (VO, time.Time, bool, error)) error {
	var v V
	if r.Value != nil {
		var err error
		if v, err = processor.As[V](r.Value); err != nil {
			return err
		}
	}
	had, err := rememberKey(p.keys, k, r.Value != nil)
	if err != nil {
		return err
	}
	vo, ts, found, err := lookup(k)
	if err != nil {
		return fmt.Errorf("topology: join with %q: %w", other, err)
	}
	if !found {
		if !p.keepThis || (r.Value == nil && !had) {
			return nil
		}
		if r.Value != nil {
			r.Value = p.join(k, v, true, vo, false)
		}
		return ctx.Forward(r) // a delete of this side deletes the result
	}
	if ts.After(r.Timestamp) {
		r.Timestamp = ts
	}
	switch {
	case r.Value != nil:
		r.Value = p.join(k, v, true, vo, true)
	case p.keepOther:
		r.Value = p.join(k, v, false, vo, true)
	}
	return ctx.Forward(r) // a nil value: this side deleted, so is the result
}

// rememberKey records in keys (a kept side's keys; nil when the side is
// not kept) whether the side now has k, and reports whether it had k
// before.
func rememberKey[K any](keys *statestore.KV[K, int64], k K, has bool) (bool, error) {
	if keys == nil {
		return false, nil
	}
	_, had, err := keys.Get(k)
	if err == nil {
		if has {
			err = keys.Put(k, 1)
		} else if had {
			err = keys.Delete(k)
		}
	}
	if err != nil {
		return false, fmt.Errorf("topology: table join: %w", err)
	}
	return had, nil
}
