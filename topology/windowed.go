package topology

import (
	"encoding/binary"
	"fmt"
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
	return windowAggregate(wg, "KSTREAM-WINDOWED-REDUCE", wg.g.s.vs, opts, reduceStep[K](fn))
}

// AggregateWindowed folds the values of each key and window into an
// aggregate, starting from init().
func AggregateWindowed[K, V, VA any](wg WindowedGrouped[K, V], init func() VA, adder func(K, V, VA) VA, vas serde.Serde[VA], opts ...Option) Table[Windowed[K], VA] {
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

// windowAggregate adds a windowed aggregation node and its stores.
func windowAggregate[K, V, VA any](wg WindowedGrouped[K, V], prefix string, vas serde.Serde[VA], opts []Option, st step[K, V, VA]) Table[Windowed[K], VA] {
	b := wg.g.s.b
	cfg := newConfig(opts)
	in := wg.g.input()
	if err := wg.w.validate(); err != nil {
		b.failf("%s: %v", prefix, err)
	}
	if in.ks == nil {
		b.failf("%s: no key serde for %s; set one with WithKeySerde", prefix, typeName[K]())
	}
	if vas == nil {
		b.failf("%s: no serde for the aggregate type %s", prefix, typeName[VA]())
	}
	if wg.w.kind == sliding && in.vs == nil {
		b.failf("%s: sliding windows keep the input values: no value serde for %s", prefix, typeName[V]())
	}
	store := cfg.store
	if store == "" {
		store = b.nextName(prefix + "-STATE-STORE")
	}
	p := windowAgg[K, V, VA]{
		store: store, w: wg.w, ks: in.ks, vs: in.vs, vas: vas, step: st, emitFinal: cfg.emitFinal,
		positions: store + "-emit-position", records: store + "-records",
	}
	n := b.addNode(&nodeDef{
		kind: processor.KindProcessor,
		newProc: func() processor.Processor[any, any, any, any] {
			cp := p
			return &cp
		},
	}, prefix, cfg, in.node)
	retention := wg.w.size + wg.w.grace
	b.addStore(statestore.Spec{Name: store, Kind: statestore.KindWindow, Retention: retention, Logged: true}, n)
	queryable(b, store, in.ks, vas)
	if cfg.emitFinal {
		b.addStore(statestore.Spec{Name: p.positions, Kind: statestore.KindKeyValue, Logged: true}, n)
	}
	if wg.w.kind == sliding {
		b.addStore(statestore.Spec{Name: p.records, Kind: statestore.KindWindow, Retention: retention, Logged: true}, n)
	}
	ws := WindowedSerde(in.ks)
	if in.ks == nil {
		ws = nil
	}
	return Table[Windowed[K], VA]{b: b, node: n, ks: ws, vs: vas, store: store}
}

// windowAgg aggregates per key and time window.
type windowAgg[K, V, VA any] struct {
	store, positions, records string
	w                         Windows
	ks                        serde.Serde[K]
	vs                        serde.Serde[V]
	vas                       serde.Serde[VA]
	step                      step[K, V, VA]
	emitFinal                 bool

	ws      *statestore.Windowed[K, VA]
	raw     statestore.WindowStore   // sliding: the input values per key and timestamp
	pos     statestore.KeyValueStore // emit-final: next window start to emit
	expired int64                    // windows starting before this are gone
}

var emitPositionKey = []byte("next-start")

func (p *windowAgg[K, V, VA]) Init(ctx processor.Context[any, any]) error {
	ws, err := processor.WindowStore(ctx, p.store, p.ks, p.vas)
	if err != nil {
		return err
	}
	p.ws = ws
	if p.emitFinal {
		s, err := ctx.StateStore(p.positions)
		if err != nil {
			return err
		}
		p.pos = s.(statestore.KeyValueStore)
	}
	if p.w.kind == sliding {
		s, err := ctx.StateStore(p.records)
		if err != nil {
			return err
		}
		p.raw = s.(statestore.WindowStore)
	}
	return nil
}

func (p *windowAgg[K, V, VA]) Process(ctx processor.Context[any, any], r processor.Record[any, any]) error {
	if r.Key == nil || r.Value == nil {
		ctx.Count(processor.MetricDroppedNull, 1)
		return nil
	}
	tr, err := processor.Assert[K, V](r)
	if err != nil {
		return err
	}
	ts := r.Timestamp.UnixMilli()
	closeTime := ctx.StreamTime().UnixMilli() - p.w.grace.Milliseconds()
	if p.w.kind == sliding {
		err = p.slide(ctx, tr, ts, closeTime)
	} else {
		err = p.fixed(ctx, tr, ts, closeTime)
	}
	if err != nil {
		return fmt.Errorf("topology: windowed aggregate %q: %w", p.store, err)
	}
	if p.emitFinal {
		if err := p.emitClosed(ctx, closeTime); err != nil {
			return fmt.Errorf("topology: windowed aggregate %q: %w", p.store, err)
		}
	}
	return p.expire(closeTime)
}

// fixed updates the tumbling or hopping windows that contain ts.
func (p *windowAgg[K, V, VA]) fixed(ctx processor.Context[any, any], r processor.Record[K, V], ts, closeTime int64) error {
	size := p.w.size.Milliseconds()
	for _, start := range p.w.windowsFor(ts) {
		end := start + size
		if end <= closeTime {
			ctx.Count(processor.MetricDroppedLate, 1)
			continue
		}
		if err := p.update(ctx, r, start, end); err != nil {
			return err
		}
	}
	return nil
}

// update folds r into window [start, end) and emits the result unless the
// aggregation emits final results only.
func (p *windowAgg[K, V, VA]) update(ctx processor.Context[any, any], r processor.Record[K, V], start, end int64) error {
	agg, found, err := p.ws.Get(r.Key, time.UnixMilli(start))
	if err != nil {
		return err
	}
	agg = p.step(r.Key, r.Value, agg, found)
	if err := p.ws.Put(r.Key, time.UnixMilli(start), agg); err != nil {
		return err
	}
	if p.emitFinal {
		return nil
	}
	return p.forward(ctx, r, r.Key, start, end, agg)
}

func (p *windowAgg[K, V, VA]) forward(ctx processor.Context[any, any], r processor.Record[K, V], k K, start, end int64, agg VA) error {
	out := processor.Record[any, any]{
		Key: Windowed[K]{Key: k, Start: time.UnixMilli(start), End: time.UnixMilli(end)}, Value: agg,
		Timestamp: r.Timestamp, Headers: r.Headers, Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
	}
	return ctx.Forward(out)
}

// slide handles sliding windows: the window [ts-d, ts] is created from the
// stored input values, and the windows ending in (ts, ts+d] are updated.
func (p *windowAgg[K, V, VA]) slide(ctx processor.Context[any, any], r processor.Record[K, V], ts, closeTime int64) error {
	d := p.w.size.Milliseconds()
	if ts <= closeTime {
		ctx.Count(processor.MetricDroppedLate, 1)
		return nil
	}
	kb, err := p.ks.Serialize(p.store, r.Key)
	if err != nil {
		return err
	}
	vb, err := p.vs.Serialize(p.records, r.Value)
	if err != nil {
		return err
	}
	// Keep the value: later windows may need to be built from it.
	if err := keepValue(p.raw, kb, ts, vb); err != nil {
		return err
	}
	// Update the existing windows that end after ts and cover it.
	it, err := p.ws.Fetch(r.Key, time.UnixMilli(ts-d+1), time.UnixMilli(ts))
	if err != nil {
		return err
	}
	var starts []int64
	var aggs []VA
	for it.Next() {
		starts = append(starts, it.Window().UnixMilli())
		aggs = append(aggs, it.Value())
	}
	if err := closeIter(it); err != nil {
		return err
	}
	for i, start := range starts {
		agg := p.step(r.Key, r.Value, aggs[i], true)
		if err := p.ws.Put(r.Key, time.UnixMilli(start), agg); err != nil {
			return err
		}
		if !p.emitFinal {
			if err := p.forward(ctx, r, r.Key, start, start+d, agg); err != nil {
				return err
			}
		}
	}
	// Build the window ending at ts from every stored value in [ts-d, ts].
	if _, exists, err := p.ws.Get(r.Key, time.UnixMilli(ts-d)); err != nil || exists {
		return err // it existed: the loop above already added r
	}
	var agg VA
	found := false
	rit, err := p.raw.Fetch(kb, time.UnixMilli(ts-d), time.UnixMilli(ts))
	if err != nil {
		return err
	}
	for rit.Next() {
		vals, err := splitValues(rit.Value())
		if err != nil {
			rit.Close()
			return err
		}
		for _, b := range vals {
			v, err := p.vs.Deserialize(p.records, b)
			if err != nil {
				rit.Close()
				return err
			}
			agg = p.step(r.Key, v, agg, found)
			found = true
		}
	}
	if err := rit.Err(); err != nil {
		rit.Close()
		return err
	}
	if err := rit.Close(); err != nil {
		return err
	}
	if err := p.ws.Put(r.Key, time.UnixMilli(ts-d), agg); err != nil {
		return err
	}
	if p.emitFinal {
		return nil
	}
	return p.forward(ctx, r, r.Key, ts-d, ts, agg)
}

// windowEnd returns the end of the window starting at start.
func (p *windowAgg[K, V, VA]) windowEnd(start int64) int64 {
	return start + p.w.size.Milliseconds()
}

// emitClosed emits, once, every window that closed: end ≤ closeTime. The
// position of the next window start to emit is kept in a store, so a
// restarted task neither repeats nor skips results.
func (p *windowAgg[K, V, VA]) emitClosed(ctx processor.Context[any, any], closeTime int64) error {
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
	it, err := p.ws.FetchAll(time.UnixMilli(next), time.UnixMilli(lastStart))
	if err != nil {
		return err
	}
	type result struct {
		k     K
		start int64
		agg   VA
	}
	var results []result
	for it.Next() {
		results = append(results, result{k: it.Key(), start: it.Window().UnixMilli(), agg: it.Value()})
	}
	if err := closeIter(it); err != nil {
		return err
	}
	for _, res := range results {
		out := processor.Record[any, any]{
			Key:       Windowed[K]{Key: res.k, Start: time.UnixMilli(res.start), End: time.UnixMilli(p.windowEnd(res.start))},
			Value:     res.agg,
			Timestamp: time.UnixMilli(p.windowEnd(res.start)),
		}
		if err := ctx.Forward(out); err != nil {
			return err
		}
	}
	return p.pos.Put(emitPositionKey, binary.BigEndian.AppendUint64(nil, uint64(lastStart+1)))
}

// expire drops windows that closed more than a window size ago; retention is
// size + grace.
func (p *windowAgg[K, V, VA]) expire(closeTime int64) error {
	cutoff := closeTime - p.w.size.Milliseconds()
	step := p.w.advance.Milliseconds()
	if step <= 0 {
		step = p.w.size.Milliseconds()
	}
	if cutoff < p.expired+step {
		return nil
	}
	p.expired = cutoff
	if err := p.ws.Store().ExpireBefore(time.UnixMilli(cutoff)); err != nil {
		return err
	}
	if p.raw != nil {
		return p.raw.ExpireBefore(time.UnixMilli(cutoff))
	}
	return nil
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
