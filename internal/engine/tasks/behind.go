package tasks

import "sync"

// Behind runs jobs in the order they were added, one at a time, on a
// goroutine of its own that runs while jobs are pending: work that follows
// a commit without holding up processing or the next commit — the
// continuous engine's epoch log appends, the runtime's state applier. At
// most limit jobs are pending; Add waits for room (back-pressure). The
// first job that fails is kept: later jobs are skipped (never run) and
// Err returns it, for the owner to stop at its next step. It is safe for
// concurrent use.
type Behind struct {
	limit int
	mu    sync.Mutex
	cond  *sync.Cond
	jobs  []func() error
	// added and done count the jobs added and finished (run or skipped);
	// running is set while the goroutine runs.
	added, done int64
	running     bool
	err         error
}

// NewBehind returns a Behind that holds at most limit pending jobs
// (limit ≥ 1).
func NewBehind(limit int) *Behind {
	b := &Behind{limit: max(limit, 1)}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// Add queues job, waiting while limit jobs are pending.
func (b *Behind) Add(job func() error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.added-b.done >= int64(b.limit) {
		b.cond.Wait()
	}
	b.jobs = append(b.jobs, job)
	b.added++
	if !b.running {
		b.running = true
		go b.run()
	}
}

// Full reports whether Add would wait now.
func (b *Behind) Full() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.added-b.done >= int64(b.limit)
}

func (b *Behind) run() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for len(b.jobs) > 0 {
		job := b.jobs[0]
		b.jobs[0] = nil
		b.jobs = b.jobs[1:]
		failed := b.err != nil
		b.mu.Unlock()
		var err error
		if !failed {
			err = job()
		}
		b.mu.Lock()
		if err != nil && b.err == nil {
			b.err = err
		}
		b.done++
		b.cond.Broadcast()
	}
	b.running = false
	b.cond.Broadcast()
}

// Wait waits until every job added before the call has run or was
// skipped, and returns Err.
func (b *Behind) Wait() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for target := b.added; b.done < target; {
		b.cond.Wait()
	}
	return b.err
}

// Join waits until no job is pending and the goroutine has ended, and
// returns Err: the join of the goroutines Add started. Call it once
// nothing adds jobs any more.
func (b *Behind) Join() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.done < b.added || b.running {
		b.cond.Wait()
	}
	return b.err
}

// Err returns the error of the first job that failed, if any.
func (b *Behind) Err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}
