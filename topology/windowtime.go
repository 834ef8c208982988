package topology

import (
	"encoding/binary"
	"math"
	"strconv"
	"time"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/statestore"
)

// The times of a tumbling, hopping or sliding window aggregation live in
// the logged key-value store "<store>-stream-time", beside the window
// store, so that they survive restarts and moves and are shared by the
// processors of a cogroup:
//
//   - "observed-<lane>": the largest record timestamp the processor of
//     input lane has seen (lane 0 without cogroup). A record is late when
//     its window ended at or before this time minus grace. Kafka Streams
//     keeps it in the processor's memory and starts again after a restart;
//     weir restores it, so a record late before a restart is late after it,
//     whether the store came back from the state directory or from its
//     changelog.
//   - "stream-time": the largest window start written to the window store
//     (by any lane), the time of Kafka Streams' segmented window store.
//     Tumbling and hopping windows starting before it minus the retention
//     (size + grace) plus 1ms are gone, as Kafka Streams' store serves no
//     window out of its retention: a lane behind the others can accept a
//     record whose window another lane's records have already expired, and
//     it then starts that window again.
//
// Sliding windows keep every window that is open by the latest close time
// of any lane (see "Where weir differs" in docs/semantics.md: Kafka
// Streams' store keeps 2d + grace behind the largest window start written,
// weir 2d + grace + 1ms behind that close time). As with time windows, a
// lane behind the others may then find a window gone that is open by its
// own time.
//
// Expiry (ExpireBefore) is not in the window store's changelog, so a store
// restored from it may hold windows the restarted one had dropped: the
// reads that make aggregates ignore windows starting before retainedFrom,
// which is a function of the logged times only. (EmitFinal reads from its
// logged emit position, past every window expiry has dropped.)

// observedKey is the key of lane's observed time; the store's time is kept
// under storeTimeKey, as in session stores.
func observedKey(lane int) []byte { return []byte("observed-" + strconv.Itoa(lane)) }

// getTime returns the time kept under key in kv, or -1.
func getTime(kv statestore.KeyValueStore, key []byte) (int64, error) {
	b, ok, err := kv.Get(key)
	if err != nil || !ok || len(b) != 8 {
		return -1, err
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}

// putTime keeps t under key in kv.
func putTime(kv statestore.KeyValueStore, key []byte, t int64) error {
	return kv.Put(key, binary.BigEndian.AppendUint64(nil, uint64(t)))
}

// initTimes opens the times store of p.
func (p *windowAgg[K, V, VA]) initTimes(ctx processor.Context[any, any]) error {
	s, err := ctx.StateStore(p.times)
	if err != nil {
		return err
	}
	p.tkv = s.(statestore.KeyValueStore)
	p.observed, p.loaded = -1, false
	return nil
}

// observe advances this lane's observed time to ts (loading it from the
// store first after a restart) and returns it.
func (p *windowAgg[K, V, VA]) observe(ts int64) (int64, error) {
	if !p.loaded {
		t, err := getTime(p.tkv, observedKey(p.lane))
		if err != nil {
			return 0, err
		}
		p.observed, p.loaded = t, true
	}
	if ts > p.observed {
		p.observed = ts
		if err := putTime(p.tkv, observedKey(p.lane), ts); err != nil {
			return 0, err
		}
	}
	return p.observed, nil
}

// retainedFrom returns the first window start the store keeps (see above):
// for time windows, by the store's time p.storeTime; for sliding windows,
// by the latest close time of any lane.
func (p *windowAgg[K, V, VA]) retainedFrom() (int64, error) {
	if p.w.kind != sliding {
		return p.storeRetainedFrom(), nil
	}
	latest := p.observed
	for lane := 0; lane < p.lanes; lane++ {
		if lane == p.lane {
			continue
		}
		t, err := getTime(p.tkv, observedKey(lane))
		if err != nil {
			return 0, err
		}
		latest = max(latest, t)
	}
	// A sliding window ending at the close time still takes records (ends
	// are inclusive). It may be the right window of a record at
	// close−d−1, to be created from that record's left window, which
	// starts at close−2d−1: so windows starting there are kept.
	d := p.w.size.Milliseconds()
	return latest - p.w.grace.Milliseconds() - 2*d - 1, nil
}

// storeRetainedFrom returns the first window start a tumbling or hopping
// window store keeps, by its time p.storeTime.
func (p *windowAgg[K, V, VA]) storeRetainedFrom() int64 {
	if p.storeTime < 0 {
		return math.MinInt64
	}
	return p.storeTime - p.w.retention().Milliseconds() + 1
}

// wrote advances the store's time past a window written at start.
func (p *windowAgg[K, V, VA]) wrote(start int64) {
	p.storeTime = max(p.storeTime, start)
}

// expire drops the windows starting before retainedFrom, a window advance
// at a time (a window size for tumbling and sliding windows).
func (p *windowAgg[K, V, VA]) expire() error {
	cutoff, err := p.retainedFrom()
	if err != nil {
		return err
	}
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
	return p.ts.Store().ExpireBefore(time.UnixMilli(cutoff))
}
