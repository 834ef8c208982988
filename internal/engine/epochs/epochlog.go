package epochs

import (
	"context"
	"fmt"
	"time"

	"github.com/weirstream/weir/continuous"
	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/statedir"
	"github.com/weirstream/weir/offsets"
)

// epochLogQueue is how many committed epochs may wait for the epoch log
// before an epoch end waits for room (tens of seconds of epochs).
const epochLogQueue = 256

// epochWriter appends committed epochs to the epoch log in order, on a
// goroutine of its own (tasks.Behind), and then reports their progress:
// a slow append (the log is synced to disk; a busy disk took up to 0.8 s
// in the benchmark) delays neither processing nor the next epoch's
// commit. An append that fails for a full volume is skipped, with a
// WARN. The first append that fails otherwise is kept: the engine returns it at
// its next epoch end or when Run returns, and later epochs are no longer
// written (the log only trails Kafka's committed offsets, which stay the
// truth).
type epochWriter struct {
	e *Engine
	q *tasks.Behind
}

type epochJob struct {
	epoch    offsets.Epoch
	progress *continuous.Progress // nil: nothing to report
}

func newEpochWriter(e *Engine) *epochWriter {
	return &epochWriter{e: e, q: tasks.NewBehind(epochLogQueue)}
}

// add queues a committed epoch; it waits only while the queue is full.
func (w *epochWriter) add(j epochJob) {
	w.q.Add(func() error {
		var took time.Duration
		err := w.e.rt.Timed(tasks.PhaseEpochLog, &took, func() error {
			return w.e.cfg.EpochLog.AppendEpoch(context.Background(), j.epoch)
		})
		if statedir.NoSpace(err) {
			// The log trails Kafka's committed offsets, which stay the
			// truth: an epoch it misses for a full volume is a gap in
			// what `weir inspect` shows, not a reason to stop.
			w.e.rt.Logger().Warn("weir: epoch log: volume full; epoch not logged", "epoch", j.epoch.Epoch, "err", err)
			err = nil
		}
		if err != nil {
			return fmt.Errorf("epoch log: %w", err)
		}
		if j.progress != nil {
			j.progress.Phases.EpochLog = took
			w.e.cfg.OnProgress(*j.progress)
		}
		return nil
	})
}

// failed returns the error of the first append that failed, if any.
func (w *epochWriter) failed() error { return w.q.Err() }

// drain writes what is queued and returns the first append's error.
func (w *epochWriter) drain() error { return w.q.Join() }
