package topology

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sort"
	"time"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/statestore"
)

// WindowedGrouped is a grouped stream cut into time windows, ready for
// aggregation. Results are tables keyed by Windowed[K]. By default each
// update is emitted; with the EmitFinal option, one result per window is
// emitted when the window closes.
type WindowedGrouped[K, V any] struct {
	g Grouped[K, V]
	w Windows
}

// WindowedBy cuts the grouped stream into time windows. (It is a function,
// not a method of Grouped: a method would let Go instantiate
// Windowed[Windowed[...]] without end.)
func WindowedBy[K, V any](g Grouped[K, V], w Windows) WindowedGrouped[K, V] {
	return WindowedGrouped[K, V]{g: g, w: w}
}

// Count counts the records per key and window.
func (wg WindowedGrouped[K, V]) Count(opts ...Option) Table[Windowed[K], int64] {
	return windowAggregate(wg, "KSTREAM-WINDOWED-COUNT", serde.Int64(), opts, countStep[K, V])
}

// Reduce combines the values of each key and window with fn.
func (wg WindowedGrouped[K, V]) Reduce(fn func(agg, v V) V, opts ...Option) Table[Windowed[K], V] {
	reportNil(wg.g.s.b, "KSTREAM-WINDOWED-REDUCE", map[string]bool{"reducer": fn == nil})
	return windowAggregate(wg, "KSTREAM-WINDOWED-REDUCE", wg.g.s.vs, opts, reduceStep[K](fn))
}

// AggregateWindowed folds the values of each key and window into an
// aggregate, starting from init().
func AggregateWindowed[K, V, VA any](wg WindowedGrouped[K, V], init func() VA, adder func(K, V, VA) VA, vas serde.Serde[VA], opts ...Option) Table[Windowed[K], VA] {
	reportNil(wg.g.s.b, "KSTREAM-WINDOWED-AGGREGATE", map[string]bool{"initializer": init == nil, "adder": adder == nil})
	return windowAggregate(wg, "KSTREAM-WINDOWED-AGGREGATE", vas, opts, aggregateStep(init, adder))
}

// step folds one value into an aggregate; found says whether agg exists.
type step[K, V, VA any] func(k K, v V, agg VA, found bool) VA

func countStep[K, V any](_ K, _ V, n int64, _ bool) int64 { return n + 1 }

func reduceStep[K, V any](fn func(agg, v V) V) step[K, V, V] {
	return func(_ K, v V, agg V, found bool) V {
		if !found {
			return v
		}
		return fn(agg, v)
	}
}

func aggregateStep[K, V, VA any](init func() VA, adder func(K, V, VA) VA) step[K, V, VA] {
	return func(k K, v V, agg VA, found bool) VA {
		if !found {
			agg = init()
		}
		return adder(k, v, agg)
	}
}

// windowAggregate adds a windowed aggregation node and its stores: the
// aggregates, and beside them the largest record timestamp of each window
// (Kafka Streams keeps both in one timestamped store; weir keeps the
// aggregate store's values as they are, for queries, and adds
// "<store>-timestamps").
func windowAggregate[K, V, VA any](wg WindowedGrouped[K, V], prefix string, vas serde.Serde[VA], opts []Option, st step[K, V, VA]) Table[Windowed[K], VA] {
	b := wg.g.s.b
	cfg := newConfig(opts)
	in := wg.g.input()
	if err := wg.w.validate(); err != nil {
		b.failf("%s: %v", prefix, err)
	}
	checkAggregateSerdes(b, prefix, in.ks, vas)
	store := b.storeName(cfg, prefix)
	p := windowAgg[K, V, VA]{
		store: store, w: wg.w, ks: in.ks, vas: vas, step: st, emitFinal: cfg.emitFinal,
		positions: store + "-emit-position", timestamps: store + "-timestamps",
		times: store + "-stream-time", lanes: 1,
	}
	n := b.addNode(&nodeDef{
		kind:    processor.KindProcessor,
		newProc: copies(p),
	}, prefix, cfg, in.node)
	retention := wg.w.retention()
	b.addStore(statestore.Spec{Name: store, Kind: statestore.KindWindow, Retention: retention, Logged: true}, n)
	b.addStore(statestore.Spec{Name: p.timestamps, Kind: statestore.KindWindow, Retention: retention, Logged: true}, n)
	if sd, ok := b.stores[p.timestamps]; ok {
		sd.companion = true
	}
	addSessionTimes(b, p.times, n)
	queryable(b, store, in.ks, vas)
	if cfg.emitFinal {
		b.addStore(statestore.Spec{Name: p.positions, Kind: statestore.KindKeyValue, Logged: true}, n)
	}
	ws := WindowedSerde(in.ks)
	if in.ks == nil {
		ws = nil
	}
	return Table[Windowed[K], VA]{b: b, node: n, ks: ws, vs: vas, store: store, windowed: true, closeDelay: wg.w.grace}
}

// windowAgg aggregates per key and time window, as Kafka Streams'
// KStreamWindowAggregate and KStreamSlidingWindowAggregate do: lateness is
// decided by the time this processor (this input lane of a cogroup) has
// seen, which windows the store still holds by the store's time (see
// windowtime.go), and each window's result is stamped with the largest
// record timestamp in it.
type windowAgg[K, V, VA any] struct {
	store, positions, timestamps string
	times                        string // the logged times: "<store>-stream-time"
	lane, lanes                  int    // this processor's input lane, of lanes (1 without cogroup)
	w                            Windows
	ks                           serde.Serde[K]
	vas                          serde.Serde[VA]
	step                         step[K, V, VA]
	emitFinal                    bool

	ws        *statestore.Windowed[K, VA]
	ts        *statestore.Windowed[K, int64] // the largest record timestamp per window
	pos       statestore.KeyValueStore       // emit-final: next window start to emit
	tkv       statestore.KeyValueStore       // the times store
	observed  int64                          // the largest timestamp this lane has seen; -1 before the first
	loaded    bool                           // observed was read from tkv
	storeTime int64                          // the largest window start written; -1 before the first
	retained  int64                          // windows starting before this are out of the store's retention
	expired   int64                          // windows starting before this are physically gone
}

var emitPositionKey = []byte("next-start")

func (p *windowAgg[K, V, VA]) Init(ctx processor.Context[any, any]) error {
	ws, err := processor.WindowStore(ctx, p.store, p.ks, p.vas)
	if err != nil {
		return err
	}
	p.ws = ws
	ts, err := processor.WindowStore(ctx, p.timestamps, p.ks, serde.Int64())
	if err != nil {
		return err
	}
	p.ts = ts
	if err := p.initTimes(ctx); err != nil {
		return err
	}
	if p.emitFinal {
		s, err := ctx.StateStore(p.positions)
		if err != nil {
			return err
		}
		p.pos = s.(statestore.KeyValueStore)
	}
	return nil
}

func (p *windowAgg[K, V, VA]) Process(ctx processor.Context[any, any], r processor.Record[any, any]) error {
	// Kafka Streams 4.4 drops a null key; a null value is dropped by
	// sliding windows and folded (as V's zero value) by time windows.
	if dropNull(ctx, r.Key == nil || (r.Value == nil && p.w.kind == sliding)) {
		return nil
	}
	tr, err := processor.Assert[K, V](r)
	if err != nil {
		return err
	}
	if err := p.process(ctx, tr); err != nil {
		return fmt.Errorf("topology: windowed aggregate %q: %w", p.store, err)
	}
	return nil
}

func (p *windowAgg[K, V, VA]) process(ctx processor.Context[any, any], tr processor.Record[K, V]) error {
	ts := tr.Timestamp.UnixMilli()
	observed, err := p.observe(ts)
	if err != nil {
		return err
	}
	closeTime := observed - p.w.grace.Milliseconds()
	if p.storeTime, err = getTime(p.tkv, storeTimeKey); err != nil {
		return err
	}
	before := p.storeTime
	if p.retained, err = p.retainedFrom(); err != nil {
		return err
	}
	if p.w.kind == sliding {
		err = p.slide(ctx, tr, ts, closeTime)
	} else {
		err = p.fixed(ctx, tr, ts, closeTime)
	}
	if err != nil {
		return err
	}
	if p.storeTime > before {
		if err := putTime(p.tkv, storeTimeKey, p.storeTime); err != nil {
			return err
		}
	}
	if p.emitFinal {
		if err := p.emitClosed(ctx, tr.Headers, closeTime); err != nil {
			return err
		}
	}
	return p.expire()
}

// fixed updates the tumbling or hopping windows that contain ts; a window
// takes records while its end is after closeTime.
func (p *windowAgg[K, V, VA]) fixed(ctx processor.Context[any, any], r processor.Record[K, V], ts, closeTime int64) error {
	size := p.w.size.Milliseconds()
	for _, start := range p.w.windowsFor(ts) {
		if start+size <= closeTime {
			ctx.Count(processor.MetricDroppedLate, 1)
			continue
		}
		agg, found, err := p.ws.Get(r.Key, time.UnixMilli(start))
		if err != nil {
			return err
		}
		maxTS, _, err := p.ts.Get(r.Key, time.UnixMilli(start))
		if err != nil {
			return err
		}
		// Out of the store's retention (which the windows written before
		// this one may have moved, as in Kafka Streams): the window starts
		// again.
		if start < p.storeRetainedFrom() {
			var zero VA
			agg, found = zero, false
		}
		if err := p.put(ctx, r, start, p.step(r.Key, r.Value, agg, found), stamp(ts, maxTS, found)); err != nil {
			return err
		}
	}
	return nil
}

// stamp is the timestamp of a window after a record at ts joined it: the
// largest record timestamp in it.
func stamp(ts, prev int64, found bool) int64 {
	if !found {
		return ts
	}
	return max(ts, prev)
}

// put stores window [start, start+size) of r's key with its aggregate and
// timestamp, and forwards it unless the aggregation emits final results
// only.
func (p *windowAgg[K, V, VA]) put(ctx processor.Context[any, any], r processor.Record[K, V], start int64, agg VA, ts int64) error {
	if err := p.ws.Put(r.Key, time.UnixMilli(start), agg); err != nil {
		return err
	}
	if err := p.ts.Put(r.Key, time.UnixMilli(start), ts); err != nil {
		return err
	}
	p.wrote(start)
	if p.emitFinal {
		return nil
	}
	return ctx.Forward(processor.Record[any, any]{
		Key:   Windowed[K]{Key: r.Key, Start: time.UnixMilli(start), End: time.UnixMilli(p.windowEnd(start))},
		Value: agg, Timestamp: time.UnixMilli(ts),
		Headers: r.Headers, Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
	})
}

// windowEnd returns the end of the window starting at start.
func (p *windowAgg[K, V, VA]) windowEnd(start int64) int64 {
	return start + p.w.size.Milliseconds()
}

// emitClosed emits, once, every window that closed: end ≤ closeTime, each
// stamped with its largest record timestamp, in the order of Kafka Streams'
// suppression buffer (window end, then key bytes), with the headers of the
// record that closed them (as emitStrategy(onWindowClose) does). The
// position of the next window start to emit is kept in a store, so a
// restarted task neither repeats nor skips results.
func (p *windowAgg[K, V, VA]) emitClosed(ctx processor.Context[any, any], headers []processor.Header, closeTime int64) error {
	lastStart := closeTime - p.w.size.Milliseconds() // windows starting at or before this are closed
	next := int64(0)
	if b, ok, err := p.pos.Get(emitPositionKey); err != nil {
		return err
	} else if ok && len(b) == 8 {
		next = int64(binary.BigEndian.Uint64(b))
	}
	if lastStart < next {
		return nil
	}
	it, err := p.ws.Store().FetchAll(time.UnixMilli(next), time.UnixMilli(lastStart))
	if err != nil {
		return err
	}
	type result struct {
		kb    []byte
		start int64
		vb    []byte
	}
	var results []result
	for it.Next() {
		results = append(results, result{kb: append([]byte(nil), it.Key()...), start: it.Window().UnixMilli(), vb: append([]byte(nil), it.Value()...)})
	}
	if err := closeIter(it); err != nil {
		return err
	}
	sort.SliceStable(results, func(i, j int) bool {
		if results[i].start != results[j].start {
			return results[i].start < results[j].start
		}
		return bytes.Compare(results[i].kb, results[j].kb) < 0
	})
	for _, res := range results {
		k, err := p.ks.Deserialize(p.store, res.kb)
		if err != nil {
			return err
		}
		agg, err := p.vas.Deserialize(p.store, res.vb)
		if err != nil {
			return err
		}
		ts, found, err := p.ts.Get(k, time.UnixMilli(res.start))
		if err != nil {
			return err
		}
		if !found { // written before weir kept window timestamps
			ts = p.windowEnd(res.start)
		}
		out := processor.Record[any, any]{
			Key:       Windowed[K]{Key: k, Start: time.UnixMilli(res.start), End: time.UnixMilli(p.windowEnd(res.start))},
			Value:     agg,
			Timestamp: time.UnixMilli(ts),
			Headers:   headers,
		}
		if err := ctx.Forward(out); err != nil {
			return err
		}
	}
	return p.pos.Put(emitPositionKey, binary.BigEndian.AppendUint64(nil, uint64(lastStart+1)))
}

// keepValue appends v to the list of values kept at (key, ts) in ws: the
// input values of sliding windows and of stream-stream joins, several per
// key and timestamp.
func keepValue(ws statestore.WindowStore, key []byte, ts int64, v []byte) error {
	prev, _, err := ws.Get(key, time.UnixMilli(ts))
	if err != nil {
		return err
	}
	return ws.Put(key, time.UnixMilli(ts), appendValue(prev, v))
}

// appendValue appends a length-prefixed value to a list.
func appendValue(list, v []byte) []byte {
	out := make([]byte, 0, len(list)+4+len(v))
	out = append(out, list...)
	out = binary.BigEndian.AppendUint32(out, uint32(len(v)))
	return append(out, v...)
}

// splitValues splits a list built by appendValue.
func splitValues(list []byte) ([][]byte, error) {
	var out [][]byte
	for len(list) > 0 {
		if len(list) < 4 {
			return nil, fmt.Errorf("topology: value list: truncated length")
		}
		n := binary.BigEndian.Uint32(list)
		list = list[4:]
		if uint64(n) > uint64(len(list)) {
			return nil, fmt.Errorf("topology: value list: value of %d bytes, %d left", n, len(list))
		}
		out = append(out, list[:n])
		list = list[n:]
	}
	return out, nil
}

// iter is what closeIter needs of the statestore iterators.
type iter interface {
	Err() error
	Close() error
}

// closeIter closes it and returns its error, if any.
func closeIter(it iter) error {
	err := it.Err()
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	return err
}
