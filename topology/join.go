package topology

import (
	"fmt"
	"time"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/statestore"
)

// Joins match records by key. Both inputs must be co-partitioned — their
// topics have the same number of partitions and are partitioned by the same
// key — which weir checks when the application starts. Streams whose keys may
// have changed are repartitioned before joining. Records with a null key,
// and stream records with a null value, are dropped and counted under
// processor.MetricDroppedNull.

// Join joins each stream record with the table's current value for its key
// (an inner join: records whose key is not in the table are dropped). Only
// stream records trigger output; table updates do not.
func Join[K, V, VT, VR any](s Stream[K, V], t Table[K, VT], joiner func(K, V, VT) VR, opts ...Option) Stream[K, VR] {
	return streamTableJoin(s, t, "KSTREAM-JOIN", opts, func(k K, v V, vt VT, found bool) (VR, bool) {
		if !found {
			var zero VR
			return zero, false
		}
		return joiner(k, v, vt), true
	})
}

// LeftJoin joins each stream record with the table's current value for its
// key; found is false, and vt the zero value, when the key is not in the
// table.
func LeftJoin[K, V, VT, VR any](s Stream[K, V], t Table[K, VT], joiner func(k K, v V, vt VT, found bool) VR, opts ...Option) Stream[K, VR] {
	return streamTableJoin(s, t, "KSTREAM-LEFTJOIN", opts, func(k K, v V, vt VT, found bool) (VR, bool) {
		return joiner(k, v, vt, found), true
	})
}

func streamTableJoin[K, V, VT, VR any](s Stream[K, V], t Table[K, VT], prefix string, opts []Option, join func(K, V, VT, bool) (VR, bool)) Stream[K, VR] {
	b := s.b
	cfg := newConfig(opts)
	if t.b != b {
		b.failf("%s: stream and table from different builders", prefix)
		return Stream[K, VR]{b: b, node: s.node}
	}
	if t.store == "" {
		b.failf("%s: the table is not materialized; give it Materialized(name)", prefix)
	}
	if t.versioned || cfg.grace != nil {
		return versionedJoin(s, t, prefix, cfg, join)
	}
	in := s.partitioned("")
	store, ks, vts := t.store, t.ks, t.vs
	n := b.addNode(&nodeDef{
		kind: processor.KindProcessor,
		newProc: func() processor.Processor[any, any, any, any] {
			return &streamTableJoinProc[K, V, VT, VR]{store: store, ks: ks, vts: vts, join: join}
		},
	}, prefix, cfg, in.node)
	b.connectStore(n, store)
	return Stream[K, VR]{b: b, node: n, ks: in.ks, vs: inferSerde[VR]()}
}

type streamTableJoinProc[K, V, VT, VR any] struct {
	store string
	ks    serde.Serde[K]
	vts   serde.Serde[VT]
	join  func(K, V, VT, bool) (VR, bool)
	table *statestore.KV[K, VT]
}

func (p *streamTableJoinProc[K, V, VT, VR]) Init(ctx processor.Context[any, any]) error {
	kv, err := processor.KeyValueStore(ctx, p.store, p.ks, p.vts)
	p.table = kv
	return err
}

func (p *streamTableJoinProc[K, V, VT, VR]) Process(ctx processor.Context[any, any], r processor.Record[any, any]) error {
	if r.Key == nil || r.Value == nil {
		ctx.Count(processor.MetricDroppedNull, 1)
		return nil
	}
	tr, err := processor.Assert[K, V](r)
	if err != nil {
		return err
	}
	vt, found, err := p.table.Get(tr.Key)
	if err != nil {
		return fmt.Errorf("topology: join with %q: %w", p.store, err)
	}
	out, ok := p.join(tr.Key, tr.Value, vt, found)
	if !ok {
		return nil
	}
	r.Value = out
	return ctx.Forward(r)
}

// JoinTables joins two tables on their keys (an inner join): the result has
// joiner(k, v1, v2) for each key present in both, and is updated by updates
// on either side. A delete on either side deletes the result.
func JoinTables[K, V1, V2, VR any](a Table[K, V1], c Table[K, V2], joiner func(K, V1, V2) VR, opts ...Option) Table[K, VR] {
	b := a.b
	cfg := newConfig(opts)
	if c.b != b {
		b.failf("JoinTables: tables from different builders")
		return Table[K, VR]{b: b, node: a.node}
	}
	if a.store == "" || c.store == "" {
		b.failf("JoinTables: both tables must be materialized; give them Materialized(name)")
	}
	if a.versioned || c.versioned {
		return joinVersionedTables(a, c, joiner, cfg)
	}
	ks := a.ks
	// A result is stamped with the later of the two sides' timestamps, as
	// in Kafka Streams: each table keeps its keys' timestamps beside it.
	aTS, cTS := b.timestampsOf(a.store), b.timestampsOf(c.store)
	left := b.addNode(&nodeDef{
		kind: processor.KindProcessor,
		newProc: func() processor.Processor[any, any, any, any] {
			return &tableJoinSide[K, V1, V2, VR]{other: c.store, otherTS: cTS, ks: ks, vos: c.vs, join: joiner}
		},
	}, "KTABLE-JOINTHIS", config{}, a.node)
	b.connectStore(left, c.store)
	b.connectStore(left, cTS)
	right := b.addNode(&nodeDef{
		kind: processor.KindProcessor,
		newProc: func() processor.Processor[any, any, any, any] {
			return &tableJoinSide[K, V2, V1, VR]{other: a.store, otherTS: aTS, ks: ks, vos: a.vs,
				join: func(k K, v2 V2, v1 V1) VR { return joiner(k, v1, v2) }}
		},
	}, "KTABLE-JOINOTHER", config{}, c.node)
	b.connectStore(right, a.store)
	b.connectStore(right, aTS)
	merge := b.stateless("KTABLE-MERGE", cfg, forwardAll, left, right)
	out := Table[K, VR]{b: b, node: merge, ks: a.ks, vs: inferSerde[VR]()}
	if cfg.store != "" {
		out = out.materialize("KTABLE-JOIN", cfg.store)
	}
	return out
}

// tableJoinSide handles the updates of one side of a table-table join,
// looking the key up in the other side's store.
type tableJoinSide[K, V, VO, VR any] struct {
	other   string
	otherTS string // the other side's timestamps
	ks      serde.Serde[K]
	vos     serde.Serde[VO]
	join    func(K, V, VO) VR
	kv      *statestore.KV[K, VO]
	ts      *statestore.KV[K, int64]
}

func (p *tableJoinSide[K, V, VO, VR]) Init(ctx processor.Context[any, any]) error {
	kv, err := processor.KeyValueStore(ctx, p.other, p.ks, p.vos)
	p.kv = kv
	if err == nil {
		p.ts, err = processor.KeyValueStore(ctx, p.otherTS, p.ks, serde.Int64())
	}
	return err
}

func (p *tableJoinSide[K, V, VO, VR]) Process(ctx processor.Context[any, any], r processor.Record[any, any]) error {
	if r.Key == nil {
		ctx.Count(processor.MetricDroppedNull, 1)
		return nil
	}
	k, err := processor.As[K](r.Key)
	if err != nil {
		return err
	}
	vo, found, err := p.kv.Get(k)
	if err != nil {
		return fmt.Errorf("topology: join with %q: %w", p.other, err)
	}
	if !found {
		return nil
	}
	if ts, ok, err := p.ts.Get(k); err != nil {
		return fmt.Errorf("topology: join with %q: %w", p.other, err)
	} else if ok && ts > r.Timestamp.UnixMilli() {
		r.Timestamp = time.UnixMilli(ts)
	}
	if r.Value == nil {
		return ctx.Forward(r) // this side deleted: the result is deleted
	}
	v, err := processor.As[V](r.Value)
	if err != nil {
		return err
	}
	r.Value = p.join(k, v, vo)
	return ctx.Forward(r)
}

// JoinWindows bounds a stream-stream join: a record at t joins the other
// stream's records with timestamps in [t-before, t+after].
type JoinWindows struct {
	before, after, grace time.Duration
}

// JoinTimeDifference returns symmetric join windows: records join when their
// timestamps differ by at most d.
func JoinTimeDifference(d time.Duration) JoinWindows {
	return JoinWindows{before: d, after: d}
}

// WithBefore sets how far before a left record the right records may be.
func (w JoinWindows) WithBefore(d time.Duration) JoinWindows { w.before = d; return w }

// WithAfter sets how far after a left record the right records may be.
func (w JoinWindows) WithAfter(d time.Duration) JoinWindows { w.after = d; return w }

// WithGrace sets how long, in stream time, records are kept for late
// matches beyond the window.
func (w JoinWindows) WithGrace(d time.Duration) JoinWindows { w.grace = d; return w }

func (w JoinWindows) retention() int64 {
	return (w.before + w.after + w.grace).Milliseconds()
}

// JoinStreams joins two streams within a time window (an inner join): each
// pair of records with the same key whose timestamps are within the window
// yields joiner(k, v1, v2), stamped with the later of the two timestamps.
//
// As in Kafka Streams 4.4, each side keeps its records in a window store
// for before + after + grace, measured from the largest timestamp stored on
// that side; a record is never dropped for being late: it joins whatever
// the other side still holds, and is kept itself only while within its own
// side's retention.
func JoinStreams[K, V1, V2, VR any](a Stream[K, V1], c Stream[K, V2], joiner func(K, V1, V2) VR, w JoinWindows, opts ...Option) Stream[K, VR] {
	b := a.b
	cfg := newConfig(opts)
	if c.b != b {
		b.failf("JoinStreams: streams from different builders")
		return Stream[K, VR]{b: b, node: a.node}
	}
	if w.before < 0 || w.after < 0 || w.grace < 0 || w.before+w.after <= 0 {
		b.failf("JoinStreams: invalid join windows (before %v, after %v, grace %v)", w.before, w.after, w.grace)
	}
	left, right := a.partitioned(""), c.partitioned("")
	ok := left.needSerdes("JoinStreams (left)")
	ok = right.needSerdes("JoinStreams (right)") && ok
	name := cfg.name
	if name == "" {
		name = b.nextName("KSTREAM-JOIN")
	}
	thisStore, otherStore := name+"-this-store", name+"-other-store"
	ks, v1s, v2s := left.ks, left.vs, right.vs
	before, after := w.before.Milliseconds(), w.after.Milliseconds()
	times := name + "-stream-times"
	ln := b.addNode(&nodeDef{
		kind: processor.KindProcessor,
		newProc: func() processor.Processor[any, any, any, any] {
			return &streamJoinSide[K, V1, V2, VR]{own: thisStore, other: otherStore, ks: ks, vs: v1s, vos: v2s,
				before: before, after: after, retention: w.retention(), join: joiner, times: times, side: 0}
		},
	}, "", config{name: name + "-this"}, left.node)
	rn := b.addNode(&nodeDef{
		kind: processor.KindProcessor,
		newProc: func() processor.Processor[any, any, any, any] {
			return &streamJoinSide[K, V2, V1, VR]{own: otherStore, other: thisStore, ks: ks, vs: v2s, vos: v1s,
				before: after, after: before, retention: w.retention(), times: times, side: 1,
				join: func(k K, v2 V2, v1 V1) VR { return joiner(k, v1, v2) }}
		},
	}, "", config{name: name + "-other"}, right.node)
	if ok {
		spec := statestore.Spec{Kind: statestore.KindWindow, Retention: w.before + w.after + w.grace, Logged: true}
		spec.Name = thisStore
		b.addStore(spec, ln)
		spec.Name = otherStore
		b.addStore(spec, rn)
		b.connectStore(ln, otherStore)
		b.connectStore(rn, thisStore)
		// Each side's largest stored timestamp, which the other side's
		// reads are bounded by; logged, so a restored task keeps it, as
		// Kafka Streams' window stores do.
		b.addStore(statestore.Spec{Name: times, Kind: statestore.KindKeyValue, Logged: true}, ln)
		b.stores[times].companion = true
		b.connectStore(rn, times)
	}
	merge := b.stateless("", config{name: name + "-merge"}, forwardAll, ln, rn)
	return Stream[K, VR]{b: b, node: merge, ks: left.ks, vs: inferSerde[VR]()}
}

// streamJoinSide stores the records of one side of a stream-stream join and
// joins each with the other side's records in the window.
type streamJoinSide[K, V, VO, VR any] struct {
	own, other    string
	ks            serde.Serde[K]
	vs            serde.Serde[V]
	vos           serde.Serde[VO]
	before, after int64
	retention     int64
	join          func(K, V, VO) VR
	times         string // the store of both sides' largest stored timestamps
	side          int    // 0 this (left), 1 other (right)

	ownStore, otherStore statestore.WindowStore
	observed             *statestore.KV[string, int64]
	expired              int64
}

// sideKeys are the keys of the two sides in the stream-times store.
var sideKeys = [2]string{"this", "other"}

// observed returns the largest timestamp stored on side, or -1.
func (p *streamJoinSide[K, V, VO, VR]) observedOf(side int) (int64, error) {
	ts, ok, err := p.observed.Get(sideKeys[side])
	if err != nil || !ok {
		return -1, err
	}
	return ts, nil
}

func (p *streamJoinSide[K, V, VO, VR]) Init(ctx processor.Context[any, any]) error {
	for _, x := range []struct {
		name string
		dst  *statestore.WindowStore
	}{{p.own, &p.ownStore}, {p.other, &p.otherStore}} {
		s, err := ctx.StateStore(x.name)
		if err != nil {
			return err
		}
		ws, ok := s.(statestore.WindowStore)
		if !ok {
			return fmt.Errorf("topology: join store %q is a %T, not a window store", x.name, s)
		}
		*x.dst = ws
	}
	kv, err := processor.KeyValueStore(ctx, p.times, serde.String(), serde.Int64())
	p.observed = kv
	return err
}

func (p *streamJoinSide[K, V, VO, VR]) Process(ctx processor.Context[any, any], r processor.Record[any, any]) error {
	if r.Key == nil || r.Value == nil {
		ctx.Count(processor.MetricDroppedNull, 1)
		return nil
	}
	tr, err := processor.Assert[K, V](r)
	if err != nil {
		return err
	}
	ts := r.Timestamp.UnixMilli()
	own, err := p.observedOf(p.side)
	if err != nil {
		return fmt.Errorf("topology: stream join %q: %w", p.own, err)
	}
	if ts > own {
		own = ts
		if err := p.observed.Put(sideKeys[p.side], ts); err != nil {
			return fmt.Errorf("topology: stream join %q: %w", p.own, err)
		}
	}
	other, err := p.observedOf(1 - p.side)
	if err != nil {
		return fmt.Errorf("topology: stream join %q: %w", p.own, err)
	}
	if err := p.process(ctx, r, tr, ts, own, other); err != nil {
		return fmt.Errorf("topology: stream join %q: %w", p.own, err)
	}
	if cutoff := own - p.retention; cutoff > p.expired {
		p.expired = cutoff
		if err := p.ownStore.ExpireBefore(time.UnixMilli(cutoff)); err != nil {
			return err
		}
	}
	return nil
}

// process stores the record at ts and joins it; own and other are the
// largest timestamps stored on this side and the other.
func (p *streamJoinSide[K, V, VO, VR]) process(ctx processor.Context[any, any], r processor.Record[any, any], tr processor.Record[K, V], ts, own, other int64) error {
	kb, err := p.ks.Serialize(p.own, tr.Key)
	if err != nil {
		return err
	}
	vb, err := p.vs.Serialize(p.own, tr.Value)
	if err != nil {
		return err
	}
	// A record older than its side's retention is not kept (it would not
	// be read), but it still joins.
	if ts > own-p.retention {
		if err := keepValue(p.ownStore, kb, ts, vb); err != nil {
			return err
		}
	}
	// The other side's records within its retention.
	from := max(0, ts-p.before)
	if other >= 0 {
		from = max(from, other-p.retention+1)
	}
	to := max(0, ts+p.after)
	if to < from {
		return nil
	}
	it, err := p.otherStore.Fetch(kb, time.UnixMilli(from), time.UnixMilli(to))
	if err != nil {
		return err
	}
	type match struct {
		ts   int64
		vals [][]byte
	}
	var matches []match
	for it.Next() {
		vals, err := splitValues(it.Value())
		if err != nil {
			it.Close()
			return err
		}
		matches = append(matches, match{ts: it.Window().UnixMilli(), vals: vals})
	}
	if err := closeIter(it); err != nil {
		return err
	}
	for _, m := range matches {
		for _, b := range m.vals {
			vo, err := p.vos.Deserialize(p.other, b)
			if err != nil {
				return err
			}
			out := r
			out.Value = p.join(tr.Key, tr.Value, vo)
			out.Timestamp = time.UnixMilli(max(ts, m.ts))
			if err := ctx.Forward(out); err != nil {
				return err
			}
		}
	}
	return nil
}
