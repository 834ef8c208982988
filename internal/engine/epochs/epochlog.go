package epochs

import (
	"context"
	"fmt"
	"github.com/weirstream/weir/continuous"
	"sync"
	"time"

	"github.com/weirstream/weir/internal/runtime"
	"github.com/weirstream/weir/offsets"
)

// epochLogQueue is how many committed epochs may wait for the epoch log
// before an epoch end waits for room (tens of seconds of epochs).
const epochLogQueue = 256

// epochWriter appends committed epochs to the epoch log in order, on a
// goroutine of its own, and then reports their progress: a slow append
// (the log is synced to disk; a busy disk took up to 0.8 s in the
// benchmark) delays neither processing nor the next epoch's commit. The
// first append that fails is kept: the engine returns it at its next
// epoch end or when Run returns, and later epochs are no longer written
// (the log only trails Kafka's committed offsets, which stay the truth).
type epochWriter struct {
	e    *Engine
	jobs chan epochJob
	done chan struct{}

	mu  sync.Mutex
	err error
}

type epochJob struct {
	epoch    offsets.Epoch
	progress *continuous.Progress // nil: nothing to report
}

func newEpochWriter(e *Engine) *epochWriter {
	w := &epochWriter{e: e, jobs: make(chan epochJob, epochLogQueue), done: make(chan struct{})}
	go w.run()
	return w
}

func (w *epochWriter) run() {
	defer close(w.done)
	for j := range w.jobs {
		if w.failed() != nil {
			continue
		}
		var took time.Duration
		err := w.e.rt.Timed(runtime.PhaseEpochLog, &took, func() error {
			return w.e.cfg.EpochLog.AppendEpoch(context.Background(), j.epoch)
		})
		if err != nil {
			w.mu.Lock()
			w.err = fmt.Errorf("epoch log: %w", err)
			w.mu.Unlock()
			continue
		}
		if j.progress != nil {
			j.progress.Phases.EpochLog = took
			w.e.cfg.OnProgress(*j.progress)
		}
	}
}

// add queues a committed epoch; it waits only while the queue is full.
func (w *epochWriter) add(j epochJob) { w.jobs <- j }

// failed returns the error of the first append that failed, if any.
func (w *epochWriter) failed() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// drain writes what is queued and returns the first append's error.
func (w *epochWriter) drain() error {
	close(w.jobs)
	<-w.done
	return w.failed()
}
