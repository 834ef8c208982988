// Package batches is the micro-batch engine: it runs a topology in batches
// of planned offset ranges, each plan written to a write-ahead log before
// its batch runs. Package microbatch documents the mode and holds what its
// users configure and receive (Config, Trigger, Record, Progress); weir.App
// runs the engine.
package batches

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/statedir"
	"github.com/weirstream/weir/microbatch"
	"github.com/weirstream/weir/offsets"
	"github.com/weirstream/weir/processor"
)

// Engine runs a topology in micro-batches. Create it with New; Run it once.
type Engine struct {
	rt Runtime // the role of the runtime this engine uses
	// appID is the runtime's application id (fixed before New), which
	// names the internal topics.
	appID string
	drv   *tasks.Driver
	wal   *offsets.WAL
	cfg   microbatch.Config

	mu      sync.Mutex
	sources map[offsets.TopicPartition]*source
	stopped bool
	changed chan struct{} // a source came or its claim ended
	// arrived is signalled when a claim's consumer fetches a record: the
	// input grew, and an idle batch loop plans again (idle).
	arrived chan struct{}

	outMu sync.Mutex
	out   []microbatch.Record // ForEachBatch records of the running batch

	// Batch loop state, owned by Run's goroutine.
	next      int64
	lastStart time.Time
	targets   map[offsets.TopicPartition]int64 // AvailableNow: ends at first sight
	// groupTargets are the ends of every partition of the external source
	// topics when an AvailableNow run started (bounded.go).
	groupTargets map[string]map[int32]int64
	avgSize      float64
	// sizes are the store row counts of the last progress that counted
	// them, at sizesAt (storeSizesEvery).
	sizes   []microbatch.StoreProgress
	sizesAt time.Time
	// commitLater is set while the offsets of a batch are not committed
	// (tasks.ErrCommitLater): the next batch's commit carries them, or,
	// when no batch comes, commitAgain (batch.go).
	commitLater bool
}

// New returns an engine for the runtime, logging batches to wal.
func New(rt *tasks.Runtime, wal *offsets.WAL, cfg microbatch.Config) (*Engine, error) {
	if rt == nil || wal == nil {
		return nil, errors.New("microbatch: nil runtime or write-ahead log")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 100 * time.Millisecond
	}
	// A batch's state writes reach Badger behind its commit, while the
	// next batch runs on top of them (runtime layers.go), as in
	// continuous mode.
	rt.ApplyStateBehind()
	return &Engine{
		rt:    rt,
		appID: rt.ApplicationID(),
		drv:   tasks.NewDriver(rt, tasks.DriverConfig{Name: "microbatch", LogName: "micro-batch", OnError: cfg.OnError}),
		wal:   wal, cfg: cfg,
		sources: map[offsets.TopicPartition]*source{},
		changed: make(chan struct{}, 1),
		arrived: make(chan struct{}, 1),
		targets: map[offsets.TopicPartition]int64{},
	}, nil
}

// Run prepares the topics, joins the consumer group and runs batches until
// ctx is done, a bounded trigger (Once, AvailableNow) is done, or a fatal
// error occurs. It returns after every goroutine it started has ended.
func (e *Engine) Run(ctx context.Context) error {
	if e.cfg.ForEachBatch != nil {
		e.rt.InterceptSinks(e.collect)
	}
	return e.drv.Run(ctx, e)
}

// Claim registers a claimed partition with the batch loop and holds it
// until the loop has committed its last batch (tasks.Mode).
func (e *Engine) Claim(ctx context.Context, c kafka.Claim, task *tasks.Task) error {
	s := newSource(c, task, e.arrived)
	if !e.register(s) {
		return nil
	}
	s.hold(ctx)
	e.signal()
	select {
	case <-s.released:
	case <-ctx.Done():
	}
	return nil
}

// Loop runs batches until the trigger is done or ctx ends, then releases
// every claim (tasks.Mode).
func (e *Engine) Loop(ctx context.Context) error {
	err := e.loop(ctx)
	e.stop()
	return err
}

// Finish returns the error of a committed batch's state that did not
// reach Badger, if any; every task's release waited for its layers
// (tasks.Mode).
func (e *Engine) Finish(context.Context) error { return e.rt.StateApplyFailed() }

func (e *Engine) register(s *source) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stopped {
		return false
	}
	if old, ok := e.sources[s.tp]; ok {
		old.release()
	}
	e.sources[s.tp] = s
	e.signal()
	return true
}

// signal wakes the batch loop.
func (e *Engine) signal() {
	select {
	case e.changed <- struct{}{}:
	default:
	}
}

// stop releases every source and refuses new ones.
func (e *Engine) stop() {
	e.mu.Lock()
	e.stopped = true
	e.mu.Unlock()
	e.releaseAll()
}

// snapshot returns the live sources, after releasing those whose claim
// ended (their last batch is committed by now).
func (e *Engine) snapshot() map[offsets.TopicPartition]*source {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[offsets.TopicPartition]*source, len(e.sources))
	for tp, s := range e.sources {
		if s.isClosed() {
			s.release()
			delete(e.sources, tp)
			continue
		}
		out[tp] = s
	}
	return out
}

// idle waits, while the engine has no source or after a plan that found
// no input, until a claimed partition receives a record, a source comes
// or goes, ctx is done, or PollInterval passes. Sleeping the whole
// interval made every record that came meanwhile wait it out (100 ms by
// default).
func (e *Engine) idle(ctx context.Context) {
	t := time.NewTimer(e.cfg.PollInterval)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-e.changed:
	case <-e.arrived:
	case <-t.C:
	}
}

// settle waits until no source has come for a moment, so that the first
// batch sees the whole first assignment.
func (e *Engine) settle(ctx context.Context) {
	for ctx.Err() == nil {
		t := time.NewTimer(200 * time.Millisecond)
		select {
		case <-ctx.Done():
		case <-e.changed:
			t.Stop()
			continue
		case <-t.C:
		}
		return
	}
}

// loop runs batches until the trigger is done or ctx ends. After an aborted
// transaction it rewinds: every claim is released (which ends the group
// session), and the batches go on with the claims of the next session,
// starting with the recovery of the batch that did not commit.
func (e *Engine) loop(ctx context.Context) error {
	for ctx.Err() == nil {
		done, err := e.session(ctx)
		switch {
		case errors.Is(err, tasks.ErrRewind):
			e.report(fmt.Errorf("microbatch: rewinding to the committed offsets: %w", err))
			e.releaseAll()
		case statedir.NoSpace(err):
			// A write-ahead log write failed for a full volume: before
			// the batch ran (its plan), or after its Kafka commit (its
			// commit record, which recovery writes again). Either way
			// the next session starts from the committed offsets, once
			// the volume has room (WaitForDisk), never the process.
			e.report(fmt.Errorf("microbatch: state volume full; rewinding to the committed offsets: %w", err))
			e.releaseAll()
			e.sleep(ctx, time.Second)
		case err != nil || done:
			return err
		}
	}
	return nil
}

// session runs batches on the current claims until the trigger is done
// (true), ctx ends, or an error.
func (e *Engine) session(ctx context.Context) (bool, error) {
	for len(e.snapshot()) == 0 {
		if ctx.Err() != nil {
			return false, nil
		}
		e.idle(ctx)
	}
	e.settle(ctx)
	if ctx.Err() != nil {
		return false, nil
	}
	if err := e.readGroupTargets(ctx); err != nil {
		return false, err
	}
	// A volume nearly full takes no batch (tasks.WaitForDisk): Badger's
	// writes must not run past its end.
	if err := e.rt.WaitForDisk(ctx); err != nil {
		return false, nil // ctx ended
	}
	replayed, err := e.recover(ctx, e.snapshot())
	if err != nil {
		return false, err
	}
	if replayed && e.cfg.Trigger == microbatch.Once() {
		return true, nil // the replayed batch was the one batch
	}
	for ctx.Err() == nil {
		if interval := e.cfg.Trigger.Interval(); interval > 0 && !e.lastStart.IsZero() {
			if d := time.Until(e.lastStart.Add(interval)); d > 0 {
				e.sleep(ctx, d)
				continue
			}
		}
		if err := e.rt.WaitForDisk(ctx); err != nil {
			return false, nil // ctx ended
		}
		srcs := e.snapshot()
		plan, err := e.plan(ctx, srcs)
		if err != nil {
			if ctx.Err() != nil {
				return false, nil
			}
			return false, err
		}
		if len(plan.Ranges) == 0 {
			if err := e.commitAgain(ctx, srcs); err != nil {
				if ctx.Err() != nil {
					return false, nil
				}
				return false, err
			}
			if bounded(e.cfg.Trigger) && len(srcs) > 0 {
				switch done, err := e.finished(ctx, srcs); {
				case err != nil && ctx.Err() == nil:
					return false, err
				case err == nil && done:
					return true, nil // nothing left of what was available
				}
			}
			e.idle(ctx)
			continue
		}
		if err := e.runBatch(ctx, plan, srcs, false); err != nil {
			if ctx.Err() != nil {
				return false, nil
			}
			return false, err
		}
		if e.cfg.Trigger == microbatch.Once() {
			return true, nil
		}
	}
	return false, nil
}

// bounded reports whether the trigger stops by itself.
func bounded(t microbatch.Trigger) bool {
	return t == microbatch.Once() || t == microbatch.AvailableNow()
}

// sleep waits for d or until ctx ends.
func (e *Engine) sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// releaseAll lets every claim return: the group session ends, and the next
// one's claims start at the committed offsets.
func (e *Engine) releaseAll() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for tp, s := range e.sources {
		s.release()
		delete(e.sources, tp)
	}
}

// collect gathers sink records for ForEachBatch.
func (e *Engine) collect(_ context.Context, r kafka.Record) error {
	var hs []processor.Header
	for _, h := range r.Headers {
		hs = append(hs, processor.Header{Key: h.Key, Value: h.Value})
	}
	e.outMu.Lock()
	e.out = append(e.out, microbatch.Record{Topic: r.Topic, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp, Headers: hs})
	e.outMu.Unlock()
	return nil
}

func (e *Engine) takeCollected() []microbatch.Record {
	e.outMu.Lock()
	defer e.outMu.Unlock()
	out := e.out
	e.out = nil
	return out
}

func (e *Engine) report(err error) { e.drv.Report(err) }
