package topology

import (
	"fmt"
	"time"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/statestore"
)

// Grouped is a stream grouped by key, ready for aggregation (Kafka Streams'
// KGroupedStream). Aggregations keep one value per key in a state store
// with a changelog topic, and emit the new value on every update as a Table.
//
// Records with a null key or value are dropped by aggregations and counted
// under processor.MetricDroppedNull.
type Grouped[K, V any] struct {
	s   Stream[K, V]
	cfg config
}

// GroupBy groups the stream by a new key computed from each record. The
// stream is repartitioned on the new key before aggregation.
func GroupBy[K, V, KR any](s Stream[K, V], fn func(K, V) KR, opts ...Option) Grouped[KR, V] {
	cfg := newConfig(opts)
	keyed := SelectKey(s, fn)
	return Grouped[KR, V]{s: keyed, cfg: config{name: cfg.name, partitions: cfg.partitions}}
}

// WithKeySerde sets the key serde used by the repartition topic and store.
func (g Grouped[K, V]) WithKeySerde(ks serde.Serde[K]) Grouped[K, V] {
	g.s = g.s.WithKeySerde(ks)
	return g
}

// WithValueSerde sets the value serde used by the repartition topic.
func (g Grouped[K, V]) WithValueSerde(vs serde.Serde[V]) Grouped[K, V] {
	g.s = g.s.WithValueSerde(vs)
	return g
}

// input returns the stream to aggregate, repartitioned if needed.
func (g Grouped[K, V]) input() Stream[K, V] {
	if !g.s.rekeyed {
		return g.s
	}
	var opts []Option
	if g.cfg.name != "" {
		opts = append(opts, Named(g.cfg.name))
	}
	if g.cfg.partitions != 0 {
		opts = append(opts, Partitions(g.cfg.partitions))
	}
	return g.s.Repartition(opts...)
}

// Count counts the records per key.
func (g Grouped[K, V]) Count(opts ...Option) Table[K, int64] {
	return aggregate(g, "KSTREAM-COUNT", func() int64 { return 0 },
		func(_ K, _ V, n int64) int64 { return n + 1 }, serde.Int64(), opts)
}

// Reduce combines the values of each key: the first value is the initial
// aggregate, each later one is folded in with fn(aggregate, value).
func (g Grouped[K, V]) Reduce(fn func(agg, v V) V, opts ...Option) Table[K, V] {
	return reduce(g, fn, opts)
}

// Aggregate folds the values of each key into an aggregate of type VA,
// starting from init() and applying adder for each record. vas encodes the
// aggregate in the store and its changelog.
func Aggregate[K, V, VA any](g Grouped[K, V], init func() VA, adder func(K, V, VA) VA, vas serde.Serde[VA], opts ...Option) Table[K, VA] {
	return aggregate(g, "KSTREAM-AGGREGATE", init, adder, vas, opts)
}

func reduce[K, V any](g Grouped[K, V], fn func(agg, v V) V, opts []Option) Table[K, V] {
	reportNil(g.s.b, "KSTREAM-REDUCE", map[string]bool{"reducer": fn == nil})
	return aggregateWith(g, "KSTREAM-REDUCE", g.s.vs, opts, func(_ K, v V, agg V, found bool) V {
		if !found {
			return v
		}
		return fn(agg, v)
	})
}

func aggregate[K, V, VA any](g Grouped[K, V], prefix string, init func() VA, adder func(K, V, VA) VA, vas serde.Serde[VA], opts []Option) Table[K, VA] {
	reportNil(g.s.b, prefix, map[string]bool{"initializer": init == nil, "adder": adder == nil})
	return aggregateWith(g, prefix, vas, opts, func(k K, v V, agg VA, found bool) VA {
		if !found {
			agg = init()
		}
		return adder(k, v, agg)
	})
}

// checkAggregateSerdes reports an aggregation without a key serde or an
// aggregate serde: its store and changelog need both.
func checkAggregateSerdes[K, VA any](b *Builder, prefix string, ks serde.Serde[K], vas serde.Serde[VA]) {
	if ks == nil {
		b.failf("%s: no key serde for %s; set one with WithKeySerde", prefix, typeName[K]())
	}
	if vas == nil {
		b.failf("%s: no serde for the aggregate type %s", prefix, typeName[VA]())
	}
}

// aggregateWith adds the aggregation node and its store.
func aggregateWith[K, V, VA any](g Grouped[K, V], prefix string, vas serde.Serde[VA], opts []Option,
	step func(k K, v V, agg VA, found bool) VA) Table[K, VA] {
	b := g.s.b
	cfg := newConfig(opts)
	in := g.input()
	checkAggregateSerdes(b, prefix, in.ks, vas)
	store := b.storeName(cfg, prefix)
	ks := in.ks
	n := b.addNode(&nodeDef{
		kind: processor.KindProcessor,
		newProc: func() processor.Processor[any, any, any, any] {
			return &aggregateProc[K, V, VA]{store: store, timestamps: store + "-timestamps", ks: ks, vas: vas, step: step}
		},
	}, prefix, cfg, in.node)
	b.addStore(statestore.Spec{Name: store, Kind: statestore.KindKeyValue, Logged: true}, n)
	b.timestampsOf(store)
	queryable(b, store, in.ks, vas)
	return Table[K, VA]{b: b, node: n, ks: in.ks, vs: vas, store: store}
}

// aggregateProc keeps one aggregate per key in a key-value store, and
// beside it the largest record timestamp of the key: as in Kafka Streams,
// each update is stamped with it.
//
// With a record cache (processor.CacheBudgetOf) the stores are still
// written on every update — joins and lookups that read them see each
// one, and the changelog is coalesced per commit anyway — but the update
// is put in the cache instead of forwarded: only the latest of each key
// goes downstream, on eviction or at the flush before the commit. A cached
// key also skips the two store reads.
type aggregateProc[K, V, VA any] struct {
	store      string
	timestamps string
	ks         serde.Serde[K]
	vas        serde.Serde[VA]
	step       func(k K, v V, agg VA, found bool) VA
	kv         *statestore.KV[K, VA]
	ts         *statestore.KV[K, int64]
	cache      *statestore.Cache[cachedUpdate[VA]]
}

// cachedUpdate is a key's latest update in the record cache: the record to
// forward (its value is agg, its timestamp the key's).
type cachedUpdate[VA any] struct {
	agg VA
	rec processor.Record[any, any]
}

func (p *aggregateProc[K, V, VA]) Init(ctx processor.Context[any, any]) error {
	kv, err := processor.KeyValueStore(ctx, p.store, p.ks, p.vas)
	p.kv = kv
	if err == nil {
		p.ts, err = processor.KeyValueStore(ctx, p.timestamps, p.ks, serde.Int64())
	}
	if b := processor.CacheBudgetOf(ctx); b != nil && err == nil {
		p.cache, err = statestore.NewCache(b, func(_ []byte, u cachedUpdate[VA]) error {
			return ctx.Forward(u.rec)
		})
	}
	return err
}

func (p *aggregateProc[K, V, VA]) Process(ctx processor.Context[any, any], r processor.Record[any, any]) error {
	if dropNull(ctx, r.Key == nil || r.Value == nil) {
		return nil
	}
	tr, err := processor.Assert[K, V](r)
	if err != nil {
		return err
	}
	if p.cache != nil {
		return p.processCached(tr, r)
	}
	agg, found, err := p.kv.Get(tr.Key)
	if err != nil {
		return fmt.Errorf("topology: aggregate %q: %w", p.store, err)
	}
	prev, _, err := p.ts.Get(tr.Key)
	if err != nil {
		return fmt.Errorf("topology: aggregate %q: %w", p.store, err)
	}
	ts := stamp(r.Timestamp.UnixMilli(), prev, found)
	agg = p.step(tr.Key, tr.Value, agg, found)
	if err := p.kv.Put(tr.Key, agg); err != nil {
		return fmt.Errorf("topology: aggregate %q: %w", p.store, err)
	}
	if err := p.ts.Put(tr.Key, ts); err != nil {
		return fmt.Errorf("topology: aggregate %q: %w", p.store, err)
	}
	r.Value = agg
	r.Timestamp = time.UnixMilli(ts)
	return ctx.Forward(r)
}

// processCached is Process with a record cache: the key is encoded once
// for the cache and both stores, and the update is cached, not forwarded.
func (p *aggregateProc[K, V, VA]) processCached(tr processor.Record[K, V], r processor.Record[any, any]) error {
	kb, err := p.ks.Serialize(p.store, tr.Key)
	if err != nil {
		return fmt.Errorf("topology: aggregate %q: serialize key: %w", p.store, err)
	}
	var (
		agg   VA
		prev  int64
		found bool
	)
	if u, ok := p.cache.Get(kb); ok {
		agg, prev, found = u.agg, u.rec.Timestamp.UnixMilli(), true
	} else {
		if agg, found, err = p.kv.Get(tr.Key); err == nil {
			prev, _, err = p.ts.Get(tr.Key)
		}
		if err != nil {
			return fmt.Errorf("topology: aggregate %q: %w", p.store, err)
		}
	}
	ts := stamp(r.Timestamp.UnixMilli(), prev, found)
	agg = p.step(tr.Key, tr.Value, agg, found)
	vb, err := p.vas.Serialize(p.store, agg)
	if err != nil {
		return fmt.Errorf("topology: aggregate %q: serialize value: %w", p.store, err)
	}
	if err := p.kv.Store().Put(kb, vb); err != nil {
		return fmt.Errorf("topology: aggregate %q: %w", p.store, err)
	}
	if err := p.ts.Put(tr.Key, ts); err != nil {
		return fmt.Errorf("topology: aggregate %q: %w", p.store, err)
	}
	r.Value = agg
	r.Timestamp = time.UnixMilli(ts)
	return p.cache.Put(kb, cachedUpdate[VA]{agg: agg, rec: r}, len(vb)+8)
}

// FlushCache forwards the cached updates (processor.CacheFlusher).
func (p *aggregateProc[K, V, VA]) FlushCache() error {
	if p.cache == nil {
		return nil
	}
	return p.cache.Flush()
}

// DiscardCache drops the cached updates (processor.CacheFlusher).
func (p *aggregateProc[K, V, VA]) DiscardCache() {
	if p.cache != nil {
		p.cache.Discard()
	}
}
