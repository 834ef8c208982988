package topology

import (
	"bytes"
	"fmt"
	"math"
	"time"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/statestore"
)

// GroupedTable is a table re-grouped by a new key, ready for aggregation
// (Kafka Streams' KGroupedTable). Unlike a grouped stream, whose records
// only add to their group, each table update replaces the entry's previous
// value: an aggregation of a GroupedTable subtracts the previous value from
// the group it was in and adds the new value to the group it is in now, so
// that "count per region" stays right when an entry moves between regions
// or is deleted.
//
// Each update travels to its group through a repartition topic as a change
// (previous value, new value) of the mapped entry: a record with the
// previous value for its old group and a record with the new value for its
// new group, or, when both map to the same group, one record with both —
// then the aggregate is updated once, subtract before add (KIP-904). The
// record format is Kafka Streams' (its ChangedSerializer).
type GroupedTable[K, V any] struct {
	b   *Builder
	sel *tableSelect[K]
	ks  serde.Serde[K]
	vs  serde.Serde[V]
}

// tableSelect is the re-grouping node GroupTable adds, shared by every
// aggregation of the GroupedTable.
type tableSelect[K any] struct {
	node       *nodeDef
	name       string // the user's name: it names the repartition topic, shared by the aggregations
	partitions int32
	repart     *nodeDef // the shared repartition source, when named
	// ks tells the select node whether the old and new entries fall in
	// the same group (equal key bytes): the key serde of the first
	// aggregation built, read when tasks start.
	ks serde.Serde[K]
}

// GroupTable re-groups the table t by a new key: selector maps each entry
// to its group's key and the value the group aggregates. ok false means
// the entry belongs to no group (Kafka Streams' mapper returning a null
// key or value): a new value that maps to no group is dropped and counted
// under processor.MetricDroppedNull; a previous value that mapped to no
// group has nothing to subtract. A nil key (of an interface type) counts
// as no group too.
//
// The previous value of each entry is kept in a store beside the node,
// "<node>-prior", with a changelog (Kafka Streams reads it from the
// table's own store): selector is applied to it again on the next update
// of the entry, so it must be deterministic. When t is the table of a
// windowed or session aggregation, whose windows close and are then never
// updated or deleted again, the previous values of windows that ended
// more than twice the window's close delay (grace, or gap and grace)
// before the largest timestamp the node has seen are dropped, so that the
// store stays as small as the open windows; an index of them by window
// end, "<node>-prior-ends", is kept beside it.
//
// Options: Named names the node and the repartition topic
// ("<application id>-<name>-repartition", shared by the aggregations of
// the GroupedTable; without it each aggregation has its own, named after
// its store); Partitions sets that topic's partition count.
func GroupTable[K, V, KR, VR any](t Table[K, V], selector func(K, V) (KR, VR, bool), opts ...Option) GroupedTable[KR, VR] {
	b := t.b
	cfg := newConfig(opts)
	sel := &tableSelect[KR]{name: cfg.name, partitions: cfg.partitions}
	if cfg.partitions < 0 {
		b.failf("GroupTable: negative partition count %d", cfg.partitions)
	}
	if selector == nil {
		b.failf("GroupTable: nil selector")
	}
	var prior, ends string // set once the node has its name; read when tasks start
	ks, vs := t.ks, t.vs
	_, windows := any(*new(K)).(windowEnder)
	windows = windows && t.windowed
	keep := 2 * t.closeDelay.Milliseconds()
	n := b.addNode(&nodeDef{
		kind: processor.KindProcessor,
		newProc: func() processor.Processor[any, any, any, any] {
			return &tableSelectProc[K, V, KR, VR]{store: prior, ends: ends, keep: keep, ks: ks, vs: vs, selector: selector, sel: sel}
		},
	}, "KTABLE-SELECT", config{name: cfg.name}, t.node)
	prior = n.name + "-prior"
	if windows {
		ends = prior + "-ends"
		b.addStore(statestore.Spec{Name: ends, Kind: statestore.KindKeyValue, Logged: true}, n)
		if sd, ok := b.stores[ends]; ok {
			sd.companion = true
		}
	}
	sel.node = n
	if ks == nil || vs == nil {
		b.failf("GroupTable %q: no serde for %s or %s; set them on the table with WithKeySerde and WithValueSerde", n.name, typeName[K](), typeName[V]())
	}
	b.addStore(statestore.Spec{Name: prior, Kind: statestore.KindKeyValue, Logged: true}, n)
	if sd, ok := b.stores[prior]; ok {
		sd.companion = true
	}
	return GroupedTable[KR, VR]{b: b, sel: sel, ks: sameOrInfer[K, KR](t.ks), vs: sameOrInfer[V, VR](t.vs)}
}

// WithKeySerde sets the key serde of the repartition topic and the store.
func (g GroupedTable[K, V]) WithKeySerde(ks serde.Serde[K]) GroupedTable[K, V] {
	g.ks = ks
	return g
}

// WithValueSerde sets the value serde of the repartition topic (and of
// Reduce's store).
func (g GroupedTable[K, V]) WithValueSerde(vs serde.Serde[V]) GroupedTable[K, V] {
	g.vs = vs
	return g
}

// Count counts the entries per group: +1 for a value added to the group,
// −1 for one leaving it. A group emptied keeps the count 0, as in Kafka
// Streams.
func (g GroupedTable[K, V]) Count(opts ...Option) Table[K, int64] {
	return tableAggregate(g, "KTABLE-AGGREGATE", serde.Int64(), opts, func(_ K, c change[V], agg int64, found bool) (int64, bool) {
		if c.hasOld && found {
			agg--
		}
		if c.hasNew {
			agg, found = agg+1, true
		}
		return agg, found
	})
}

// Reduce combines the values of each group: the first value is the
// group's initial aggregate; adder folds in each value added to the group,
// subtractor takes out each value leaving it (subtract before add when an
// update stays in its group).
func (g GroupedTable[K, V]) Reduce(adder, subtractor func(agg, v V) V, opts ...Option) Table[K, V] {
	g.nilFuncs("KTABLE-REDUCE", map[string]bool{"adder": adder == nil, "subtractor": subtractor == nil})
	return tableAggregate(g, "KTABLE-REDUCE", g.vs, opts, func(_ K, c change[V], agg V, found bool) (V, bool) {
		if c.hasOld && found {
			agg = subtractor(agg, c.oldV)
		}
		if c.hasNew {
			if found {
				agg = adder(agg, c.newV)
			} else {
				agg, found = c.newV, true
			}
		}
		return agg, found
	})
}

// AggregateTable folds the values of each group of g into an aggregate of
// type VA: starting from init(), adder adds each value entering the group,
// subtractor takes out each value leaving it (subtract before add when an
// update stays in its group). vas encodes the aggregate in the store and
// its changelog. Kafka Streams' KGroupedTable.aggregate.
func AggregateTable[K, V, VA any](g GroupedTable[K, V], init func() VA, adder, subtractor func(K, V, VA) VA, vas serde.Serde[VA], opts ...Option) Table[K, VA] {
	g.nilFuncs("KTABLE-AGGREGATE", map[string]bool{"initializer": init == nil, "adder": adder == nil, "subtractor": subtractor == nil})
	return tableAggregate(g, "KTABLE-AGGREGATE", vas, opts, func(k K, c change[V], agg VA, found bool) (VA, bool) {
		if c.hasOld && found {
			agg = subtractor(k, c.oldV, agg)
		}
		if c.hasNew {
			if !found {
				agg = init()
			}
			agg, found = adder(k, c.newV, agg), true
		}
		return agg, found
	})
}

// nilFuncs reports each function of an aggregation that is nil.
func (g GroupedTable[K, V]) nilFuncs(prefix string, isNil map[string]bool) {
	reportNil(g.b, prefix, isNil)
}

// reportNil reports, in a fixed order, each of an operation's functions
// that isNil names: a nil function would panic on the first record.
func reportNil(b *Builder, prefix string, isNil map[string]bool) {
	for _, name := range []string{"initializer", "reducer", "adder", "subtractor", "merger"} {
		if isNil[name] {
			b.failf("%s: nil %s", prefix, name)
		}
	}
}

// tableStep applies one change to a group's aggregate (found: the group
// has one) and returns the new aggregate, found false when the group has
// none: a subtraction from a group without an aggregate, which Kafka
// Streams stores and forwards as a delete.
type tableStep[K, V, VA any] func(k K, c change[V], agg VA, found bool) (VA, bool)

// tableAggregate adds the repartition topic (or reuses the GroupedTable's
// named one) and the aggregation node with its store.
func tableAggregate[K, V, VA any](g GroupedTable[K, V], prefix string, vas serde.Serde[VA], opts []Option, step tableStep[K, V, VA]) Table[K, VA] {
	b := g.b
	cfg := newConfig(opts)
	if g.ks == nil {
		b.failf("%s: no key serde for %s; set one with WithKeySerde", prefix, typeName[K]())
	}
	if g.vs == nil {
		b.failf("%s: no value serde for %s; set one with WithValueSerde", prefix, typeName[V]())
	}
	if vas == nil {
		b.failf("%s: no serde for the aggregate type %s", prefix, typeName[VA]())
	}
	store := b.storeName(cfg, "KTABLE-AGGREGATE")
	if g.sel.ks == nil {
		g.sel.ks = g.ks
	}
	src := g.sel.repart
	if src == nil {
		src = g.repartition(store, cfg.name)
		if g.sel.name != "" {
			g.sel.repart = src
		}
	}
	ks := g.ks
	n := b.addNode(&nodeDef{
		kind: processor.KindProcessor,
		newProc: func() processor.Processor[any, any, any, any] {
			return &tableAggregateProc[K, V, VA]{store: store, timestamps: store + "-timestamps", ks: ks, vas: vas, step: step}
		},
	}, prefix, config{name: cfg.name}, src)
	b.addStore(statestore.Spec{Name: store, Kind: statestore.KindKeyValue, Logged: true}, n)
	b.timestampsOf(store)
	queryable(b, store, g.ks, vas)
	return Table[K, VA]{b: b, node: n, ks: g.ks, vs: vas, store: store}
}

// repartition adds the sink writing the select node's changes to the
// repartition topic, "<group name or store>-repartition", and the source
// reading them back; aggName, when given, names both nodes.
func (g GroupedTable[K, V]) repartition(store, aggName string) *nodeDef {
	b := g.b
	base := g.sel.name
	if base == "" {
		base = store
	}
	topic := processor.TopicRef{Name: base + "-repartition", Internal: true}
	sinkCfg, srcCfg := config{}, config{}
	if aggName != "" {
		sinkCfg.name, srcCfg.name = aggName+"-sink", aggName+"-source"
	}
	sink := b.addNode(&nodeDef{kind: processor.KindSink, topic: topic, partitions: g.sel.partitions}, "KSTREAM-SINK", sinkCfg, g.sel.node)
	src := b.addSource(topic, nil, srcCfg, "KSTREAM-SOURCE")
	if g.ks != nil && g.vs != nil {
		cs := changeSerde[V]{inner: g.vs}
		sink.encode = encoder[K, change[V]](g.ks, cs)
		src.decode = decoder[K, change[V]](g.ks, cs)
	}
	return src
}

// tableSelectProc maps each table update to the changes of the groups it
// leaves and enters. Its store holds each entry's previous value: the
// table forwards only the new one. Writing it in the same task, and so in
// the same transaction under exactly-once, as the changes it causes keeps
// the two consistent through a crash: after a restore the store holds the
// value the last committed update left.
//
// For a table of windows, the store "ends" indexes the entries by window
// end (timeKey), and entries of windows ending before seen − keep are
// dropped. Such a window is closed for the aggregation upstream, which
// judges lateness by a time at least seen (its results are stamped with
// times it has seen): a record could still update it only while its end
// is at least that time − grace (time windows) or, merging it into a new
// session, − 2·gap − grace, both within keep = 2 × close delay. seen is
// kept in memory: after a restart expiry waits for the next records,
// which is only later, never wrong.
type tableSelectProc[K, V, KR, VR any] struct {
	store    string
	ends     string // "" unless the table's keys are windows
	keep     int64  // ms
	ks       serde.Serde[K]
	vs       serde.Serde[V]
	selector func(K, V) (KR, VR, bool)
	sel      *tableSelect[KR]
	kv       *statestore.KV[K, V]
	ekv      statestore.KeyValueStore
	seen     int64 // the largest timestamp seen; -1 before the first
	expired  int64 // windows ending before this are gone from the store
}

func (p *tableSelectProc[K, V, KR, VR]) Init(ctx processor.Context[any, any]) error {
	kv, err := processor.KeyValueStore(ctx, p.store, p.ks, p.vs)
	p.kv, p.seen, p.expired = kv, -1, math.MinInt64
	if err != nil || p.ends == "" {
		return err
	}
	ekv, err := kvStore(ctx, p.ends)
	if err != nil {
		return err
	}
	p.ekv = ekv
	return nil
}

// index adds (add) or removes the ends entry of window key k.
func (p *tableSelectProc[K, V, KR, VR]) index(k K, add bool) error {
	if p.ekv == nil {
		return nil
	}
	kb, err := p.ks.Serialize(p.store, k)
	if err != nil {
		return fmt.Errorf("topology: GroupTable: serialize key: %w", err)
	}
	tk := timeKey(any(k).(windowEnder).windowEnd(), kb)
	if add {
		err = p.ekv.Put(tk, []byte{1})
	} else {
		err = p.ekv.Delete(tk)
	}
	if err != nil {
		return fmt.Errorf("topology: GroupTable: %w", err)
	}
	return nil
}

// expire drops the entries of windows ending before seen − keep.
func (p *tableSelectProc[K, V, KR, VR]) expire(ts int64) error {
	if p.ekv == nil {
		return nil
	}
	p.seen = max(p.seen, ts)
	cutoff := p.seen - p.keep
	if cutoff <= p.expired {
		return nil
	}
	p.expired = cutoff
	it, err := p.ekv.PrefixScan([]byte{'t'})
	if err != nil {
		return fmt.Errorf("topology: GroupTable: %w", err)
	}
	var gone [][]byte
	for it.Next() {
		if len(it.Key()) < 9 {
			continue
		}
		end, _ := splitTimeKey(it.Key())
		if end >= cutoff {
			break
		}
		gone = append(gone, append([]byte(nil), it.Key()...))
	}
	if err := closeIter(it); err != nil {
		return fmt.Errorf("topology: GroupTable: %w", err)
	}
	for _, tk := range gone {
		_, kb := splitTimeKey(tk)
		if err := p.kv.Store().Delete(kb); err != nil {
			return fmt.Errorf("topology: GroupTable: %w", err)
		}
		if err := p.ekv.Delete(tk); err != nil {
			return fmt.Errorf("topology: GroupTable: %w", err)
		}
	}
	return nil
}

func (p *tableSelectProc[K, V, KR, VR]) Process(ctx processor.Context[any, any], r processor.Record[any, any]) error {
	k, ok, err := tableKey[K](ctx, r)
	if !ok {
		return err
	}
	if err := p.expire(r.Timestamp.UnixMilli()); err != nil {
		return err
	}
	old, hadOld, err := p.kv.Get(k)
	if err != nil {
		return fmt.Errorf("topology: GroupTable: %w", err)
	}
	var (
		newKey, oldKey KR
		newVal, oldVal VR
		hasNew, hasOld bool
	)
	if r.Value != nil {
		v, err := processor.As[V](r.Value)
		if err != nil {
			return err
		}
		if err := p.kv.Put(k, v); err != nil {
			return fmt.Errorf("topology: GroupTable: %w", err)
		}
		// Indexed on every update, not only the first, so that an entry
		// kept without its index (state of a version without it) gets one.
		if err := p.index(k, true); err != nil {
			return err
		}
		newKey, newVal, hasNew = p.group(k, v)
		if !hasNew {
			ctx.Count(processor.MetricDroppedNull, 1)
		}
	} else if hadOld {
		if err := p.kv.Delete(k); err != nil {
			return fmt.Errorf("topology: GroupTable: %w", err)
		}
		if err := p.index(k, false); err != nil {
			return err
		}
	}
	if hadOld {
		oldKey, oldVal, hasOld = p.group(k, old)
	}
	if hasOld && hasNew {
		same, err := p.sameKey(oldKey, newKey)
		if err != nil {
			return err
		}
		if same {
			r.Key, r.Value = newKey, change[VR]{newV: newVal, oldV: oldVal, hasNew: true, hasOld: true}
			return ctx.Forward(r)
		}
	}
	// The old group first, as Kafka Streams forwards them.
	if hasOld {
		out := r
		out.Key, out.Value = oldKey, change[VR]{oldV: oldVal, hasOld: true}
		if err := ctx.Forward(out); err != nil {
			return err
		}
	}
	if hasNew {
		r.Key, r.Value = newKey, change[VR]{newV: newVal, hasNew: true}
		return ctx.Forward(r)
	}
	return nil
}

// group applies the selector; a nil key or value is no group.
func (p *tableSelectProc[K, V, KR, VR]) group(k K, v V) (KR, VR, bool) {
	kr, vr, ok := p.selector(k, v)
	return kr, vr, ok && any(kr) != nil && any(vr) != nil
}

// sameKey reports whether two group keys are one: their bytes are equal,
// as the repartition topic partitions and the store keys them.
func (p *tableSelectProc[K, V, KR, VR]) sameKey(a, b KR) (bool, error) {
	if p.sel.ks == nil { // no aggregation reads the groups
		return false, nil
	}
	ab, err := p.sel.ks.Serialize(p.store, a)
	if err != nil {
		return false, fmt.Errorf("topology: GroupTable: serialize key: %w", err)
	}
	bb, err := p.sel.ks.Serialize(p.store, b)
	if err != nil {
		return false, fmt.Errorf("topology: GroupTable: serialize key: %w", err)
	}
	return bytes.Equal(ab, bb), nil
}

// tableAggregateProc applies each change to its group's aggregate and
// forwards the new aggregate, stamped as Kafka Streams' KTableAggregate
// and KTableReduce stamp it: the change's timestamp when the group had no
// aggregate, else the larger of it and the aggregate's.
type tableAggregateProc[K, V, VA any] struct {
	store      string
	timestamps string
	ks         serde.Serde[K]
	vas        serde.Serde[VA]
	step       tableStep[K, V, VA]
	kv         *statestore.KV[K, VA]
	ts         *statestore.KV[K, int64]
}

func (p *tableAggregateProc[K, V, VA]) Init(ctx processor.Context[any, any]) error {
	kv, err := processor.KeyValueStore(ctx, p.store, p.ks, p.vas)
	p.kv = kv
	if err == nil {
		p.ts, err = processor.KeyValueStore(ctx, p.timestamps, p.ks, serde.Int64())
	}
	return err
}

func (p *tableAggregateProc[K, V, VA]) Process(ctx processor.Context[any, any], r processor.Record[any, any]) error {
	if dropNull(ctx, r.Key == nil || r.Value == nil) {
		return nil
	}
	k, err := processor.As[K](r.Key)
	if err != nil {
		return err
	}
	c, err := processor.As[change[V]](r.Value)
	if err != nil {
		return err
	}
	agg, found, err := p.kv.Get(k)
	if err != nil {
		return fmt.Errorf("topology: table aggregate %q: %w", p.store, err)
	}
	prev, _, err := p.ts.Get(k)
	if err != nil {
		return fmt.Errorf("topology: table aggregate %q: %w", p.store, err)
	}
	ts := stamp(r.Timestamp.UnixMilli(), prev, found)
	agg, ok := p.step(k, c, agg, found)
	if !ok {
		if err := p.kv.Delete(k); err != nil {
			return fmt.Errorf("topology: table aggregate %q: %w", p.store, err)
		}
		if err := p.ts.Delete(k); err != nil {
			return fmt.Errorf("topology: table aggregate %q: %w", p.store, err)
		}
		r.Value = nil
		return ctx.Forward(r)
	}
	if err := p.kv.Put(k, agg); err != nil {
		return fmt.Errorf("topology: table aggregate %q: %w", p.store, err)
	}
	if err := p.ts.Put(k, ts); err != nil {
		return fmt.Errorf("topology: table aggregate %q: %w", p.store, err)
	}
	r.Value = agg
	r.Timestamp = time.UnixMilli(ts)
	return ctx.Forward(r)
}
