package runtime

import (
	"sync"
	"time"

	"github.com/weirstream/weir/offsets"
)

// What the runtime reports for metrics and health: commit latencies and
// rebalances through Config's hooks, and — read on demand — the tasks still
// restoring and the lag of every partition this instance consumes.

// Hooks receive the runtime's events; they must be safe for concurrent use
// and return quickly. Nil hooks are skipped.
type Hooks struct {
	// Committed is called after every Commit: how long it took, and its
	// error (nil for a commit).
	Committed func(took time.Duration, err error)
	// Rebalanced is called when this member receives an assignment: the
	// generation of the group.
	Rebalanced func(generation int32)
}

// lags tracks the lag of every partition a claim consumes.
type lags struct {
	mu sync.Mutex
	m  map[offsets.TopicPartition]int64
}

// Track records the position of a claim: next is the next offset to
// process, end the partition's high watermark as the fetch last saw it.
func (r *Runtime) Track(tp offsets.TopicPartition, next, end int64) {
	lag := max(end-next, 0)
	r.lag.mu.Lock()
	if r.lag.m == nil {
		r.lag.m = map[offsets.TopicPartition]int64{}
	}
	r.lag.m[tp] = lag
	r.lag.mu.Unlock()
}

// Untrack forgets a partition whose claim ended.
func (r *Runtime) Untrack(tp offsets.TopicPartition) {
	r.lag.mu.Lock()
	delete(r.lag.m, tp)
	r.lag.mu.Unlock()
}

// Lags returns the lag of every partition this instance consumes: the
// high watermark minus the next offset to process.
func (r *Runtime) Lags() map[offsets.TopicPartition]int64 {
	r.lag.mu.Lock()
	defer r.lag.mu.Unlock()
	out := make(map[offsets.TopicPartition]int64, len(r.lag.m))
	for tp, l := range r.lag.m {
		out[tp] = l
	}
	return out
}

// Restoring returns the number of tasks restoring their stores.
func (r *Runtime) Restoring() int64 { return r.restoring.Load() }

// Prepared reports whether Prepare succeeded: the topics are ready and the
// member is about to join, or has joined, the group.
func (r *Runtime) Prepared() bool { return r.prepared.Load() }
