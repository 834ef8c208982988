package topology

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/statestore"
)

// SessionGrouped is a grouped stream cut into session windows. Results are
// tables keyed by Windowed[K] whose Start and End are the first and last
// record time of the session. When a record merges sessions, the merged
// ones are deleted (a nil value is emitted for each) and the new session is
// emitted.
type SessionGrouped[K, V any] struct {
	g Grouped[K, V]
	w SessionWindows
}

// SessionWindowedBy cuts the grouped stream into session windows.
func SessionWindowedBy[K, V any](g Grouped[K, V], w SessionWindows) SessionGrouped[K, V] {
	return SessionGrouped[K, V]{g: g, w: w}
}

// Count counts the records per key and session.
func (sg SessionGrouped[K, V]) Count(opts ...Option) Table[Windowed[K], int64] {
	return sessionAggregate(sg, "KSTREAM-SESSION-COUNT", serde.Int64(), opts, countStep[K, V],
		func(_ K, a, b int64) int64 { return a + b })
}

// Reduce combines the values of each key and session with fn; merging two
// sessions reduces their aggregates with fn too.
func (sg SessionGrouped[K, V]) Reduce(fn func(agg, v V) V, opts ...Option) Table[Windowed[K], V] {
	reportNil(sg.g.s.b, "KSTREAM-SESSION-REDUCE", map[string]bool{"reducer": fn == nil})
	return sessionAggregate(sg, "KSTREAM-SESSION-REDUCE", sg.g.s.vs, opts, reduceStep[K](fn),
		func(_ K, a, b V) V { return fn(a, b) })
}

// AggregateSessions folds the values of each key and session into an
// aggregate; merger combines the aggregates of two sessions that a record
// joins into one.
func AggregateSessions[K, V, VA any](sg SessionGrouped[K, V], init func() VA, adder func(K, V, VA) VA, merger func(K, VA, VA) VA, vas serde.Serde[VA], opts ...Option) Table[Windowed[K], VA] {
	reportNil(sg.g.s.b, "KSTREAM-SESSION-AGGREGATE", map[string]bool{"initializer": init == nil, "adder": adder == nil, "merger": merger == nil})
	return sessionAggregate(sg, "KSTREAM-SESSION-AGGREGATE", vas, opts, aggregateStep(init, adder), merger)
}

func sessionAggregate[K, V, VA any](sg SessionGrouped[K, V], prefix string, vas serde.Serde[VA], opts []Option, st step[K, V, VA], merge func(K, VA, VA) VA) Table[Windowed[K], VA] {
	b := sg.g.s.b
	cfg := newConfig(opts)
	in := sg.g.input()
	if err := sg.w.validate(); err != nil {
		b.failf("%s: %v", prefix, err)
	}
	checkAggregateSerdes(b, prefix, in.ks, vas)
	if cfg.emitFinal {
		b.failf("%s: EmitFinal is not supported for session windows", prefix)
	}
	store := b.storeName(cfg, prefix)
	p := sessionAgg[K, V, VA]{store: store, times: store + "-stream-time", w: sg.w, ks: in.ks, vas: vas, step: st, merge: merge}
	n := b.addNode(&nodeDef{
		kind:    processor.KindProcessor,
		newProc: copies(p),
	}, prefix, cfg, in.node)
	b.addStore(statestore.Spec{Name: store, Kind: statestore.KindSession, Retention: 2*sg.w.gap + sg.w.grace, Logged: true}, n)
	addSessionTimes(b, p.times, n)
	queryable(b, store, in.ks, vas)
	ws := WindowedSerde(in.ks)
	if in.ks == nil {
		ws = nil
	}
	return Table[Windowed[K], VA]{b: b, node: n, ks: ws, vs: vas, store: store, windowed: true, closeDelay: sg.w.gap + sg.w.grace}
}

// addSessionTimes declares the logged store beside a session or window
// store that keeps its times (see sessionAgg, windowtime.go), owned by n.
func addSessionTimes(b *Builder, times string, n *nodeDef) {
	b.addStore(statestore.Spec{Name: times, Kind: statestore.KindKeyValue, Logged: true}, n)
	if sd, ok := b.stores[times]; ok {
		sd.companion = true
	}
}

// sessionAgg aggregates per key and session, as Kafka Streams'
// KStreamSessionWindowAggregate: a session takes records while stream time
// (this processor's) minus gap and grace is not after its end, and results
// and the tombstones of merged sessions are stamped with the session end.
//
// Which stored sessions a record can merge with is decided by the session
// store's own time, as Kafka Streams' segmented store decides it: the
// largest session end written so far, before this record. A session whose
// end is not after that time minus gap and grace is out of the store's
// retention. The time is kept in the store "<store>-stream-time" (with a
// changelog), so that it survives restarts as the store's does and is
// shared by the processors of a cogroup.
type sessionAgg[K, V, VA any] struct {
	store    string
	times    string
	w        SessionWindows
	ks       serde.Serde[K]
	vas      serde.Serde[VA]
	step     step[K, V, VA]
	merge    func(K, VA, VA) VA
	ss       *statestore.Sessions[K, VA]
	tkv      statestore.KeyValueStore
	observed int64 // the largest timestamp this processor has seen; -1 before the first
	expired  int64
}

func (p *sessionAgg[K, V, VA]) Init(ctx processor.Context[any, any]) error {
	ss, err := processor.SessionStore(ctx, p.store, p.ks, p.vas)
	p.ss = ss
	p.observed = -1
	if err != nil {
		return err
	}
	tkv, err := kvStore(ctx, p.times)
	if err != nil {
		return err
	}
	p.tkv = tkv
	return nil
}

var storeTimeKey = []byte("stream-time")

// storeTime returns the largest session end written to the store, or -1.
func (p *sessionAgg[K, V, VA]) storeTime() (int64, error) {
	b, ok, err := p.tkv.Get(storeTimeKey)
	if err != nil || !ok || len(b) != 8 {
		return -1, err
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}

type session[VA any] struct {
	start, end int64
	agg        VA
}

func (p *sessionAgg[K, V, VA]) Process(ctx processor.Context[any, any], r processor.Record[any, any]) error {
	// Kafka Streams 4.4 drops a null key and folds a null value (here as
	// V's zero value).
	if dropNull(ctx, r.Key == nil) {
		return nil
	}
	tr, err := processor.Assert[K, V](r)
	if err != nil {
		return err
	}
	if err := p.process(ctx, tr); err != nil {
		return fmt.Errorf("topology: session aggregate %q: %w", p.store, err)
	}
	return nil
}

func (p *sessionAgg[K, V, VA]) process(ctx processor.Context[any, any], r processor.Record[K, V]) error {
	ts := r.Timestamp.UnixMilli()
	gap := p.w.gap.Milliseconds()
	p.observed = max(p.observed, ts)
	closeTime := p.observed - p.w.grace.Milliseconds() - gap
	stored, err := p.storeTime()
	if err != nil {
		return err
	}
	retained := int64(math.MinInt64) // sessions ending after this are in the store's retention
	if stored >= 0 {
		retained = stored - p.w.grace.Milliseconds() - gap
	}
	it, err := p.ss.FindSessions(r.Key, time.UnixMilli(ts-gap), time.UnixMilli(ts+gap))
	if err != nil {
		return err
	}
	var merged []session[VA]
	for it.Next() {
		// A session out of the store's retention is gone in Kafka
		// Streams: a record near it starts a new session.
		if end := it.End().UnixMilli(); end > retained {
			merged = append(merged, session[VA]{start: it.Start().UnixMilli(), end: end, agg: it.Value()})
		}
	}
	if err := closeIter(it); err != nil {
		return err
	}
	merged, leftovers := splitLeftovers(merged)
	cur := session[VA]{start: ts, end: ts}
	found := false
	for _, s := range merged {
		cur.start, cur.end = min(cur.start, s.start), max(cur.end, s.end)
		if found {
			cur.agg = p.merge(r.Key, cur.agg, s.agg)
		} else {
			cur.agg, found = s.agg, true
		}
	}
	if cur.end < closeTime {
		ctx.Count(processor.MetricDroppedLate, 1)
		return nil
	}
	for _, s := range leftovers { // their tombstones went downstream with the merge
		if err := p.ss.Remove(r.Key, time.UnixMilli(s.start), time.UnixMilli(s.end)); err != nil {
			return err
		}
	}
	if cur.start != ts || cur.end != ts {
		for _, s := range merged {
			if err := p.ss.Remove(r.Key, time.UnixMilli(s.start), time.UnixMilli(s.end)); err != nil {
				return err
			}
			if err := p.forward(ctx, r, s.start, s.end, nil); err != nil {
				return err
			}
		}
	}
	cur.agg = p.step(r.Key, r.Value, cur.agg, found)
	if err := p.ss.Put(r.Key, time.UnixMilli(cur.start), time.UnixMilli(cur.end), cur.agg); err != nil {
		return err
	}
	if err := p.forward(ctx, r, cur.start, cur.end, cur.agg); err != nil {
		return err
	}
	if cur.end > stored {
		if err := p.tkv.Put(storeTimeKey, binary.BigEndian.AppendUint64(nil, uint64(cur.end))); err != nil {
			return err
		}
	}
	// Sessions that ended before closeTime-gap can no longer merge or change.
	if cutoff := closeTime - gap; cutoff >= p.expired+gap {
		p.expired = cutoff
		return p.ss.ExpireBefore(time.UnixMilli(cutoff))
	}
	return nil
}

// splitLeftovers separates from the sessions of one key found for a
// record those another of them contains: leftovers of a merge whose
// changelog landed in part. Sessions of one key never overlap — a record
// that bridges two merges them into one, whose put replaces them — so a
// session contained in another was merged into it, and its delete did not
// reach the store: at-least-once, the merged session's put was restored
// without the deletes sent after it (processor's changelog flush sends a
// session store's puts first), and the epoch's records are processed
// again. A leftover is removed, not merged: its aggregate is in the
// session that contains it already.
func splitLeftovers[VA any](found []session[VA]) (live, leftovers []session[VA]) {
	for i, s := range found {
		contained := false
		for j, o := range found {
			if j != i && o.start <= s.start && s.end <= o.end {
				contained = true
				break
			}
		}
		if contained {
			leftovers = append(leftovers, s)
		} else {
			live = append(live, s)
		}
	}
	return live, leftovers
}

// forward emits session [start, end] of r's key, stamped with its end. It
// carries no headers: Kafka Streams' session aggregation forwards a new
// record, without the input's.
func (p *sessionAgg[K, V, VA]) forward(ctx processor.Context[any, any], r processor.Record[K, V], start, end int64, agg any) error {
	return ctx.Forward(processor.Record[any, any]{
		Key: Windowed[K]{Key: r.Key, Start: time.UnixMilli(start), End: time.UnixMilli(end)}, Value: agg,
		Timestamp: time.UnixMilli(end), Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
	})
}
