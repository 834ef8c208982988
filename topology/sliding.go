package topology

import (
	"slices"
	"time"

	"github.com/weirstream/weir/processor"
)

// Sliding windows follow Kafka Streams' KStreamSlidingWindowAggregate
// (4.4), so that a topology ported from Kafka Streams emits the same
// windows, aggregates and timestamps in the same order. The windows of a
// key are kept by start; every window's aggregate and largest record
// timestamp are enough to create the windows a new record needs:
//
//   - its left window [t-d, t]: from the aggregate of the latest window that
//     ends before t (when that window's last record is within d of t);
//   - its right window [t+1, t+1+d]: from the aggregate, before this record,
//     of the latest window that contains t and ends after it (when that
//     window holds a record after t);
//   - the right window of the record just before it, which this record is
//     the first of.
//
// Existing windows that contain t are updated, newest first.

// window is one stored sliding window of a key.
type window[VA any] struct {
	start int64
	agg   VA
	ts    int64 // the largest record timestamp in the window
}

// slide handles a record at ts of a sliding-window aggregation.
func (p *windowAgg[K, V, VA]) slide(ctx processor.Context[any, any], r processor.Record[K, V], ts, closeTime int64) error {
	d := p.w.size.Milliseconds()
	if ts+d < closeTime {
		ctx.Count(processor.MetricDroppedLate, 1)
		return nil
	}
	if ts < d {
		return p.slideEarly(ctx, r, ts, closeTime)
	}
	wins, err := p.windows(r.Key, max(0, ts-2*d), ts+1)
	if err != nil {
		return err
	}
	starts := map[int64]bool{}
	var left, right *window[VA]
	leftExists, rightExists := false, false
	prevTS, hasPrev := int64(0), false
	// Newest first: the windows that contain ts, then the one ending at ts,
	// then the latest one before it.
scan:
	for i := len(wins) - 1; i >= 0; i-- {
		w := wins[i]
		starts[w.start] = true
		end := w.start + d
		switch {
		case w.start == ts+1:
			rightExists = true
		case end > ts:
			if right == nil {
				right = &wins[i]
			}
			if err := p.update(ctx, r, w.start, w.agg, w.ts, true, ts, closeTime); err != nil {
				return err
			}
		case end == ts:
			leftExists = true
			if err := p.update(ctx, r, w.start, w.agg, w.ts, true, ts, closeTime); err != nil {
				return err
			}
			if w.ts >= ts {
				return nil // a record at ts came before: every window exists
			}
			prevTS, hasPrev = w.ts, true
		default: // end < ts
			left = &wins[i]
			prevTS, hasPrev = w.ts, true
			break scan
		}
	}
	var zero VA
	// The right window of the record before this one, which starts with it.
	if hasPrev && !starts[prevTS+1] && prevTS+1+d >= ts {
		if err := p.update(ctx, r, prevTS+1, zero, ts, false, ts, closeTime); err != nil {
			return err
		}
	}
	// This record's left window.
	if !leftExists {
		if hasPrev && ts-d <= prevTS {
			err = p.update(ctx, r, ts-d, left.agg, ts, true, ts, closeTime)
		} else {
			err = p.update(ctx, r, ts-d, zero, ts, false, ts, closeTime)
		}
		if err != nil {
			return err
		}
	}
	// This record's right window, holding the later records.
	if !rightExists && right != nil && right.ts > ts {
		return p.putRight(ctx, r, ts+1, right)
	}
	return nil
}

// slideEarly handles a record before the time difference d: it would have
// windows starting before 0, so every such record goes into [0, d] instead.
func (p *windowAgg[K, V, VA]) slideEarly(ctx processor.Context[any, any], r processor.Record[K, V], ts, closeTime int64) error {
	wins, err := p.windows(r.Key, 0, ts+1)
	if err != nil {
		return err
	}
	starts := map[int64]bool{}
	var combined, right *window[VA]
	rightExists := false
	prevTS, hasPrev := int64(0), false
	for i := range wins {
		w := wins[i]
		starts[w.start] = true
		switch {
		case w.start == 0:
			combined = &wins[i]
			if w.ts < ts {
				prevTS, hasPrev = w.ts, true
			}
		case w.start <= ts:
			right = &wins[i]
			if err := p.update(ctx, r, w.start, w.agg, w.ts, true, ts, closeTime); err != nil {
				return err
			}
		default: // w.start == ts+1
			rightExists = true
		}
	}
	// With no window between 0 and ts, the combined window holds exactly
	// the records after ts when its last one is after ts.
	if right == nil && combined != nil && combined.ts > ts {
		right = combined
	}
	if !rightExists && right != nil && right.ts > ts {
		if err := p.putRight(ctx, r, ts+1, right); err != nil {
			return err
		}
	}
	var zero VA
	if hasPrev && !starts[prevTS+1] {
		if err := p.update(ctx, r, prevTS+1, zero, ts, false, ts, closeTime); err != nil {
			return err
		}
	}
	if combined == nil {
		return p.update(ctx, r, 0, zero, ts, false, ts, closeTime)
	}
	return p.update(ctx, r, 0, combined.agg, combined.ts, true, ts, closeTime)
}

// update folds r (at ts) into the window starting at start, whose aggregate
// and timestamp were agg and prevTS (found false: a new window), unless the
// window ended before closeTime.
func (p *windowAgg[K, V, VA]) update(ctx processor.Context[any, any], r processor.Record[K, V], start int64, agg VA, prevTS int64, found bool, ts, closeTime int64) error {
	if p.windowEnd(start) < closeTime {
		ctx.Count(processor.MetricDroppedLate, 1)
		return nil
	}
	return p.put(ctx, r, start, p.step(r.Key, r.Value, agg, found), stamp(ts, prevTS, found))
}

// putRight creates the right window starting at start as a copy of w: the
// records of w after the new record.
func (p *windowAgg[K, V, VA]) putRight(ctx processor.Context[any, any], r processor.Record[K, V], start int64, w *window[VA]) error {
	return p.put(ctx, r, start, w.agg, w.ts)
}

// windows returns the stored windows of k starting in [from, to], by start,
// but none before p.retained (a store restored from its changelog may still
// hold them).
func (p *windowAgg[K, V, VA]) windows(k K, from, to int64) ([]window[VA], error) {
	from = max(from, p.retained)
	if to < from {
		return nil, nil
	}
	it, err := p.ws.Fetch(k, time.UnixMilli(from), time.UnixMilli(to))
	if err != nil {
		return nil, err
	}
	var out []window[VA]
	for it.Next() {
		out = append(out, window[VA]{start: it.Window().UnixMilli(), agg: it.Value()})
	}
	if err := closeIter(it); err != nil {
		return nil, err
	}
	for i := range out {
		ts, found, err := p.ts.Get(k, time.UnixMilli(out[i].start))
		if err != nil {
			return nil, err
		}
		if !found {
			ts = out[i].start + p.w.size.Milliseconds() // written before weir kept window timestamps
		}
		out[i].ts = ts
	}
	return slices.Clip(out), nil
}
