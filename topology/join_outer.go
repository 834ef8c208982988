package topology

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/statestore"
)

// LeftJoinStreams joins two streams within a time window, keeping every
// left record: each pair of records with the same key whose timestamps are
// within the window yields joiner(k, v1, v2, true), stamped with the later
// of the two timestamps, as JoinStreams does; a left record that joined
// nothing yields joiner(k, v1, zero, false), stamped with its own
// timestamp, once its window has closed. Right records that join nothing
// are dropped.
//
// As in Kafka Streams 4.4 (KIP-633, with the fix for spurious results), a
// left record that has found no partner yet waits in a store shared by
// both sides (logged, so a restored task keeps it) until stream time — the
// largest timestamp either side has seen, null keys and values included —
// passes its timestamp + after + grace; it is emitted then, before the
// result of the record that moved stream time past it, and in order of
// timestamp. A record that finds a partner before then leaves the store and
// is never emitted unmatched. A left record whose window has already ended
// (its timestamp + after is behind stream time) when it arrives, and that
// joins nothing, is emitted unmatched at once.
//
// A left record with a null key (and a value) is emitted at once as
// joiner(zero, v1, zero, false) with a null key, as Kafka Streams does
// since 3.7 (KIP-962); a left record with a null value, and a right record
// with a null key or value, are dropped and counted under
// processor.MetricDroppedNull.
func LeftJoinStreams[K, V1, V2, VR any](a Stream[K, V1], c Stream[K, V2], joiner func(k K, v1 V1, v2 V2, found bool) VR, w JoinWindows, opts ...Option) Stream[K, VR] {
	return joinStreams(a, c, w, opts, streamJoinKind[K, V1, V2, VR]{
		op: "LeftJoinStreams", prefix: "KSTREAM-LEFTJOIN", shared: "-left-shared-join-store",
		join: func(k K, v1 V1, v2 V2) VR { return joiner(k, v1, v2, true) },
		leftOnly: func(k K, v1 V1) VR {
			var v2 V2
			return joiner(k, v1, v2, false)
		},
	})
}

// OuterJoinStreams joins two streams within a time window, keeping every
// record of both: a pair within the window yields joiner(k, v1, v2, true,
// true), a left record that joined nothing joiner(k, v1, zero, true,
// false), a right record that joined nothing joiner(k, zero, v2, false,
// true). Unmatched records of either side wait in the shared store and are
// emitted when their window closes, as LeftJoinStreams describes: a left
// record's window closes at its timestamp + after + grace, a right
// record's at its timestamp + before + grace. At one timestamp, right
// records are emitted before left ones, and records of one side in the
// order of their serialized keys.
//
// A record of either side with a null key (and a value) is emitted at once
// with a null key; records with a null value are dropped and counted.
func OuterJoinStreams[K, V1, V2, VR any](a Stream[K, V1], c Stream[K, V2], joiner func(k K, v1 V1, v2 V2, ok1, ok2 bool) VR, w JoinWindows, opts ...Option) Stream[K, VR] {
	return joinStreams(a, c, w, opts, streamJoinKind[K, V1, V2, VR]{
		op: "OuterJoinStreams", prefix: "KSTREAM-OUTERJOIN", shared: "-outer-shared-join-store",
		join: func(k K, v1 V1, v2 V2) VR { return joiner(k, v1, v2, true, true) },
		leftOnly: func(k K, v1 V1) VR {
			var v2 V2
			return joiner(k, v1, v2, true, false)
		},
		rightOnly: func(k K, v2 V2) VR {
			var v1 V1
			return joiner(k, v1, v2, false, true)
		},
	})
}

// outerSides returns the outer-join halves of the left and right
// processors of the join named name, or nils for an inner join.
func (kind streamJoinKind[K, V1, V2, VR]) outerSides(name string, w JoinWindows) (*outerJoin[K, V1, V2, VR], *outerJoin[K, V2, V1, VR]) {
	if kind.leftOnly == nil {
		return nil, nil
	}
	store := name + kind.shared
	// A left record's window ends after it, a right record's before it.
	lookback := [2]int64{w.after.Milliseconds(), w.before.Milliseconds()}
	grace := w.grace.Milliseconds()
	return &outerJoin[K, V1, V2, VR]{store: store, thisOnly: kind.leftOnly, otherOnly: kind.rightOnly, lookback: lookback, grace: grace},
		&outerJoin[K, V2, V1, VR]{store: store, thisOnly: kind.rightOnly, otherOnly: kind.leftOnly, lookback: lookback, grace: grace}
}

// outerJoin is the part of a left or outer join's side that handles
// records without a partner.
//
// The shared store maps (timestamp, side, key) to the list of values of
// that side's records at that timestamp and key that have found no partner
// yet. Its keys are laid out as Kafka Streams' TimestampedKeyAndJoinSide:
// the timestamp in 8 big-endian bytes, a byte 1 for the left side and 0 for
// the right, then the serialized key; so iterating the store visits
// records by timestamp, right before left, then by key, as Kafka Streams'
// emission does.
type outerJoin[K, V, VO, VR any] struct {
	store string
	// thisOnly is nil where this side's unmatched records are dropped
	// (the right side of a left join); otherOnly likewise.
	thisOnly  func(K, V) VR
	otherOnly func(K, VO) VR
	// lookback[side] is how long after a record's timestamp its window
	// stays open on side (0 left, 1 right), grace aside.
	lookback [2]int64
	grace    int64

	kv statestore.KeyValueStore
}

// clone returns a copy for one task's processor, or nil for nil.
func (o *outerJoin[K, V, VO, VR]) clone() *outerJoin[K, V, VO, VR] {
	if o == nil {
		return nil
	}
	c := *o
	return &c
}

func (o *outerJoin[K, V, VO, VR]) init(ctx processor.Context[any, any]) error {
	kv, err := kvStore(ctx, o.store)
	if err != nil {
		return err
	}
	o.kv = kv
	return nil
}

// The keys of the shared times of a left or outer join in its stream-times
// store: the largest timestamp either side has seen, and the earliest
// timestamp that may be waiting in the shared store (Kafka Streams'
// TimeTracker, streamTime and minTime). Kafka Streams keeps both in memory
// only; weir logs them, so a restored task decides as the task it
// replaces would have.
const (
	sharedTimeKey = "shared"
	outerMinKey   = "outer-min"
)

// sharedTime returns the time kept under key, or def.
func (p *streamJoinSide[K, V, VO, VR]) sharedTime(key string, def int64) (int64, error) {
	ts, ok, err := p.observed.Get(key)
	if err != nil || !ok {
		return def, err
	}
	return ts, nil
}

// outerFirst advances the join's stream time with the record — every
// record counts, those dropped for a null key or value too — and emits at
// once a record of an outer side with a null key and a value (KIP-962),
// reporting it done. It returns the stream time.
func (p *streamJoinSide[K, V, VO, VR]) outerFirst(ctx processor.Context[any, any], r processor.Record[any, any], ts int64) (int64, bool, error) {
	streamTime, err := p.sharedTime(sharedTimeKey, -1)
	if err != nil {
		return 0, false, err
	}
	if ts > streamTime {
		streamTime = ts
		if err := p.observed.Put(sharedTimeKey, ts); err != nil {
			return 0, false, err
		}
	}
	if r.Key != nil || r.Value == nil || p.outer.thisOnly == nil {
		return streamTime, false, nil
	}
	v, err := processor.As[V](r.Value)
	if err != nil {
		return 0, false, err
	}
	var k K
	r.Value = p.outer.thisOnly(k, v)
	return streamTime, true, ctx.Forward(r)
}

// unmatched handles a record that found no partner: a record of an outer
// side is kept in the shared store until its window closes, or emitted at
// once when its window (ts + after) is already behind stream time.
func (p *streamJoinSide[K, V, VO, VR]) unmatched(ctx processor.Context[any, any], r processor.Record[any, any], tr processor.Record[K, V], kb, vb []byte, ts, streamTime int64) error {
	if p.outer.thisOnly == nil {
		return nil
	}
	if max(0, ts+p.after) < streamTime {
		r.Value = p.outer.thisOnly(tr.Key, tr.Value)
		return ctx.Forward(r)
	}
	minTime, err := p.sharedTime(outerMinKey, math.MaxInt64)
	if err != nil {
		return err
	}
	if ts < minTime {
		if err := p.observed.Put(outerMinKey, ts); err != nil {
			return err
		}
	}
	key := outerKey(ts, p.side, kb)
	prev, _, err := p.outer.kv.Get(key)
	if err != nil {
		return err
	}
	return p.outer.kv.Put(key, appendValue(prev, vb))
}

// forget removes the records of side at ts with key kb from the shared
// store: they have found a partner.
func (o *outerJoin[K, V, VO, VR]) forget(ts int64, side int, kb []byte) error {
	return o.kv.Delete(outerKey(ts, side, kb))
}

// emitClosed emits, in the shared store's order, the unmatched records
// whose window has closed at streamTime, and removes them. It runs when a
// record with a key and a value arrives at stream time, before that
// record is joined.
//
// It reproduces Kafka Streams' scan exactly, shortcuts included, since they
// decide what is emitted when: the scan is skipped while the earliest
// waiting timestamp (minTime) plus this side's after and grace has not
// passed stream time, whatever side waits at minTime; and it stops at the
// first record at which both sides have met an open window, leaving
// minTime at that record's timestamp (at the last record's when it does
// not stop; unset when the store is empty).
func (p *streamJoinSide[K, V, VO, VR]) emitClosed(ctx processor.Context[any, any], r processor.Record[any, any], streamTime int64) error {
	o := p.outer
	minTime, err := p.sharedTime(outerMinKey, math.MaxInt64)
	if err != nil {
		return err
	}
	// minTime is unset only when the store is empty: nothing to scan.
	if minTime == math.MaxInt64 || minTime+p.after+o.grace >= streamTime {
		return nil
	}
	it, err := o.kv.Range(nil, nil)
	if err != nil {
		return err
	}
	newMin := int64(math.MaxInt64)
	var open [2]bool
	for it.Next() {
		ts, side, kb, err := parseOuterKey(it.Key())
		if err != nil {
			it.Close()
			return err
		}
		newMin = ts
		if open[0] && open[1] {
			break
		}
		if ts+o.lookback[side]+o.grace >= streamTime {
			open[side] = true
			continue
		}
		if err := p.emitWaiting(ctx, r, ts, side, kb, it.Value()); err != nil {
			it.Close()
			return err
		}
		// The iterator reads the store as it was: deleting is safe.
		if err := o.kv.Delete(it.Key()); err != nil {
			it.Close()
			return err
		}
	}
	if err := closeIter(it); err != nil {
		return err
	}
	if newMin == math.MaxInt64 {
		return p.observed.Delete(outerMinKey)
	}
	return p.observed.Put(outerMinKey, newMin)
}

// emitWaiting emits the unmatched records of side at ts with key kb, whose
// values are the list vals, each stamped ts.
func (p *streamJoinSide[K, V, VO, VR]) emitWaiting(ctx processor.Context[any, any], r processor.Record[any, any], ts int64, side int, kb, vals []byte) error {
	o := p.outer
	k, err := p.ks.Deserialize(o.store, kb)
	if err != nil {
		return err
	}
	list, err := splitValues(vals)
	if err != nil {
		return err
	}
	for _, b := range list {
		out := r
		out.Key = k
		out.Timestamp = time.UnixMilli(ts)
		switch {
		case side == p.side && o.thisOnly != nil:
			v, err := p.vs.Deserialize(o.store, b)
			if err != nil {
				return err
			}
			out.Value = o.thisOnly(k, v)
		case side != p.side && o.otherOnly != nil:
			vo, err := p.vos.Deserialize(o.store, b)
			if err != nil {
				return err
			}
			out.Value = o.otherOnly(k, vo)
		default:
			return fmt.Errorf("outer join store %q: a record of side %d, which keeps none", o.store, side)
		}
		if err := ctx.Forward(out); err != nil {
			return err
		}
	}
	return nil
}

// outerKey is the shared store's key of side's records at ts with key kb.
func outerKey(ts int64, side int, kb []byte) []byte {
	out := make([]byte, 0, 9+len(kb))
	out = binary.BigEndian.AppendUint64(out, uint64(ts))
	out = append(out, sideByte(side))
	return append(out, kb...)
}

// sideByte is Kafka Streams' flag of a join side: 1 left, 0 right.
func sideByte(side int) byte {
	if side == 0 {
		return 1
	}
	return 0
}

// parseOuterKey splits a key made by outerKey.
func parseOuterKey(key []byte) (ts int64, side int, kb []byte, err error) {
	if len(key) < 9 || key[8] > 1 {
		return 0, 0, nil, fmt.Errorf("outer join store: malformed key of %d bytes", len(key))
	}
	side = 1
	if key[8] == 1 {
		side = 0
	}
	return int64(binary.BigEndian.Uint64(key)), side, key[9:], nil
}
