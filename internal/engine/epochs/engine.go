// Package epochs is the continuous engine: every claimed partition is
// processed record by record, and every epoch interval an epoch ends and
// commits. Package continuous documents the mode and holds what its users
// receive (Progress); weir.App runs the engine.
package epochs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir/continuous"
	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/offsets"
	"github.com/weirstream/weir/processor"
)

// Config configures the continuous engine.
type Config struct {
	// EpochInterval is how often the engine flushes outputs and commits
	// offsets (default 100 ms). It is also the resolution of wall-clock
	// punctuators.
	EpochInterval time.Duration
	// OnError receives the errors the engine survives: failed offset
	// commits (retried next epoch), aborted transactions (rewound),
	// consumer-group errors. If nil they are logged.
	OnError func(error)
	// EpochLog, if set, receives an entry per committed epoch: the epoch
	// number and the next offset of every partition (the "write-after
	// log"). Optional.
	EpochLog *offsets.WAL
	// OnProgress, if set, receives the progress of every committed epoch
	// that processed records, in epoch order. It is called after the
	// epoch's commit and its epoch log append, while processing goes on:
	// keep it quick, it delays the reports (and appends) behind it.
	OnProgress func(continuous.Progress)
}

// Engine runs a topology in continuous mode on the members of a consumer
// group. Create it with New; Run it once.
type Engine struct {
	rt  Runtime // the role of the runtime this engine uses
	drv *tasks.Driver
	cfg Config
	// externalSinks: the topology writes to external sinks, which write
	// in the commit, under the barrier (the runtime's configuration, fixed
	// before New).
	externalSinks bool

	// barrier separates processing from epoch ends: claims hold it shared
	// while they process a record, an epoch end holds it exclusively while
	// it cuts the epoch, so the offsets it commits are exactly those of the
	// records whose outputs it commits.
	barrier sync.RWMutex
	epochs  atomic.Int64
	// rows counts the records processed in the open epoch; lastEnd is
	// when the previous epoch ended (guarded by the exclusive barrier).
	rows    atomic.Int64
	lastEnd time.Time

	// pos holds a slot per claimed partition with the next offset to
	// process, zero until the claim processed a record (since it started,
	// or since a rewind). The map is guarded by posMu; a claim stores into
	// its own slot under the shared barrier, epoch ends read the slots
	// under the exclusive one — no lock or map write per record.
	posMu sync.Mutex
	pos   map[offsets.TopicPartition]*atomic.Int64

	// rewind is closed to make every claim return at once, without
	// committing, after a transaction was aborted; a new channel replaces
	// it for the claims of the next session.
	rewindMu sync.Mutex
	rewind   chan struct{}

	// endMu serialises epoch ends: the coordinator's and the last one of
	// every claim. behind, guarded by it, is what the last epoch end left
	// running in the background (see endEpoch); nil if nothing.
	endMu  sync.Mutex
	behind *behindWork
	// log appends committed epochs to EpochLog (see epochWriter); started
	// by the first one, drained when Run returns. Set by the background
	// work, which runs one epoch at a time.
	log *epochWriter
}

// behindWork is the part of an epoch end that runs while the claims go on
// processing: the commit of an epoch cut under the barrier
// (tasks.CommitBehind: an at-least-once flush and offset commit, or an
// exactly-once transaction's commit), then the
// hand-over of its epoch to the epoch log (committed). The next epoch
// end, a claim's abort, or Run's return waits for it and takes its error.
type behindWork struct {
	ctx context.Context
	// bounded: the claims' sends are not held meanwhile (see lagging).
	bounded bool
	done    chan struct{}
	err     error
}

// New returns an engine that runs rt's tasks.
func New(rt *tasks.Runtime, cfg Config) (*Engine, error) {
	if rt == nil {
		return nil, errors.New("continuous: nil runtime")
	}
	if cfg.EpochInterval == 0 {
		cfg.EpochInterval = continuous.DefaultEpochInterval
	}
	if cfg.EpochInterval < time.Millisecond {
		return nil, fmt.Errorf("continuous: epoch interval %v is below 1ms", cfg.EpochInterval)
	}
	// An epoch's state writes reach Badger behind its commit, while the
	// claims process the next epoch on top of them (runtime layers.go).
	rt.ApplyStateBehind()
	return &Engine{
		rt:            rt,
		drv:           tasks.NewDriver(rt, tasks.DriverConfig{Name: "continuous", LogName: "continuous", OnError: cfg.OnError}),
		cfg:           cfg,
		externalSinks: rt.HasExternalSinks(),
		pos:           map[offsets.TopicPartition]*atomic.Int64{}, rewind: make(chan struct{}),
	}, nil
}

// Epochs returns the number of the last epoch committed (it goes on from
// the epoch log across restarts).
func (e *Engine) Epochs() int64 { return e.epochs.Load() }

// Run prepares the topics, joins the consumer group and processes until ctx
// is done (a graceful stop: the last epoch is committed) or a fatal error
// occurs. It returns after every goroutine it started has ended.
func (e *Engine) Run(ctx context.Context) error {
	if e.cfg.EpochLog != nil {
		last, ok, err := e.cfg.EpochLog.LatestEpoch()
		if err != nil {
			return fmt.Errorf("continuous: epoch log: %w", err)
		}
		if ok {
			e.epochs.Store(last.Epoch) // epoch numbers go on across restarts
		}
	}
	return e.drv.Run(ctx, e)
}

// Loop ends an epoch every interval until ctx is done (tasks.Mode).
func (e *Engine) Loop(ctx context.Context) error { return e.coordinate(ctx) }

// Finish drains what the last epoch end left running: its epoch log
// append, or the error of its commit, is not dropped, nor a committed
// state layer that did not reach Badger (tasks.Mode).
func (e *Engine) Finish(ctx context.Context) error {
	e.endMu.Lock()
	defer e.endMu.Unlock()
	_, err := e.settle(ctx, false)
	if e.log != nil {
		err = errors.Join(err, e.log.drain())
		e.log = nil
	}
	return errors.Join(err, e.rt.StateApplyFailed())
}

// coordinate ends an epoch every interval until ctx is done, and a last
// one after a graceful stop (lastEpoch).
func (e *Engine) coordinate(ctx context.Context) error {
	tick := time.NewTicker(e.cfg.EpochInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return e.lastEpoch(ctx)
		case <-tick.C:
			s := e.drv.Session()
			if s == nil {
				continue
			}
			if e.rt.DiskLow() != nil && e.pauseForDisk(ctx) != nil {
				return e.lastEpoch(ctx)
			}
			if err := e.endEpoch(ctx, s, true); err != nil {
				return err
			}
		}
	}
}

// pauseForDisk stops the claims (the barrier held) while the state
// volume's free space is below the minimum (tasks.WaitForDisk), and
// ends no epoch meanwhile: an epoch end writes its state into Badger,
// whose mmap'd writes past the end of a full volume end the process. The
// records processed before the pause stay staged, and commit with the
// next epoch end; under exactly-once a pause longer than the transaction
// timeout has the broker abort the transaction, and that epoch end
// rewinds. It returns ctx's error if ctx ends first.
func (e *Engine) pauseForDisk(ctx context.Context) error {
	e.barrier.Lock()
	defer e.barrier.Unlock()
	return e.rt.WaitForDisk(ctx)
}

// lastEpoch ends a last epoch after a graceful stop, committing under the
// barrier what the claims processed, while the group session is still
// live (tasks.Driver stops the group once Loop returned): a rebalance
// under way when the stop came completes meanwhile, and the epoch commits
// in the generation it reached. The claims' own last commits, once the
// group stopped, cover only what they process meanwhile; alone, they are
// refused whenever the stop finds the member between a rebalance's
// JoinGroup and its session's new generation, and everything the member
// had processed is processed again by the next owners (at-least-once, on
// state restored from the changelog: counted twice).
func (e *Engine) lastEpoch(ctx context.Context) error {
	s := e.drv.Session()
	if s == nil || !tasks.GracefulStop(ctx) {
		return nil
	}
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lastEpochTimeout)
	defer cancel()
	err := e.endEpoch(lctx, s, false)
	if err == nil || lctx.Err() == nil || errors.Is(err, tasks.ErrOutputFatal) {
		return err
	}
	// Its outputs did not reach Kafka in time (a broker outage): nothing
	// of the epoch is committed, and the next owners process it again —
	// not the application's failure. Nor may the claims' own last commits
	// wait out the same outage: every claim rewinds and returns at once,
	// and the producer's close fails what it still holds.
	e.barrier.Lock()
	defer e.barrier.Unlock()
	return e.abortLocked(lctx, fmt.Errorf("%w: the last epoch did not commit within %v: %w", tasks.ErrRewind, lastEpochTimeout, err))
}

// lastEpochTimeout bounds lastEpoch.
const lastEpochTimeout = 30 * time.Second

// Claim processes one partition until its claim ends, then ends the epoch so
// that the partition is released with everything processed committed. After
// an aborted transaction it returns at once instead: that ends the group
// session, and the claims of the next one start again at the committed
// offsets, with state restored from the committed changelog (tasks.Mode).
func (e *Engine) Claim(ctx context.Context, c kafka.Claim, task *tasks.Task) error {
	tp := offsets.TopicPartition{Topic: c.Topic(), Partition: c.Partition()}
	pos := e.slot(tp)
	defer e.forget(tp, pos)
	rewind := e.rewindSignal()
	records := c.Records()
	for n := 0; ; n++ {
		var rec kafka.Record
		open := true
		select { // fast path: a record waits (no two-channel select)
		case rec, open = <-records:
		default:
			select {
			case <-rewind:
				return nil
			case rec, open = <-records:
			}
		}
		if !open {
			select {
			case <-rewind:
				return nil // the last epoch rewound (lastEpoch): nothing to commit
			default:
			}
			return e.cutOff(ctx, tp, e.endEpoch(ctx, c, false), rewind)
		}
		e.barrier.RLock()
		select {
		case <-rewind:
			// Rewound while this record waited: its session is over;
			// processing it would put it in the next transaction.
			e.barrier.RUnlock()
			return nil
		default:
		}
		err := task.Process(ctx, rec)
		if err == nil {
			pos.Store(rec.Offset + 1)
			e.rows.Add(1)
			// The lag, for metrics and health: exact whenever the
			// claim caught up with what was fetched, at most
			// trackEvery records old while it has not.
			if n%trackEvery == 0 || len(records) == 0 {
				e.rt.Track(tp, rec.Offset+1, c.HighWaterMarkOffset())
			}
		}
		e.barrier.RUnlock()
		switch {
		case errors.Is(err, tasks.ErrRewind):
			return e.abort(ctx, err, rewind)
		case err != nil:
			// Commit what came before the failing record, then stop.
			return e.cutOff(ctx, tp, errors.Join(err, e.endEpoch(ctx, c, false)), rewind)
		}
	}
}

// cutOff returns err, unless the group cut the claim off: a revoked claim
// that has not ended its epoch within the rebalance timeout (its producer
// waiting out a broker's outage, say) has its context cancelled, and the
// send or flush that was waiting fails with it. Its partition is another
// member's by then. That is not the application's failure but the epoch's:
// every task rewinds to the committed offsets (the transaction is aborted)
// and the member rejoins, as Kafka Streams' threads do when they lose a
// task they were committing. Returning the error instead would stop the
// member ("output not sent: … context canceled") for a broker's outage.
func (e *Engine) cutOff(ctx context.Context, tp offsets.TopicPartition, err error, session <-chan struct{}) error {
	if err == nil || ctx.Err() == nil {
		return err
	}
	cause := fmt.Errorf("%w: the claim of %s/%d outlived the rebalance timeout: %w", tasks.ErrRewind, tp.Topic, tp.Partition, err)
	// The claim's context is done; ending the transaction needs one that
	// is not.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cutOffGrace)
	defer cancel()
	return e.abort(rctx, cause, session)
}

// cutOffGrace bounds the abort (or the producer's re-creation) after a
// claim was cut off.
const cutOffGrace = 30 * time.Second

// trackEvery is how many records a claim processes between updates of
// its lag while records wait in its channel.
const trackEvery = 256

// slot registers a claim of tp and returns its position slot.
func (e *Engine) slot(tp offsets.TopicPartition) *atomic.Int64 {
	s := new(atomic.Int64)
	e.posMu.Lock()
	e.pos[tp] = s
	e.posMu.Unlock()
	return s
}

// forget removes the slot s of a claim of tp that ended, unless a newer
// claim of tp replaced it.
func (e *Engine) forget(tp offsets.TopicPartition, s *atomic.Int64) {
	e.posMu.Lock()
	if e.pos[tp] == s {
		delete(e.pos, tp)
	}
	e.posMu.Unlock()
}

func (e *Engine) positions() tasks.Positions {
	e.posMu.Lock()
	defer e.posMu.Unlock()
	out := make(tasks.Positions, len(e.pos))
	for tp, s := range e.pos {
		if next := s.Load(); next > 0 {
			out[tp] = next
		}
	}
	return out
}

func (e *Engine) rewindSignal() <-chan struct{} {
	e.rewindMu.Lock()
	defer e.rewindMu.Unlock()
	return e.rewind
}

// endEpoch fires the wall-clock punctuators and commits: everything the
// tasks wrote since the last epoch together with the offsets of the records
// they processed (see tasks.Commit). A failed at-least-once offset commit
// is reported and carried by the next epoch; an aborted transaction
// rewinds.
//
// Processing stops (the exclusive barrier) only for as long as the epoch
// needs a consistent cut: the punctuators run and the positions are read
// under it. With behind set (the coordinator's epochs) and when the
// runtime can (tasks.CanCommitBehind), the epoch is then cut
// (tasks.CutBehind: the record caches and the changelogs are flushed —
// into the transaction under exactly-once, whose claims' sends are held
// from then on — and the staged state is frozen into a pending layer),
// the barrier is released, and the epoch commits in the background while
// the claims go on (tasks.CommitBehind): at-least-once, the flush and
// the offset commit; exactly-once, the transaction's commit, after which
// the held sends go into the next transaction. Once committed, the
// epoch's layer is applied behind (runtime layers.go). If the epoch
// rewinds (an aborted transaction, a member removed from its group), the
// next epoch end (or a claim whose send failed because of it) rewinds
// every claim under the barrier, dropping what they did since the cut; an
// at-least-once offset commit that failed keeps the layer pending for the
// next commit. A commit behind still running an interval after the next
// epoch end began stops the claims until it ends (lagging). The epoch log append and the progress report always run in
// the background (epochWriter, in order; the next commit does not wait
// for them). Background work is one epoch at a time, in order: each
// epoch end first waits for the previous one's and takes its error
// (settle), as does Run on its return, which also drains the epoch log.
// A claim ending (behind false) commits everything under the barrier
// before its partition is released.
func (e *Engine) endEpoch(ctx context.Context, s kafka.Session, behind bool) error {
	e.endMu.Lock()
	defer e.endMu.Unlock()
	var ph tasks.Phases
	var locked time.Time
	lock := func() {
		waitStart := time.Now()
		e.barrier.Lock()
		locked = time.Now()
		e.rt.ObservePhase(tasks.PhaseBarrierWait, &ph.BarrierWait, locked.Sub(waitStart))
	}
	// A commit behind that lags (a slow or failing broker) stops the
	// claims until it ends: they would otherwise run on for as long as the
	// broker is slow, and everything they process is duplicated if the
	// member crashes before a later epoch commits.
	early := e.lagging(e.cfg.EpochInterval)
	if early {
		lock()
	}
	waited := time.Now()
	rewound, err := e.settle(ctx, early)
	if early {
		e.rt.ObservePhase(tasks.PhaseCommitWait, &ph.CommitWait, time.Since(waited))
	}
	if rewound || err != nil {
		if early {
			e.barrier.Unlock()
		}
		return err
	}
	if !early {
		lock()
	}
	held := true
	unlock := func() {
		if held {
			held = false
			e.barrier.Unlock()
			e.rt.ObservePhase(tasks.PhasePaused, &ph.Paused, time.Since(locked))
		}
	}
	defer unlock()
	now := e.rt.Now()
	err = e.rt.Timed(tasks.PhasePunctuate, &ph.Punctuate, func() error {
		return e.rt.Tasks().Each(func(t *processor.Task) error { return t.PunctuateWallClock(now) })
	})
	if err != nil {
		if errors.Is(err, tasks.ErrRewind) {
			// A punctuator's Send doomed the transaction: end it (abort or
			// re-create the producer) as a claim's abort does, then rewind.
			if rerr := e.rt.Rewind(ctx, err); rerr != nil {
				return fmt.Errorf("continuous: %w", rerr)
			}
			return e.abortLocked(ctx, err)
		}
		return fmt.Errorf("continuous: wall-clock punctuation: %w", err)
	}
	pos := e.positions()
	if behind && e.rt.CanCommitBehind() && !e.externalSinks { // an external sink writes in Commit, under the barrier
		cut, err := e.rt.CutBehind(ctx, pos, s, &ph)
		switch {
		case errors.Is(err, tasks.ErrRewind):
			return e.abortLocked(ctx, err)
		case err != nil:
			return fmt.Errorf("continuous: %w", err)
		}
		rows, last := e.rows.Swap(0), e.lastEnd
		e.lastEnd = now
		unlock()
		e.goBehind(ctx, cut, func(bctx context.Context) error {
			start := time.Now()
			err := e.rt.CommitBehind(bctx, cut, s, &ph)
			took := time.Since(start)
			switch {
			case errors.Is(err, tasks.ErrCommitLater):
				e.rows.Add(rows) // the next epoch reports them
				return err
			case err != nil:
				return err
			}
			e.epochs.Add(1)
			return e.committed(now, pos, took, rows, last, &ph, true)
		})
		return nil
	}
	commitStart := time.Now()
	err = e.rt.CommitTimed(ctx, pos, s, &ph)
	took := time.Since(commitStart)
	switch {
	case errors.Is(err, tasks.ErrCommitLater):
		e.report(fmt.Errorf("continuous: %w", err))
		return nil
	case errors.Is(err, tasks.ErrRewind):
		return e.abortLocked(ctx, err)
	case err != nil:
		return fmt.Errorf("continuous: %w", err)
	}
	e.epochs.Add(1)
	rows, last := e.rows.Swap(0), e.lastEnd
	e.lastEnd = now
	unlock()
	if err := e.committed(now, pos, took, rows, last, &ph, false); err != nil {
		return fmt.Errorf("continuous: %w", err)
	}
	return nil
}

// goBehind runs fn, the commit behind of cut, in the background as the
// epoch's behindWork. Its context is ctx, but the epoch log append is not
// cut short by a stop; nor is the commit for the cut's StopGrace (under
// exactly-once, a transaction's commit cut short would leave its outcome
// unknown, and the records held for the next transaction unsent).
func (e *Engine) goBehind(ctx context.Context, cut *tasks.EpochCut, fn func(context.Context) error) {
	w := &behindWork{ctx: ctx, bounded: !cut.HoldsSends(), done: make(chan struct{})}
	e.behind = w
	fctx, cancel := ctx, context.CancelFunc(func() {})
	if grace := cut.StopGrace(); grace > 0 {
		fctx, cancel = afterStop(ctx, grace)
	}
	go func() {
		defer close(w.done)
		defer cancel()
		w.err = fn(fctx)
	}()
}

// afterStop returns a context that ends grace after ctx does (a timer
// left running once cancel was called only cancels again: harmless).
func afterStop(ctx context.Context, grace time.Duration) (context.Context, context.CancelFunc) {
	c, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(grace, cancel) })
	return c, func() {
		stop()
		cancel()
	}
}

// settle waits for the background work of the previous epoch end and
// takes its outcome: a deferred offset commit is reported (the next
// commit carries it, and applies the state it kept), a member removed
// from its group or an aborted transaction rewinds (rewound true: the
// epoch end in progress has nothing to commit; what the claims did since
// the cut is dropped, tasks.RewindBehind), a commit cut short by a stop
// is left to the claims' last commits (an at-least-once one keeps its
// state for them), any other error is returned (fatal). The caller holds
// endMu, and the exclusive barrier if locked.
func (e *Engine) settle(ctx context.Context, locked bool) (rewound bool, err error) {
	w := e.behind
	if w == nil {
		return false, nil
	}
	<-w.done
	e.behind = nil
	switch err := w.err; {
	case err == nil:
		return false, nil
	case errors.Is(err, tasks.ErrCommitLater):
		e.report(fmt.Errorf("continuous: %w", err))
		return false, nil
	case errors.Is(err, tasks.ErrRewind):
		// Sends waiting for room among the records held (holding the
		// barrier shared) were woken by the failure: the barrier comes.
		if !locked {
			e.barrier.Lock()
			defer e.barrier.Unlock()
		}
		e.rt.RewindBehind(err)
		return true, e.abortLocked(ctx, err)
	case w.ctx.Err() != nil && tasks.Stopped(w.ctx, err):
		return false, nil
	default:
		return false, fmt.Errorf("continuous: %w", err)
	}
}

// lagging reports whether a bounded commit behind (at-least-once) is
// still running grace after the epoch end that follows it began: the
// epoch end then takes the barrier before it waits for that commit, which
// bounds what the claims process beyond the last committed epoch to about
// three epoch intervals (the duplicates a crash makes) and costs nothing
// while commits keep up. A commit behind whose cut holds the claims' sends
// (tasks.EpochCut.HoldsSends: exactly-once, the next transaction's
// records, a bounded buffer that an abort drops) needs no bound. The
// caller holds endMu.
func (e *Engine) lagging(grace time.Duration) bool {
	w := e.behind
	if w == nil || !w.bounded {
		return false
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-w.done:
		return false
	case <-t.C:
		return true
	}
}

// committed hands a committed epoch to the epoch log's writer, which
// appends it and then reports its progress (without an epoch log the
// progress is reported at once). It returns the error of an earlier
// append that failed: the engine stops.
func (e *Engine) committed(now time.Time, pos tasks.Positions, took time.Duration,
	rows int64, last time.Time, ph *tasks.Phases, behind bool) error {
	n := e.epochs.Load()
	if ph.Paused >= e.cfg.EpochInterval {
		e.rt.Logger().Info("weir: continuous: epoch end paused processing", "epoch", n, "phases", continuous.Phases(*ph))
	}
	var p *continuous.Progress
	if rows > 0 && e.cfg.OnProgress != nil {
		p = &continuous.Progress{Epoch: n, Timestamp: now, NumInputRows: rows, CommitDuration: took,
			CommittedBehind: behind, Phases: continuous.Phases(*ph)}
		if d := now.Sub(last).Seconds(); !last.IsZero() && d > 0 {
			p.InputRowsPerSecond = float64(rows) / d
		}
		for _, o := range epochRecord(0, now, pos).Offsets {
			p.Partitions = append(p.Partitions, continuous.PartitionProgress{Topic: o.Topic, Partition: o.Partition, Next: o.Next})
		}
	}
	if e.cfg.EpochLog == nil || len(pos) == 0 {
		if p != nil {
			e.cfg.OnProgress(*p)
		}
		return nil
	}
	if e.log == nil {
		e.log = newEpochWriter(e)
	}
	e.log.add(epochJob{epoch: epochRecord(n, now, pos), progress: p})
	return e.log.failed()
}

// abort rewinds after a Send doomed the transaction (see claim), unless
// another claim already rewound the session the claim belongs to.
//
// It first settles the commit running behind, if any: the transaction is
// not ended twice at once, and if that commit failed its rewind is this
// one (the claim's Send failed because of it).
func (e *Engine) abort(ctx context.Context, cause error, session <-chan struct{}) error {
	e.endMu.Lock()
	defer e.endMu.Unlock()
	if rewound, err := e.settle(ctx, false); rewound || err != nil {
		return err
	}
	e.barrier.Lock()
	defer e.barrier.Unlock()
	select {
	case <-session:
		return nil
	default:
	}
	if err := e.rt.Rewind(ctx, cause); err != nil {
		return fmt.Errorf("continuous: %w", err)
	}
	return e.abortLocked(ctx, cause)
}

// abortLocked makes every claim return without committing (see claim),
// with the transaction already ended.
func (e *Engine) abortLocked(_ context.Context, cause error) error {
	e.report(fmt.Errorf("continuous: rewinding every task to the committed offsets: %w", cause))
	e.rewindMu.Lock()
	select {
	case <-e.rewind:
	default:
		close(e.rewind)
	}
	e.rewind = make(chan struct{})
	e.rewindMu.Unlock()
	e.posMu.Lock()
	for _, s := range e.pos {
		s.Store(0) // nothing processed since the committed offsets
	}
	e.posMu.Unlock()
	e.rows.Store(0)
	return nil
}

// epochRecord is the epoch log entry of a committed epoch.
func epochRecord(n int64, at time.Time, pos tasks.Positions) offsets.Epoch {
	ep := offsets.Epoch{Epoch: n, Timestamp: at}
	for tp, next := range pos {
		ep.Offsets = append(ep.Offsets, offsets.PartitionOffset{TopicPartition: tp, Next: next})
	}
	slices.SortFunc(ep.Offsets, func(a, b offsets.PartitionOffset) int { return a.Compare(b.TopicPartition) })
	return ep
}

func (e *Engine) report(err error) { e.drv.Report(err) }
