package tasks

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/offsets"
	"github.com/weirstream/weir/processor"
)

// Mode is one engine's strategy on the Driver: what it does with each
// claimed partition and beside the claims. The continuous engine processes
// a claim's records as they come and ends epochs beside the claims; the
// micro-batch engine holds its claims and runs batches beside them.
type Mode interface {
	// Claim runs one claimed partition until its claim ends or ctx is
	// done. The driver has acquired the partition's task and tracks the
	// partition's lag; it releases both once Claim returns.
	Claim(ctx context.Context, c kafka.Claim, task *Task) error
	// Loop runs beside the claims until ctx is done, the mode is done (a
	// bounded trigger) or it fails; its error is Run's. The group stops,
	// and with it the claims, once it returns: after a graceful stop
	// (GracefulStop) its last commit still has a live group session.
	Loop(ctx context.Context) error
	// Finish takes what the mode left running once every claim has
	// returned; its error is Run's if nothing failed before. ctx is not
	// done.
	Finish(ctx context.Context) error
}

// DriverConfig names an engine and takes the errors it survives.
type DriverConfig struct {
	// Name prefixes the engine's errors ("continuous", "microbatch").
	Name string
	// LogName names the engine in its logs ("continuous", "micro-batch").
	LogName string
	// OnError receives the errors the engine survives; if nil they are
	// logged.
	OnError func(error)
}

// Driver is what the engines share, as raft's StartNode and RestartNode
// share one run loop: it prepares the topics, joins the consumer group,
// sets up every claim (its task, its lag) and runs the mode's loop beside
// the claims until a stop or a fatal error, and reports what the engine
// survives.
type Driver struct {
	rt  *Runtime
	cfg DriverConfig
	// session is the newest claim's group session.
	session atomic.Pointer[kafka.Session]
}

// NewDriver returns a driver of an engine over rt.
func NewDriver(rt *Runtime, cfg DriverConfig) *Driver {
	return &Driver{rt: rt, cfg: cfg}
}

// Run prepares the topics, joins the consumer group and runs m — its
// claims and, beside them, its loop — until ctx is done (nil: a graceful
// stop), the loop is done, or a fatal error: the loop's, the group's (no
// rejoin cures it), or Finish's, in that order. It returns after every
// goroutine it started has ended.
func (d *Driver) Run(ctx context.Context, m Mode) error {
	if err := d.rt.Prepare(ctx); err != nil {
		if Stopped(ctx, err) {
			return nil
		}
		return err
	}
	group, err := kafka.NewGroup(d.rt.groupConfig(d.Report))
	if err != nil {
		return fmt.Errorf("%s: %w", d.cfg.Name, err)
	}
	// The loop stops with ctx (or the group's failure); the group only
	// once the loop returned, so that a graceful stop's last commit
	// (GracefulStop) runs in a live group session: one that completes a
	// rebalance under way — under the cooperative protocol the member
	// rejoins while it keeps its claims — where a session stopped with
	// ctx stays at a generation the coordinator has left, every commit is
	// refused (ILLEGAL_GENERATION), and the next owners process again
	// what the member processed since its last commit (at-least-once: on
	// state restored from the changelog, counted twice).
	loopCtx, cancelLoop := context.WithCancelCause(ctx)
	defer cancelLoop(nil)
	groupCtx, stopGroup := context.WithCancel(context.WithoutCancel(ctx))
	defer stopGroup()
	var wg sync.WaitGroup
	wg.Go(func() {
		claim := func(ctx context.Context, c kafka.Claim) error { return d.Claim(ctx, c, m) }
		if err := group.Run(groupCtx, kafka.HandlerFunc(claim)); err != nil {
			cancelLoop(err)
		}
	})
	err = m.Loop(loopCtx)
	cancelLoop(nil)
	stopGroup()
	wg.Wait()
	if cause := context.Cause(loopCtx); err == nil && cause != nil && !errors.Is(cause, context.Canceled) {
		err = cause
	}
	if ferr := m.Finish(context.WithoutCancel(ctx)); err == nil {
		err = ferr
	}
	if err != nil && !Stopped(ctx, err) {
		return fmt.Errorf("%s: %w", d.cfg.Name, err)
	}
	return nil
}

// GracefulStop reports whether ctx, a Loop's, ended with a stop rather
// than with the group's failure: the group session is then still live
// (Run stops the group once Loop returned), for a last commit.
func GracefulStop(ctx context.Context) bool {
	return ctx.Err() != nil && errors.Is(context.Cause(ctx), ctx.Err())
}

// Claim sets up a claimed partition and runs m on it: the claim's session
// becomes the newest (Session), the partition's task is acquired (waiting
// for its previous owner to release it, restoring its state) and its lag
// tracked from the claim's initial offset.
func (d *Driver) Claim(ctx context.Context, c kafka.Claim, m Mode) error {
	var s kafka.Session = c
	d.session.Store(&s)
	sub, ok := d.rt.Plan().Subtopology[c.Topic()]
	if !ok {
		return fmt.Errorf("%s: claimed topic %q is not read by the topology", d.cfg.Name, c.Topic())
	}
	tasks := d.rt.Tasks()
	task, err := tasks.AcquireIn(ctx, processor.TaskID{Subtopology: sub, Partition: c.Partition()}, c)
	if err != nil {
		return err
	}
	defer tasks.Release(task)
	tp := offsets.TopicPartition{Topic: c.Topic(), Partition: c.Partition()}
	d.rt.Track(tp, c.InitialOffset(), c.HighWaterMarkOffset())
	defer d.rt.untrack(tp)
	return m.Claim(ctx, c, task)
}

// claimMembership is the membership a claim acquires its task in, read
// once: the member's id and generation, or generation -1 when the member
// is out of its group. franz-go keeps the member's last generation with
// an empty member id once the coordinator answered UNKNOWN_MEMBER_ID, and
// a claim started then — the claims of its last assignment start again at
// once after a rewind ended them — is a zombie's: its task must not write
// as the partition's owner (see Task.outOfGroup).
func claimMembership(s kafka.Session) kafka.GroupMetadata {
	md := s.GroupMetadata()
	md.MemberID, md.GenerationID = s.MemberID(), s.GenerationID()
	if md.MemberID == "" {
		md.GenerationID = -1
	}
	return md
}

// Session returns the group session of the newest claim, nil before the
// first.
func (d *Driver) Session() kafka.Session {
	if s := d.session.Load(); s != nil {
		return *s
	}
	return nil
}

// Report hands an error the engine survives to OnError, or logs it.
func (d *Driver) Report(err error) {
	if d.cfg.OnError != nil {
		d.cfg.OnError(err)
		return
	}
	d.rt.Logger().Warn("weir: "+d.cfg.LogName, "err", err)
}
