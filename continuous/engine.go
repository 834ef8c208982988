package continuous

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/runtime"
	"github.com/weirstream/weir/processor"
)

// DefaultEpochInterval is the epoch length when none is set.
const DefaultEpochInterval = 100 * time.Millisecond

// Config configures the continuous engine.
type Config struct {
	// EpochInterval is how often the engine flushes outputs and commits
	// offsets (default 100 ms). It is also the resolution of wall-clock
	// punctuators.
	EpochInterval time.Duration
	// OnError receives the errors the engine survives: failed offset
	// commits (retried next epoch), consumer-group errors. If nil they are
	// logged.
	OnError func(error)
}

// Engine runs a topology in continuous mode on the members of a consumer
// group. Create it with New; Run it once.
type Engine struct {
	rt  *runtime.Runtime
	cfg Config

	// barrier separates processing from epoch ends: claims hold it shared
	// while they process a record, an epoch end holds it exclusively, so
	// the offsets it commits are exactly those of the records whose outputs
	// it flushed.
	barrier sync.RWMutex
	session atomic.Pointer[kafka.Session]
	epochs  atomic.Int64
}

// New returns an engine for the runtime.
func New(rt *runtime.Runtime, cfg Config) (*Engine, error) {
	if rt == nil {
		return nil, errors.New("continuous: nil runtime")
	}
	if cfg.EpochInterval == 0 {
		cfg.EpochInterval = DefaultEpochInterval
	}
	if cfg.EpochInterval < time.Millisecond {
		return nil, fmt.Errorf("continuous: epoch interval %v is below 1ms", cfg.EpochInterval)
	}
	return &Engine{rt: rt, cfg: cfg}, nil
}

// Epochs returns the number of epochs ended so far.
func (e *Engine) Epochs() int64 { return e.epochs.Load() }

// Run prepares the topics, joins the consumer group and processes until ctx
// is done (a graceful stop: the last epoch is committed) or a fatal error
// occurs. It returns after every goroutine it started has ended.
func (e *Engine) Run(ctx context.Context) error {
	if err := e.rt.Prepare(ctx); err != nil {
		return err
	}
	group, err := kafka.NewGroup(e.rt.GroupConfig(false, e.report))
	if err != nil {
		return fmt.Errorf("continuous: %w", err)
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	var wg sync.WaitGroup
	wg.Go(func() {
		if err := e.coordinate(runCtx); err != nil {
			cancel(err)
		}
	})
	err = group.Run(runCtx, kafka.HandlerFunc(e.claim))
	cancel(nil)
	wg.Wait()
	if cause := context.Cause(runCtx); err == nil && cause != nil && !errors.Is(cause, context.Canceled) {
		err = cause
	}
	if err != nil {
		return fmt.Errorf("continuous: %w", err)
	}
	return nil
}

// coordinate ends an epoch every interval until ctx is done.
func (e *Engine) coordinate(ctx context.Context) error {
	tick := time.NewTicker(e.cfg.EpochInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			s := e.session.Load()
			if s == nil {
				continue
			}
			if err := e.endEpoch(ctx, *s); err != nil {
				return err
			}
		}
	}
}

// claim processes one partition until its claim ends, then ends the epoch so
// that the partition is released with everything processed committed.
func (e *Engine) claim(ctx context.Context, c kafka.Claim) error {
	var s kafka.Session = c
	e.session.Store(&s)
	sub, ok := e.rt.Plan().Subtopology[c.Topic()]
	if !ok {
		return fmt.Errorf("continuous: claimed topic %q is not read by the topology", c.Topic())
	}
	tasks := e.rt.Tasks()
	task, err := tasks.Acquire(ctx, processor.TaskID{Subtopology: sub, Partition: c.Partition()})
	if err != nil {
		return err
	}
	defer tasks.Release(task)
	for rec := range c.Records() {
		e.barrier.RLock()
		err := task.Process(ctx, rec)
		if err == nil {
			c.MarkOffset(rec.Topic, rec.Partition, rec.Offset+1)
		}
		e.barrier.RUnlock()
		if err != nil {
			// Commit what came before the failing record, then stop.
			return errors.Join(err, e.endEpoch(ctx, c))
		}
	}
	return e.endEpoch(ctx, c)
}

// endEpoch fires the wall-clock punctuators, waits until every output sent
// so far is acknowledged, and commits the offsets of the records processed.
// A delivery failure is fatal (the offsets are not committed, so a restart
// processes those records again); a failed commit is reported and retried
// at the next epoch.
func (e *Engine) endEpoch(ctx context.Context, s kafka.Session) error {
	e.barrier.Lock()
	defer e.barrier.Unlock()
	now := e.rt.Now()
	if err := e.rt.Tasks().Each(func(t *processor.Task) error { return t.PunctuateWallClock(now) }); err != nil {
		return fmt.Errorf("continuous: wall-clock punctuation: %w", err)
	}
	if err := e.rt.Producer().Flush(ctx); err != nil {
		return fmt.Errorf("continuous: flush outputs: %w", err)
	}
	if err := s.Commit(ctx); err != nil {
		e.report(fmt.Errorf("continuous: commit offsets (retried next epoch): %w", err))
		return nil
	}
	e.epochs.Add(1)
	return nil
}

func (e *Engine) report(err error) {
	if e.cfg.OnError != nil {
		e.cfg.OnError(err)
		return
	}
	e.rt.Logger().Warn("weir: continuous", "err", err)
}
