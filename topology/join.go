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
// have changed are repartitioned before joining. Stream records with a null
// value, and records with a null key, are dropped and counted under
// processor.MetricDroppedNull — except a stream record with a null key in a
// stream–table LeftJoin, which is joined with no table value, as in Kafka
// Streams since 3.7 (KIP-962).

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
// table. A stream record with a null key is joined with no table value (k
// is K's zero value, found false) and keeps its null key.
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
	left := prefix == "KSTREAM-LEFTJOIN"
	n := b.addNode(&nodeDef{
		kind: processor.KindProcessor,
		newProc: func() processor.Processor[any, any, any, any] {
			return &streamTableJoinProc[K, V, VT, VR]{store: store, ks: ks, vts: vts, join: join, nullKeys: left}
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
	// nullKeys: a record with a null key is joined with no table value
	// (a left join) instead of dropped.
	nullKeys bool
	table    *statestore.KV[K, VT]
}

func (p *streamTableJoinProc[K, V, VT, VR]) Init(ctx processor.Context[any, any]) error {
	kv, err := processor.KeyValueStore(ctx, p.store, p.ks, p.vts)
	p.table = kv
	return err
}

func (p *streamTableJoinProc[K, V, VT, VR]) Process(ctx processor.Context[any, any], r processor.Record[any, any]) error {
	if dropNull(ctx, r.Value == nil || (r.Key == nil && !p.nullKeys)) {
		return nil
	}
	if r.Key == nil {
		v, err := processor.As[V](r.Value)
		if err != nil {
			return err
		}
		var k K
		var vt VT
		out, ok := p.join(k, v, vt, false)
		return forwardJoined(ctx, r, out, ok)
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
	return forwardJoined(ctx, r, out, ok)
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
	return joinStreams(a, c, w, opts, streamJoinKind[K, V1, V2, VR]{op: "JoinStreams", prefix: "KSTREAM-JOIN", join: joiner})
}

// streamJoinKind is what sets the inner, left and outer stream-stream
// joins apart.
type streamJoinKind[K, V1, V2, VR any] struct {
	op, prefix string // the DSL function, for errors; the prefix of generated names
	join       func(K, V1, V2) VR
	// leftOnly and rightOnly join a record with no partner on the other
	// side; nil where that side's unmatched records are not emitted.
	leftOnly  func(K, V1) VR
	rightOnly func(K, V2) VR
	shared    string // the suffix of the shared outer store's name
}

func joinStreams[K, V1, V2, VR any](a Stream[K, V1], c Stream[K, V2], w JoinWindows, opts []Option, kind streamJoinKind[K, V1, V2, VR]) Stream[K, VR] {
	b := a.b
	cfg := newConfig(opts)
	if c.b != b {
		b.failf("%s: streams from different builders", kind.op)
		return Stream[K, VR]{b: b, node: a.node}
	}
	if w.before < 0 || w.after < 0 || w.grace < 0 || w.before+w.after <= 0 {
		b.failf("%s: invalid join windows (before %v, after %v, grace %v)", kind.op, w.before, w.after, w.grace)
	}
	left, right := a.partitioned(""), c.partitioned("")
	ok := left.needSerdes(kind.op + " (left)")
	ok = right.needSerdes(kind.op+" (right)") && ok
	name := cfg.name
	if name == "" {
		name = b.nextName(kind.prefix)
	}
	thisStore, otherStore := name+"-this-store", name+"-other-store"
	ks, v1s, v2s := left.ks, left.vs, right.vs
	before, after := w.before.Milliseconds(), w.after.Milliseconds()
	times := name + "-stream-times"
	outerLeft, outerRight := kind.outerSides(name, w)
	ln := b.addNode(&nodeDef{
		kind: processor.KindProcessor,
		newProc: func() processor.Processor[any, any, any, any] {
			return &streamJoinSide[K, V1, V2, VR]{own: thisStore, other: otherStore, ks: ks, vs: v1s, vos: v2s,
				before: before, after: after, retention: w.retention(), join: kind.join, times: times, side: 0,
				outer: outerLeft.clone()}
		},
	}, "", config{name: name + "-this"}, left.node)
	rn := b.addNode(&nodeDef{
		kind: processor.KindProcessor,
		newProc: func() processor.Processor[any, any, any, any] {
			return &streamJoinSide[K, V2, V1, VR]{own: otherStore, other: thisStore, ks: ks, vs: v2s, vos: v1s,
				before: after, after: before, retention: w.retention(), times: times, side: 1,
				join:  func(k K, v2 V2, v1 V1) VR { return kind.join(k, v1, v2) },
				outer: outerRight.clone()}
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
		if outerLeft != nil {
			b.addStore(statestore.Spec{Name: outerLeft.store, Kind: statestore.KindKeyValue, Logged: true}, ln)
			b.connectStore(rn, outerLeft.store)
		}
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
	// times is the store of each side's largest stored timestamp and, in
	// left and outer joins, of the times both sides share.
	times string
	side  int // 0 this (left), 1 other (right)
	// outer is set in left and outer joins (see join_outer.go).
	outer *outerJoin[K, V, VO, VR]

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
	if err == nil && p.outer != nil {
		err = p.outer.init(ctx)
	}
	return err
}

func (p *streamJoinSide[K, V, VO, VR]) Process(ctx processor.Context[any, any], r processor.Record[any, any]) error {
	if err := p.processRecord(ctx, r); err != nil {
		return fmt.Errorf("topology: stream join %q: %w", p.own, err)
	}
	return nil
}

func (p *streamJoinSide[K, V, VO, VR]) processRecord(ctx processor.Context[any, any], r processor.Record[any, any]) error {
	ts := r.Timestamp.UnixMilli()
	var streamTime int64
	if p.outer != nil {
		var done bool
		var err error
		if streamTime, done, err = p.outerFirst(ctx, r, ts); err != nil || done {
			return err
		}
	}
	if dropNull(ctx, r.Key == nil || r.Value == nil) {
		return nil
	}
	tr, err := processor.Assert[K, V](r)
	if err != nil {
		return err
	}
	own, err := p.observedOf(p.side)
	if err != nil {
		return err
	}
	if ts > own {
		own = ts
		if err := p.observed.Put(sideKeys[p.side], ts); err != nil {
			return err
		}
	}
	other, err := p.observedOf(1 - p.side)
	if err != nil {
		return err
	}
	kb, err := p.ks.Serialize(p.own, tr.Key)
	if err != nil {
		return err
	}
	vb, err := p.vs.Serialize(p.own, tr.Value)
	if err != nil {
		return err
	}
	if p.outer != nil && ts == streamTime {
		if err := p.emitClosed(ctx, r, streamTime); err != nil {
			return err
		}
	}
	matched, err := p.process(ctx, r, tr, kb, vb, ts, own, other)
	if err != nil {
		return err
	}
	if p.outer != nil && !matched {
		if err := p.unmatched(ctx, r, tr, kb, vb, ts, streamTime); err != nil {
			return err
		}
	}
	if cutoff := own - p.retention; cutoff > p.expired {
		p.expired = cutoff
		if err := p.ownStore.ExpireBefore(time.UnixMilli(cutoff)); err != nil {
			return err
		}
	}
	return nil
}

// process stores the record at ts and joins it, and reports whether it
// found a partner; own and other are the largest timestamps stored on this
// side and the other, kb and vb the record's key and value serialized.
func (p *streamJoinSide[K, V, VO, VR]) process(ctx processor.Context[any, any], r processor.Record[any, any], tr processor.Record[K, V], kb, vb []byte, ts, own, other int64) (bool, error) {
	// A record older than its side's retention is not kept (it would not
	// be read), but it still joins.
	if ts > own-p.retention {
		if err := keepValue(p.ownStore, kb, ts, vb); err != nil {
			return false, err
		}
	}
	// The other side's records within its retention.
	from := max(0, ts-p.before)
	if other >= 0 {
		from = max(from, other-p.retention+1)
	}
	to := max(0, ts+p.after)
	if to < from {
		return false, nil
	}
	it, err := p.otherStore.Fetch(kb, time.UnixMilli(from), time.UnixMilli(to))
	if err != nil {
		return false, err
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
			return false, err
		}
		matches = append(matches, match{ts: it.Window().UnixMilli(), vals: vals})
	}
	if err := closeIter(it); err != nil {
		return false, err
	}
	for _, m := range matches {
		if p.outer != nil {
			// The other side's records at m.ts found a partner: they
			// are never emitted as unmatched.
			if err := p.outer.forget(m.ts, 1-p.side, kb); err != nil {
				return false, err
			}
		}
		for _, b := range m.vals {
			vo, err := p.vos.Deserialize(p.other, b)
			if err != nil {
				return false, err
			}
			out := r
			out.Value = p.join(tr.Key, tr.Value, vo)
			out.Timestamp = time.UnixMilli(max(ts, m.ts))
			if err := ctx.Forward(out); err != nil {
				return false, err
			}
		}
	}
	return len(matches) > 0, nil
}
