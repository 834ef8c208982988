package topology

import (
	"fmt"
	"time"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/statestore"
)

// Table is a changelog stream seen as a table: the latest value per key, like
// Kafka Streams' KTable. Each update flows downstream as a record with the
// new value; a nil value (a tombstone) deletes the key.
//
// A materialized table keeps its values in a state store with a changelog
// topic; it can be joined and queried. Tables read with NewTable and the
// results of aggregations are materialized; Filter and MapTableValues results
// are materialized when given Materialized(name).
type Table[K, V any] struct {
	b     *Builder
	node  *nodeDef
	ks    serde.Serde[K]
	vs    serde.Serde[V]
	store string // "" when not materialized
	// windowed is set on the tables of windowed aggregations; closeDelay
	// is then how long after a window's end, in stream time, the window
	// closes: its grace, or gap + grace for sessions (UntilWindowCloses).
	windowed   bool
	closeDelay time.Duration
	// history is the history retention of a versioned table's store;
	// versioned says the store is versioned (see Versioned), and
	// versionedUpstream that the table is one, or derives from one through
	// operations without a store of their own (Kafka Streams' "versioned
	// semantics", which its filter follows).
	history           time.Duration
	versioned         bool
	versionedUpstream bool
}

// NewTable reads topic as a table, materialized in a store named by
// Materialized(name) or generated. A record with a null value deletes its
// key; records with a null key are dropped and counted.
func NewTable[K, V any](b *Builder, topic string, ks serde.Serde[K], vs serde.Serde[V], opts ...Option) Table[K, V] {
	cfg := newConfig(opts)
	if ks == nil || vs == nil {
		b.failf("NewTable(%q): nil serde", topic)
	}
	src := b.addSource(processor.TopicRef{Name: topic}, decoder[K, V](ks, vs), config{name: cfg.name}, "KTABLE-SOURCE")
	src.timestamp = sourceTimestamp[K, V](b, cfg, fmt.Sprintf("NewTable(%q)", topic))
	t := Table[K, V]{b: b, node: src, ks: ks, vs: vs}
	if cfg.versioned != nil {
		return t.materializeVersioned(cfg.store, *cfg.versioned)
	}
	return t.materialize("KTABLE-SOURCE", cfg.store)
}

// Store returns the name of the table's store, or "" if it is not
// materialized.
func (t Table[K, V]) Store() string { return t.store }

// WithValueSerde returns the table with its value serde set.
func (t Table[K, V]) WithValueSerde(vs serde.Serde[V]) Table[K, V] {
	t.vs = vs
	return t
}

// WithKeySerde returns the table with its key serde set.
func (t Table[K, V]) WithKeySerde(ks serde.Serde[K]) Table[K, V] {
	t.ks = ks
	return t
}

// materialize adds a node that writes each update to a new store.
func (t Table[K, V]) materialize(prefix, store string) Table[K, V] {
	b := t.b
	if store == "" {
		store = b.nextName(prefix + "-STATE-STORE")
	}
	if t.ks == nil || t.vs == nil {
		b.failf("table store %q: no serde for %s or %s; set them with WithKeySerde and WithValueSerde", store, typeName[K](), typeName[V]())
	}
	ks, vs := t.ks, t.vs
	n := b.addNode(&nodeDef{
		kind: processor.KindProcessor,
		newProc: func() processor.Processor[any, any, any, any] {
			proc := &materializeProc[K, V]{store: store, ks: ks, vs: vs}
			if ts := store + "-timestamps"; b.hasStore(ts) { // the table is joined with another
				proc.timestamps = ts
			}
			return proc
		},
	}, prefix+"-MATERIALIZE", config{}, t.node)
	b.addStore(statestore.Spec{Name: store, Kind: statestore.KindKeyValue, Logged: true}, n)
	queryable(b, store, ks, vs)
	t.node, t.store = n, store
	t.versionedUpstream = false // a store of its own, not versioned
	return t
}

// materializeProc stores each table update and forwards it; when the
// table is joined with another, it also keeps each key's timestamp.
type materializeProc[K, V any] struct {
	store      string
	timestamps string // "" unless the table is joined with another
	ks         serde.Serde[K]
	vs         serde.Serde[V]
	kv         *statestore.KV[K, V]
	ts         *statestore.KV[K, int64]
}

func (p *materializeProc[K, V]) Init(ctx processor.Context[any, any]) error {
	kv, err := processor.KeyValueStore(ctx, p.store, p.ks, p.vs)
	p.kv = kv
	if err == nil && p.timestamps != "" {
		p.ts, err = processor.KeyValueStore(ctx, p.timestamps, p.ks, serde.Int64())
	}
	return err
}

func (p *materializeProc[K, V]) Process(ctx processor.Context[any, any], r processor.Record[any, any]) error {
	k, ok, err := tableKey[K](ctx, r)
	if !ok {
		return err
	}
	if r.Value == nil {
		if err := p.kv.Delete(k); err != nil {
			return fmt.Errorf("topology: table %q: %w", p.store, err)
		}
		if p.ts != nil {
			if err := p.ts.Delete(k); err != nil {
				return fmt.Errorf("topology: table %q: %w", p.store, err)
			}
		}
		return ctx.Forward(r)
	}
	v, err := processor.As[V](r.Value)
	if err != nil {
		return err
	}
	if err := p.kv.Put(k, v); err != nil {
		return fmt.Errorf("topology: table %q: %w", p.store, err)
	}
	if p.ts != nil {
		if err := p.ts.Put(k, r.Timestamp.UnixMilli()); err != nil {
			return fmt.Errorf("topology: table %q: %w", p.store, err)
		}
	}
	return ctx.Forward(r)
}

// tableKey returns a table update's key. ok is false, and err nil, for a
// null key, which table operations drop and count as Kafka Streams' table
// processors do; err is set when the key is not a K.
func tableKey[K any](ctx processor.Context[any, any], r processor.Record[any, any]) (k K, ok bool, err error) {
	if r.Key == nil {
		ctx.Count(processor.MetricDroppedNull, 1)
		return k, false, nil
	}
	k, err = processor.As[K](r.Key)
	return k, err == nil, err
}

// ToStream returns the table's updates as a stream. Deletes appear as
// records with a nil value, written as tombstones by To.
func (t Table[K, V]) ToStream(opts ...Option) Stream[K, V] {
	n := t.b.stateless("KTABLE-TOSTREAM", newConfig(opts), forwardAll, t.node)
	return Stream[K, V]{b: t.b, node: n, ks: t.ks, vs: t.vs}
}

// Filter returns a table of the entries for which pred returns true. An
// update that fails pred becomes a delete — forwarded only when the key is
// in the filtered table, as in Kafka Streams (which knows the old value):
// the filter keeps the keys it passed in a store, "<node>-present".
func (t Table[K, V]) Filter(pred func(K, V) bool, opts ...Option) Table[K, V] {
	return t.filter(pred, true, opts)
}

// FilterNot returns a table of the entries for which pred returns false.
func (t Table[K, V]) FilterNot(pred func(K, V) bool, opts ...Option) Table[K, V] {
	return t.filter(pred, false, opts)
}

func (t Table[K, V]) filter(pred func(K, V) bool, keep bool, opts []Option) Table[K, V] {
	cfg := newConfig(opts)
	if t.versionedUpstream {
		return t.filterVersioned(pred, keep, cfg)
	}
	var present string // set once the node has its name; read when tasks start
	ks := t.ks
	n := t.b.addNode(&nodeDef{
		kind: processor.KindProcessor,
		newProc: func() processor.Processor[any, any, any, any] {
			return &tableFilter[K, V]{store: present, ks: ks, pred: pred, keep: keep}
		},
	}, "KTABLE-FILTER", cfg, t.node)
	present = n.name + "-present"
	if t.ks == nil {
		t.b.failf("table filter %q: no key serde for %s; set one with WithKeySerde", n.name, typeName[K]())
	}
	t.b.addStore(statestore.Spec{Name: present, Kind: statestore.KindKeyValue, Logged: true}, n)
	if sd, ok := t.b.stores[present]; ok {
		sd.companion = true
	}
	out := Table[K, V]{b: t.b, node: n, ks: t.ks, vs: t.vs, windowed: t.windowed, closeDelay: t.closeDelay}
	if cfg.store != "" {
		out = out.materialize("KTABLE-FILTER", cfg.store)
	}
	return out
}

// tableFilter filters table updates. It remembers which keys are in the
// filtered table, so that a delete (an update failing the predicate, or a
// tombstone) is forwarded only for a key that is there.
type tableFilter[K, V any] struct {
	store string
	ks    serde.Serde[K]
	pred  func(K, V) bool
	keep  bool
	kv    *statestore.KV[K, int64]
}

func (p *tableFilter[K, V]) Init(ctx processor.Context[any, any]) error {
	kv, err := processor.KeyValueStore(ctx, p.store, p.ks, serde.Int64())
	p.kv = kv
	return err
}

func (p *tableFilter[K, V]) Process(ctx processor.Context[any, any], r processor.Record[any, any]) error {
	if dropNull(ctx, r.Key == nil) {
		return nil
	}
	tr, err := processor.Assert[K, V](r)
	if err != nil {
		return err
	}
	if r.Value != nil && p.pred(tr.Key, tr.Value) == p.keep {
		if err := p.kv.Put(tr.Key, 1); err != nil {
			return fmt.Errorf("topology: table filter: %w", err)
		}
		return ctx.Forward(r)
	}
	_, present, err := p.kv.Get(tr.Key)
	if err != nil {
		return fmt.Errorf("topology: table filter: %w", err)
	}
	if !present {
		return nil // not in the filtered table: nothing to delete
	}
	if err := p.kv.Delete(tr.Key); err != nil {
		return fmt.Errorf("topology: table filter: %w", err)
	}
	r.Value = nil
	return ctx.Forward(r)
}

// MapTableValues returns a table whose values are fn of t's values. Deletes
// stay deletes.
func MapTableValues[K, V, VR any](t Table[K, V], fn func(K, V) VR, opts ...Option) Table[K, VR] {
	cfg := newConfig(opts)
	n := t.b.stateless("KTABLE-MAPVALUES", cfg, func(ctx processor.Context[any, any], r processor.Record[any, any]) error {
		if r.Value == nil {
			return ctx.Forward(r)
		}
		tr, err := processor.Assert[K, V](r)
		if err != nil {
			return err
		}
		r.Value = fn(tr.Key, tr.Value)
		return ctx.Forward(r)
	}, t.node)
	out := Table[K, VR]{b: t.b, node: n, ks: t.ks, vs: sameOrInfer[V, VR](t.vs), windowed: t.windowed, closeDelay: t.closeDelay,
		versionedUpstream: t.versionedUpstream}
	if cfg.store != "" {
		out = out.materialize("KTABLE-MAPVALUES", cfg.store)
	}
	return out
}
