package topology

import (
	"fmt"
	"sort"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/statestore"
)

// GlobalTable is a table every instance of the application holds whole,
// like Kafka Streams' GlobalKTable: it is read from every partition of its
// topic, outside the consumer group, and the topic itself is its changelog.
// The engines restore it completely before any task processes a record,
// then keep it current with a global reader of their own, independent of
// the tasks. Streams join it with JoinGlobal and LeftJoinGlobal by a key
// they compute from each record, without being repartitioned; the global
// table's updates never trigger output.
//
// A task reads the global store as it is at that moment: a join is not
// synchronized with the table's updates, and exactly-once does not extend
// to it (docs/semantics.md).
type GlobalTable[K, V any] struct {
	b     *Builder
	g     *globalDef
	ks    serde.Serde[K]
	vs    serde.Serde[V]
	store string
}

// globalDef is a global table as the builder knows it. It is no node of
// the builder's graph: its two nodes exist only for Describe.
type globalDef struct {
	spec   processor.GlobalStore
	codec  *processor.StoreCodec
	before int // the number of builder nodes added before it (Describe's order)
}

// NewGlobalTable reads topic as a global table, kept in a key-value store
// named by Materialized(name) or "<topic>-STATE-STORE-<n>", as Kafka
// Streams names it. The store is queryable on every instance. A record
// with a null value deletes its key; a record with a null key is dropped
// and counted; a record the serdes cannot read follows the application's
// bad-record policy. A global table cannot be versioned: Build reports
// Versioned among its options, as Kafka Streams rejects a versioned store.
func NewGlobalTable[K, V any](b *Builder, topic string, ks serde.Serde[K], vs serde.Serde[V], opts ...Option) GlobalTable[K, V] {
	cfg := newConfig(opts)
	store := b.storeName(cfg, topic)
	source := cfg.name
	if source == "" {
		source = b.nextName("KSTREAM-SOURCE")
	} else {
		b.seq++
		source += "-source" // Kafka Streams' suffix for a named table source
	}
	proc := cfg.name
	if proc == "" {
		proc = b.nextName("KTABLE-SOURCE")
	} else {
		b.seq++
	}
	gt := GlobalTable[K, V]{b: b, ks: ks, vs: vs, store: store}
	if ks == nil || vs == nil {
		b.failf("NewGlobalTable(%q): nil serde", topic)
		return gt
	}
	if cfg.versioned != nil {
		// Kafka Streams rejects a versioned store for a global table;
		// ignoring the option would silently join the latest values.
		b.failf("NewGlobalTable(%q): a global table cannot be versioned", topic)
	}
	switch {
	case topic == "":
		b.failf("global table %q: empty topic name", store)
		return gt
	case b.sources[topic] != nil:
		b.failf("topic %s is already read by source %q; read it once and share the stream", topic, b.sources[topic].name)
		return gt
	case b.stores[store] != nil || b.global(store) != nil:
		b.failf("store %q declared twice", store)
		return gt
	}
	for _, name := range []string{source, proc} {
		if b.byName[name] != nil || b.globalNode(name) {
			b.failf("duplicate node name %q", name)
		}
	}
	g := &globalDef{
		spec: processor.GlobalStore{
			Spec:  statestore.Spec{Name: store, Kind: statestore.KindKeyValue},
			Topic: topic, Source: source, Processor: proc,
			Canon: canon(store, ks, vs),
		},
		codec:  storeCodec(store, ks, vs),
		before: len(b.nodes),
	}
	b.globals = append(b.globals, g)
	// A placeholder source keeps the topic read once, and counts as the
	// builder's source for Build's "no source" check.
	b.sources[topic] = &nodeDef{name: source, kind: processor.KindSource}
	gt.g = g
	return gt
}

// Store returns the name of the global table's store.
func (t GlobalTable[K, V]) Store() string { return t.store }

// global returns the global table whose store is name, or nil.
func (b *Builder) global(name string) *globalDef {
	for _, g := range b.globals {
		if g.spec.Spec.Name == name {
			return g
		}
	}
	return nil
}

// globalNode reports whether a global table uses node name.
func (b *Builder) globalNode(name string) bool {
	for _, g := range b.globals {
		if g.spec.Source == name || g.spec.Processor == name {
			return true
		}
	}
	return false
}

// canon decodes a record with ks and vs and encodes it again for store.
func canon[K, V any](store string, ks serde.Serde[K], vs serde.Serde[V]) func(string, []byte, []byte) ([]byte, []byte, error) {
	return func(topic string, kb, vb []byte) (k, v []byte, err error) {
		if kb != nil {
			dk, err := ks.Deserialize(topic, kb)
			if err != nil {
				return nil, nil, err
			}
			if k, err = ks.Serialize(store, dk); err != nil {
				return nil, nil, err
			}
		}
		if vb != nil {
			dv, err := vs.Deserialize(topic, vb)
			if err != nil {
				return nil, nil, err
			}
			if v, err = vs.Serialize(store, dv); err != nil {
				return nil, nil, err
			}
		}
		return k, v, nil
	}
}

// JoinGlobal joins each record of s with the global table's current value
// for the key keyMapper computes from the record (an inner join: a record
// whose mapped key is not in the table is dropped), like Kafka Streams'
// KStream.join(GlobalKTable, KeyValueMapper, ValueJoiner). The result keeps
// the record's key and timestamp; s is not repartitioned.
//
// keyMapper's ok false is Kafka Streams' null mapped key: the record is
// dropped and counted under processor.MetricDroppedNull, as are records
// with a null value. A record with a null key is joined like any other (the
// mapper may read the value): keyMapper gets K's zero value.
func JoinGlobal[K, V, KG, VG, VR any](s Stream[K, V], g GlobalTable[KG, VG], keyMapper func(K, V) (kg KG, ok bool), joiner func(K, V, VG) VR, opts ...Option) Stream[K, VR] {
	return globalJoin(s, g, keyMapper, false, opts, func(k K, v V, vg VG, found bool) (VR, bool) {
		if !found {
			var zero VR
			return zero, false
		}
		return joiner(k, v, vg), true
	})
}

// LeftJoinGlobal joins each record of s with the global table's current
// value for the key keyMapper computes, like Kafka Streams'
// KStream.leftJoin(GlobalKTable, ...): found is false, and vg the zero
// value, when the key is not in the table.
//
// Null mapped keys follow Kafka Streams 4.4 (KIP-962): a record whose
// mapped key is null (keyMapper's ok false) is joined with found false; a
// record with a null value is dropped and counted under
// processor.MetricDroppedNull. Records with a null key are joined like any
// other, keyMapper getting K's zero value.
func LeftJoinGlobal[K, V, KG, VG, VR any](s Stream[K, V], g GlobalTable[KG, VG], keyMapper func(K, V) (kg KG, ok bool), joiner func(k K, v V, vg VG, found bool) VR, opts ...Option) Stream[K, VR] {
	return globalJoin(s, g, keyMapper, true, opts, func(k K, v V, vg VG, found bool) (VR, bool) {
		return joiner(k, v, vg, found), true
	})
}

func globalJoin[K, V, KG, VG, VR any](s Stream[K, V], g GlobalTable[KG, VG], keyMapper func(K, V) (KG, bool), left bool, opts []Option, join func(K, V, VG, bool) (VR, bool)) Stream[K, VR] {
	b := s.b
	cfg := newConfig(opts)
	if g.b != b {
		b.failf("global join: stream and global table from different builders")
		return Stream[K, VR]{b: b, node: s.node}
	}
	if keyMapper == nil {
		b.failf("global join with %q: nil key mapper", g.store)
	}
	store, ks, vs := g.store, g.ks, g.vs
	// Kafka Streams names both global joins KSTREAM-LEFTJOIN.
	n := b.addNode(&nodeDef{
		kind: processor.KindProcessor,
		newProc: func() processor.Processor[any, any, any, any] {
			return &globalJoinProc[K, V, KG, VG, VR]{store: store, ks: ks, vs: vs, mapper: keyMapper, left: left, join: join}
		},
	}, "KSTREAM-LEFTJOIN", cfg, s.node)
	if g.g != nil {
		n.stores = append(n.stores, store)
	}
	return Stream[K, VR]{b: b, node: n, ks: s.ks, vs: inferSerde[VR](), rekeyed: s.rekeyed}
}

// globalJoinProc is Kafka Streams' KStreamKTableJoinProcessor as a global
// join uses it: the lookup key is the mapper's, not the record's.
type globalJoinProc[K, V, KG, VG, VR any] struct {
	store  string
	ks     serde.Serde[KG]
	vs     serde.Serde[VG]
	mapper func(K, V) (KG, bool)
	left   bool
	join   func(K, V, VG, bool) (VR, bool)
	table  *statestore.KV[KG, VG]
}

func (p *globalJoinProc[K, V, KG, VG, VR]) Init(ctx processor.Context[any, any]) error {
	kv, err := processor.KeyValueStore(ctx, p.store, p.ks, p.vs)
	p.table = kv
	return err
}

func (p *globalJoinProc[K, V, KG, VG, VR]) Process(ctx processor.Context[any, any], r processor.Record[any, any]) error {
	if dropNull(ctx, r.Value == nil) {
		return nil
	}
	tr, err := processor.Assert[K, V](r)
	if err != nil {
		return err
	}
	kg, ok := p.mapper(tr.Key, tr.Value)
	if dropNull(ctx, !ok && !p.left) {
		return nil
	}
	var vg VG
	found := false
	if ok {
		if vg, found, err = p.table.Get(kg); err != nil {
			return fmt.Errorf("topology: join with global table %q: %w", p.store, err)
		}
	}
	out, emit := p.join(tr.Key, tr.Value, vg, found)
	return forwardJoined(ctx, r, out, emit)
}

// compileGlobals adds the global stores, and their query codecs, to g.
func (b *Builder) compileGlobals(g *processor.Graph) {
	for _, gd := range b.globals {
		g.Globals = append(g.Globals, gd.spec)
		if gd.codec != nil {
			if g.StoreCodecs == nil {
				g.StoreCodecs = map[string]processor.StoreCodec{}
			}
			g.StoreCodecs[gd.spec.Spec.Name] = *gd.codec
		}
	}
}

// describeItem is one entry of Describe: a sub-topology, or a global store
// (global >= 0).
type describeItem struct {
	sub, global int
}

// describeOrder numbers sub-topologies and global stores together as Kafka
// Streams does: by the order of their first node in the program.
func (b *Builder) describeOrder(g *processor.Graph) []describeItem {
	pos := make(map[string]int, len(b.nodes))
	for i, n := range b.nodes {
		pos[n.name] = i
	}
	type keyed struct {
		key  int
		item describeItem
	}
	var all []keyed
	for i, st := range g.Subtopologies {
		all = append(all, keyed{2*pos[st.Nodes[0].Name] + 1, describeItem{sub: i, global: -1}})
	}
	for i, gd := range b.globals {
		all = append(all, keyed{2 * gd.before, describeItem{global: i}})
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].key < all[j].key })
	out := make([]describeItem, len(all))
	for i, k := range all {
		out[i] = k.item
	}
	return out
}
