package runtime

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/offsets"
)

// ErrRewind is wrapped by Commit's (and Task.Process's) errors that the
// engine survives by rewinding: the open transaction was aborted (or its
// outcome is unknown and the producer was re-created), so every task must
// go back to the last committed offsets and drop its state — engines do
// that by ending the group session (claims restart at the committed
// offsets) and releasing the tasks (state is restored from the committed
// changelog). Under at-least-once Commit never returns it.
var ErrRewind = errors.New("runtime: epoch not committed; rewind to the committed offsets")

// Positions are the next offsets to process, per partition.
type Positions map[offsets.TopicPartition]int64

// Commit makes everything the tasks wrote since the last Commit durable
// together with the consumer offsets in positions, for the member session s.
//
// At-least-once: the producer is flushed (every output acknowledged), then
// the offsets are committed. A delivery failure is returned (fatal: the
// offsets stay uncommitted, so a restart processes those records again); a
// failed offset commit wraps ErrCommitLater: the engine reports it and the
// next Commit carries the offsets. The staged state is then kept, not
// applied: the usual cause is a rebalance, and a member that lost its
// partitions (stalled past its session timeout, say) must not write its
// state to Badger with a checkpoint taken after the new owner's changelog
// records — a later restore from that checkpoint would skip them and
// resume from stale state. A member that kept its partitions applies the
// kept state with its next successful commit; one that lost them releases
// the tasks, which drops it.
//
// Exactly-once: the open transaction commits with the offsets inside it
// (see exactly_once.go); errors that abort it wrap ErrRewind.
//
// First every task's changelog is flushed: one record per key changed
// since the last Commit, with its latest value (processor's
// CoalesceChangelog), so the changelog holds the store's contents at every
// commit with fewer records than one per write. Outputs are not coalesced.
//
// Once Kafka has the epoch, the tasks' staged state writes move into
// Badger with their changelog checkpoints; after an abort they are dropped.
func (r *Runtime) Commit(ctx context.Context, positions Positions, s kafka.Session) (err error) {
	if hook := r.cfg.Hooks.Committed; hook != nil {
		start := time.Now()
		defer func() { hook(time.Since(start), err) }()
	}
	if err := r.flushChangelogs(ctx); err != nil {
		if errors.Is(err, ErrRewind) && r.txn != nil {
			r.dropStaged()
			return r.txn.recover(ctx, err)
		}
		return err
	}
	err = r.commitKafka(ctx, positions, s)
	if errors.Is(err, ErrRewind) {
		r.dropStaged()
		return err
	}
	if err != nil {
		return err // ErrCommitLater keeps the staged state for the next commit
	}
	return r.applyStaged(ctx)
}

func (r *Runtime) commitKafka(ctx context.Context, positions Positions, s kafka.Session) error {
	if r.txn != nil {
		return r.txn.commit(ctx, positions, s)
	}
	if err := r.producer.Flush(ctx); err != nil {
		return fmt.Errorf("runtime: flush outputs: %w", err)
	}
	if len(positions) == 0 || s == nil {
		return nil
	}
	for tp, next := range positions {
		s.MarkOffset(tp.Topic, tp.Partition, next)
	}
	if err := s.Commit(ctx); err != nil {
		return fmt.Errorf("%w: %w", ErrCommitLater, err)
	}
	return nil
}

// ErrCommitLater wraps an at-least-once offset commit that failed after the
// outputs were acknowledged: nothing is lost, the next commit carries the
// offsets (and applies the state kept since).
var ErrCommitLater = errors.New("runtime: offsets not committed; the next commit carries them")

// Rewind ends a transaction that a Send doomed (an error wrapping
// ErrRewind from Task.Process): it is aborted, or the producer re-created,
// and a new one begins. The engine then rewinds its tasks. Under
// at-least-once there is nothing to end.
func (r *Runtime) Rewind(ctx context.Context, cause error) error {
	r.dropStaged()
	if r.txn == nil {
		return nil
	}
	if err := r.txn.recover(ctx, cause); !errors.Is(err, ErrRewind) {
		return err
	}
	return nil
}

// Stopped reports an error that is only ctx ending: a stop, possibly while
// starting, restoring or re-initialising, which the engines' Run (and the
// App's) report as nil.
func Stopped(ctx context.Context, err error) bool {
	return ctx.Err() != nil && errors.Is(err, ctx.Err())
}
