package topology

import (
	"fmt"
	"time"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/statestore"
)

// Cogrouped is several grouped streams with the same key type and values of
// different types, aggregated into one aggregate of type VA per key (Kafka
// Streams' CogroupedKStream, KIP-150). Each input folds its records into
// the shared aggregate with its own adder; there is one store, and one
// table of results.
//
// Go methods cannot take type parameters, so the inputs are added with
// functions and the aggregation is a method:
//
//	c := topology.Cogroup(clicks.GroupByKey(), func(user string, c Click, s Stats) Stats { ... })
//	c = topology.CogroupWith(c, views.GroupByKey(), func(user string, v View, s Stats) Stats { ... })
//	stats := c.Aggregate(func() Stats { return Stats{} }, statsSerde, topology.Materialized("stats"))
//
// or, windowed, c.WindowedBy(w).Aggregate(...) and
// c.SessionWindowedBy(sw).Aggregate(...). A grouped stream whose keys
// changed (GroupBy) is repartitioned first, each on its own, as by its own
// aggregations. The inputs must be co-partitioned: same key serde, same
// partition count.
//
// As in Kafka Streams, a record with a null key is dropped and counted under
// processor.MetricDroppedNull, and so is a record with a null value in the
// aggregation by key and by sliding window; time and session windows hand
// the adder V's zero value. Windowed aggregations keep one stream time per
// input, as Kafka Streams' one processor per input does: a record is late
// when its own input has seen times past its window's end plus grace. The
// inputs share one window store, and its time: tumbling and hopping windows
// are dropped by the largest window start written by any input (as Kafka
// Streams' store drops them), sliding windows by the latest input's close
// time: an input behind the others may find a window gone and start it
// again, as in Kafka Streams.
type Cogrouped[K, VA any] struct {
	b      *Builder
	inputs []cogroupInput[K, VA]
}

// cogroupInput is one grouped stream of a Cogrouped: how to reach its
// records (repartitioned when needed, once the aggregation is built) and
// its adder, with the value's type erased.
type cogroupInput[K, VA any] struct {
	input func() (*nodeDef, serde.Serde[K])
	adder func(k K, v any, agg VA) VA
}

// Cogroup starts a cogrouped aggregation with g, whose records are folded
// into the aggregate by adder.
func Cogroup[K, V, VA any](g Grouped[K, V], adder func(K, V, VA) VA) Cogrouped[K, VA] {
	return CogroupWith(Cogrouped[K, VA]{b: g.s.b}, g, adder)
}

// CogroupWith returns c with g added: g's records are folded into the same
// aggregate by adder. Each call adds an input, so a grouped stream added
// twice has each record folded twice.
func CogroupWith[K, V, VA any](c Cogrouped[K, VA], g Grouped[K, V], adder func(K, V, VA) VA) Cogrouped[K, VA] {
	if c.b == nil {
		c.b = g.s.b
	}
	switch {
	case g.s.b != c.b:
		c.b.failf("CogroupWith: grouped streams from different builders")
		return c
	case adder == nil:
		c.b.failf("CogroupWith: nil adder for %s values", typeName[V]())
		return c
	}
	in := cogroupInput[K, VA]{
		input: func() (*nodeDef, serde.Serde[K]) {
			s := g.input()
			return s.node, s.ks
		},
		// A nil value reaches the adder only from time and session
		// windows, as V's zero value.
		adder: func(k K, v any, agg VA) VA {
			tv, _ := v.(V)
			return adder(k, tv, agg)
		},
	}
	c.inputs = append(c.inputs[:len(c.inputs):len(c.inputs)], in)
	return c
}

// cogroupValue is a record value of input lane on its way to the one
// aggregation processor of a cogroup by key.
type cogroupValue struct {
	lane int
	v    any
}

// Aggregate folds the records of every input into one aggregate per key,
// starting from init(); vas encodes the aggregate in the store and its
// changelog. Each update is emitted, stamped with the largest record
// timestamp of the key, as Aggregate does for one grouped stream.
func (c Cogrouped[K, VA]) Aggregate(init func() VA, vas serde.Serde[VA], opts ...Option) Table[K, VA] {
	const prefix = "COGROUPKSTREAM-AGGREGATE"
	b := c.b
	cfg, nodes, ks := c.resolve(prefix, init == nil, opts)
	// One processor for all inputs, so that a record cache keeps one latest
	// update per key: each input's records are tagged with their lane and
	// merged before it.
	var tagged []*nodeDef
	for lane, node := range nodes {
		tagged = append(tagged, b.stateless("COGROUPKSTREAM-TAG", config{}, func(ctx processor.Context[any, any], r processor.Record[any, any]) error {
			if r.Value != nil { // a null value stays null: the aggregation drops it
				r.Value = cogroupValue{lane: lane, v: r.Value}
			}
			return ctx.Forward(r)
		}, node))
	}
	merged := b.stateless("COGROUPKSTREAM-MERGE", config{}, forwardAll, tagged...)
	g := Grouped[K, cogroupValue]{s: Stream[K, cogroupValue]{b: b, node: merged, ks: ks}}
	adders := c.adders()
	return aggregateWith(g, prefix, vas, cfgOptions(cfg), func(k K, v cogroupValue, agg VA, found bool) VA {
		if !found {
			agg = init()
		}
		return adders[v.lane](k, v.v, agg)
	})
}

// CogroupedWindowed is a Cogrouped cut into time windows (tumbling, hopping
// or sliding), ready for aggregation.
type CogroupedWindowed[K, VA any] struct {
	c Cogrouped[K, VA]
	w Windows
}

// WindowedBy cuts the cogrouped streams into time windows.
func (c Cogrouped[K, VA]) WindowedBy(w Windows) CogroupedWindowed[K, VA] {
	return CogroupedWindowed[K, VA]{c: c, w: w}
}

// Aggregate folds the records of every input into one aggregate per key
// and window, starting from init(). Each update is emitted, as Kafka
// Streams' cogroup does (it has no emit strategy); for final results only,
// suppress the table. EmitFinal is refused.
func (cw CogroupedWindowed[K, VA]) Aggregate(init func() VA, vas serde.Serde[VA], opts ...Option) Table[Windowed[K], VA] {
	const prefix = "COGROUPKSTREAM-AGGREGATE"
	c, b := cw.c, cw.c.b
	cfg, nodes, ks := c.resolve(prefix, init == nil, opts)
	if vas == nil {
		b.failf("%s: no serde for the aggregate type %s", prefix, typeName[VA]())
	}
	if err := cw.w.validate(); err != nil {
		b.failf("%s: %v", prefix, err)
	}
	store := b.storeName(cfg, prefix)
	timestamps := store + "-timestamps"
	retention := cw.w.retention()
	adders := c.adders()
	aggs := make([]*nodeDef, 0, len(nodes))
	for lane, node := range nodes {
		p := windowAgg[K, any, VA]{
			store: store, timestamps: timestamps, times: store + "-stream-time",
			lane: lane, lanes: len(nodes), w: cw.w, ks: ks, vas: vas,
			step: cogroupStep(init, adders[lane]),
		}
		n := b.addNode(&nodeDef{
			kind:    processor.KindProcessor,
			newProc: copies(p),
		}, prefix, laneConfig(cfg, lane), node)
		if lane == 0 {
			b.addStore(statestore.Spec{Name: store, Kind: statestore.KindWindow, Retention: retention, Logged: true}, n)
			b.addStore(statestore.Spec{Name: timestamps, Kind: statestore.KindWindow, Retention: retention, Logged: true}, n)
			if sd, ok := b.stores[timestamps]; ok {
				sd.companion = true
			}
			addSessionTimes(b, p.times, n)
		} else {
			b.connectStore(n, store)
			b.connectStore(n, timestamps)
			b.connectStore(n, p.times)
		}
		aggs = append(aggs, n)
	}
	queryable(b, store, ks, vas)
	return c.mergeWindowed(aggs, ks, vas, store, cfg, cw.w.grace)
}

// CogroupedSessions is a Cogrouped cut into session windows, ready for
// aggregation.
type CogroupedSessions[K, VA any] struct {
	c Cogrouped[K, VA]
	w SessionWindows
}

// SessionWindowedBy cuts the cogrouped streams into session windows.
func (c Cogrouped[K, VA]) SessionWindowedBy(w SessionWindows) CogroupedSessions[K, VA] {
	return CogroupedSessions[K, VA]{c: c, w: w}
}

// Aggregate folds the records of every input into one aggregate per key
// and session, starting from init(); merger combines the aggregates of two
// sessions a record joins. Merged sessions are deleted (a nil value is
// emitted for each) as by AggregateSessions.
func (cs CogroupedSessions[K, VA]) Aggregate(init func() VA, merger func(K, VA, VA) VA, vas serde.Serde[VA], opts ...Option) Table[Windowed[K], VA] {
	const prefix = "COGROUPKSTREAM-AGGREGATE"
	c, b := cs.c, cs.c.b
	cfg, nodes, ks := c.resolve(prefix, init == nil, opts)
	if vas == nil {
		b.failf("%s: no serde for the aggregate type %s", prefix, typeName[VA]())
	}
	if merger == nil {
		b.failf("%s: nil session merger", prefix)
	}
	if err := cs.w.validate(); err != nil {
		b.failf("%s: %v", prefix, err)
	}
	store := b.storeName(cfg, prefix)
	adders := c.adders()
	aggs := make([]*nodeDef, 0, len(nodes))
	for lane, node := range nodes {
		p := sessionAgg[K, any, VA]{store: store, times: store + "-stream-time", w: cs.w, ks: ks, vas: vas, step: cogroupStep(init, adders[lane]), merge: merger}
		n := b.addNode(&nodeDef{
			kind:    processor.KindProcessor,
			newProc: copies(p),
		}, prefix, laneConfig(cfg, lane), node)
		if lane == 0 {
			b.addStore(statestore.Spec{Name: store, Kind: statestore.KindSession, Retention: 2*cs.w.gap + cs.w.grace, Logged: true}, n)
			addSessionTimes(b, p.times, n)
		} else {
			b.connectStore(n, store)
			b.connectStore(n, p.times)
		}
		aggs = append(aggs, n)
	}
	queryable(b, store, ks, vas)
	return c.mergeWindowed(aggs, ks, vas, store, cfg, cs.w.gap+cs.w.grace)
}

// resolve reports the mistakes common to every cogrouped aggregation and
// returns the operation's config, each input's node (repartitioned when its
// keys changed) by lane, and the key serde.
func (c Cogrouped[K, VA]) resolve(prefix string, nilInit bool, opts []Option) (config, []*nodeDef, serde.Serde[K]) {
	b := c.b
	cfg := newConfig(opts)
	if nilInit {
		b.failf("%s: nil initializer", prefix)
	}
	if cfg.emitFinal {
		b.failf("%s: EmitFinal is not supported by cogrouped aggregations (as in Kafka Streams); suppress the result table instead", prefix)
	}
	var ks serde.Serde[K]
	nodes := make([]*nodeDef, len(c.inputs))
	for i, in := range c.inputs {
		node, iks := in.input()
		nodes[i] = node
		if iks == nil {
			b.failf("%s: input %d has no key serde for %s; set one with WithKeySerde", prefix, i, typeName[K]())
		} else if ks == nil {
			ks = iks
		}
	}
	return cfg, nodes, ks
}

// adders returns the inputs' adders by lane.
func (c Cogrouped[K, VA]) adders() []func(K, any, VA) VA {
	out := make([]func(K, any, VA) VA, len(c.inputs))
	for i, in := range c.inputs {
		out[i] = in.adder
	}
	return out
}

// mergeWindowed adds the node that merges the per-input windowed
// aggregation processors into one table.
func (c Cogrouped[K, VA]) mergeWindowed(aggs []*nodeDef, ks serde.Serde[K], vas serde.Serde[VA], store string, cfg config, closeDelay time.Duration) Table[Windowed[K], VA] {
	mcfg := config{}
	if cfg.name != "" {
		mcfg.name = cfg.name + "-cogroup-merge"
	}
	n := c.b.stateless("COGROUPKSTREAM-MERGE", mcfg, forwardAll, aggs...)
	var ws serde.Serde[Windowed[K]]
	if ks != nil {
		ws = WindowedSerde(ks)
	}
	return Table[Windowed[K], VA]{b: c.b, node: n, ks: ws, vs: vas, store: store, windowed: true, closeDelay: closeDelay}
}

// cogroupStep is the step of one input of a windowed cogroup.
func cogroupStep[K, VA any](init func() VA, adder func(K, any, VA) VA) step[K, any, VA] {
	return func(k K, v any, agg VA, found bool) VA {
		if !found {
			agg = init()
		}
		return adder(k, v, agg)
	}
}

// laneConfig names the aggregation processor of input lane: with Named(n),
// "n-cogroup-agg-<lane>" as Kafka Streams names it.
func laneConfig(cfg config, lane int) config {
	if cfg.name == "" {
		return config{}
	}
	return config{name: fmt.Sprintf("%s-cogroup-agg-%d", cfg.name, lane)}
}

// cfgOptions turns a config back into the options aggregateWith reads.
func cfgOptions(cfg config) []Option {
	return []Option{func(c *config) { *c = cfg }}
}
