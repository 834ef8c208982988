package batches

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/microbatch"
	"github.com/weirstream/weir/offsets"
	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/statestore"
)

// plan cuts the next batch: for each source [next, end), end being the
// partition's end offset now (for AvailableNow, at most the end seen when
// the partition was first planned), capped by the batch limits.
func (e *Engine) plan(ctx context.Context, srcs map[offsets.TopicPartition]*source) (offsets.Plan, error) {
	byTopic := map[string][]int32{}
	for tp := range srcs {
		byTopic[tp.Topic] = append(byTopic[tp.Topic], tp.Partition)
	}
	var backlogs []backlog
	for topic, parts := range byTopic {
		ends, err := e.rt.EndOffsets(ctx, topic, parts)
		if err != nil {
			return offsets.Plan{}, err
		}
		internal := processor.IsInternalTopic(e.appID, topic)
		for _, p := range parts {
			tp := offsets.TopicPartition{Topic: topic, Partition: p}
			end := ends[p]
			if e.cfg.Trigger == microbatch.AvailableNow() && !internal {
				target, seen := e.targets[tp]
				if !seen {
					target = end
					e.targets[tp] = end
				}
				end = min(end, target)
			}
			start := srcs[tp].next
			backlogs = append(backlogs, backlog{tp: tp, start: start, end: end})
		}
	}
	plan := offsets.Plan{Batch: e.next, Timestamp: e.rt.Now().Truncate(time.Millisecond), Trigger: e.cfg.Trigger.String(), Watermark: e.watermark()}
	plan.Ranges = cutRanges(backlogs, batchLimit(e.cfg.MaxRecordsPerBatch, e.cfg.MaxBytesPerBatch, e.avgSize))
	return plan, nil
}

// runBatch runs batch plan.Batch: WAL, process, flush, commit, WAL.
func (e *Engine) runBatch(ctx context.Context, plan offsets.Plan, srcs map[offsets.TopicPartition]*source, replay bool) error {
	start := e.rt.Now()
	prog := microbatch.Progress{BatchID: plan.Batch, Timestamp: plan.Timestamp, Trigger: plan.Trigger, Replay: replay}
	t0 := time.Now()
	if err := e.wal.WritePlan(ctx, plan); err != nil {
		return err
	}
	prog.Durations.WALCommit = time.Since(t0)

	t1 := time.Now()
	runs := e.readRanges(ctx, plan, srcs)
	var bytes int64
	for _, run := range runs {
		prog.NumInputRows += run.progress.NumInputRows
		prog.Sources = append(prog.Sources, run.progress)
		bytes += run.bytes
	}
	procErr, err := e.settleRanges(ctx, plan, runs)
	if err != nil {
		return err
	}
	if procErr == nil && e.cfg.ForEachBatch != nil {
		if err := e.cfg.ForEachBatch(ctx, plan.Batch, e.takeCollected()); err != nil {
			return fmt.Errorf("microbatch: batch %d: ForEachBatch: %w", plan.Batch, err)
		}
	}
	prog.Durations.Process = time.Since(t1)

	// Commit what was processed — all of it, or what came before a record
	// that stops the application.
	t2 := time.Now()
	now := e.rt.Now()
	if err := e.rt.Tasks().Each(func(t *processor.Task) error { return t.PunctuateWallClock(now) }); err != nil {
		return errors.Join(procErr, fmt.Errorf("microbatch: wall-clock punctuation: %w", err))
	}
	switch err := e.commit(ctx, plan, srcs); {
	case errors.Is(err, tasks.ErrCommitLater):
		e.commitLater = true
		e.report(fmt.Errorf("microbatch: batch %d: %w", plan.Batch, err))
	case err != nil:
		return errors.Join(procErr, fmt.Errorf("microbatch: batch %d: %w", plan.Batch, err))
	default:
		e.commitLater = false
	}
	if procErr != nil {
		return procErr
	}
	if err := e.wal.WriteCommit(ctx, offsets.Commit{Batch: plan.Batch, Timestamp: e.rt.Now()}); err != nil {
		return err
	}
	prog.Durations.Commit = time.Since(t2)
	prog.Durations.Total = time.Since(t0)
	prog.Durations.Plan = t0.Sub(start)
	if prog.NumInputRows > 0 {
		size := float64(bytes) / float64(prog.NumInputRows)
		if e.avgSize == 0 {
			e.avgSize = size
		} else {
			e.avgSize = 0.8*e.avgSize + 0.2*size
		}
	}
	if !e.lastStart.IsZero() {
		if d := start.Sub(e.lastStart).Seconds(); d > 0 {
			prog.InputRowsPerSecond = float64(prog.NumInputRows) / d
		}
	}
	if d := prog.Durations.Process.Seconds(); d > 0 {
		prog.ProcessedRowsPerSecond = float64(prog.NumInputRows) / d
	}
	prog.Watermark = e.watermark()
	if e.sizesAt.IsZero() || time.Since(e.sizesAt) >= storeSizesEvery {
		e.sizes, e.sizesAt = e.storeSizes(), time.Now()
	}
	prog.StateStores = e.sizes
	e.lastStart = start
	e.next = plan.Batch + 1
	e.rt.Logger().Info("weir: batch", "progress", prog)
	if e.cfg.OnProgress != nil {
		e.cfg.OnProgress(prog)
	}
	return nil
}

// commit makes the batch's outputs durable together with the next offset
// of each of its ranges (tasks.Commit: flush and commit offsets, or one
// transaction).
func (e *Engine) commit(ctx context.Context, plan offsets.Plan, srcs map[offsets.TopicPartition]*source) error {
	pos := tasks.Positions{}
	var sessions []kafka.Session
	for _, r := range plan.Ranges {
		if s := srcs[r.TopicPartition]; s != nil {
			pos[r.TopicPartition] = s.next
			sessions = append(sessions, s.c)
		}
	}
	return e.rt.Commit(ctx, pos, commitSession(sessions))
}

// commitAgain commits the position of every source once more, after a
// batch whose offsets were not committed (tasks.ErrCommitLater, a
// rebalance at the wrong moment), when a plan finds no batch to carry
// them. Without it the offsets stay uncommitted until more input comes:
// forever for an AvailableNow group, whose members end only once the
// group has committed every partition to its end.
// The state the batch staged is applied with it (tasks.Commit). A
// failure of the same kind is reported and tried again at the next empty
// plan.
func (e *Engine) commitAgain(ctx context.Context, srcs map[offsets.TopicPartition]*source) error {
	if !e.commitLater || len(srcs) == 0 {
		return nil
	}
	pos := tasks.Positions{}
	var sessions []kafka.Session
	for tp, s := range srcs {
		pos[tp] = s.next
		sessions = append(sessions, s.c)
	}
	switch err := e.rt.Commit(ctx, pos, commitSession(sessions)); {
	case errors.Is(err, tasks.ErrCommitLater):
		e.report(fmt.Errorf("microbatch: offsets of the last batch: %w", err))
	case err != nil:
		return fmt.Errorf("microbatch: offsets of the last batch: %w", err)
	default:
		e.commitLater = false
	}
	return nil
}

// recover settles a plan left without a commit by a previous run (see the
// package doc) and sets the next batch id. It reports whether it ran a
// batch again.
func (e *Engine) recover(ctx context.Context, srcs map[offsets.TopicPartition]*source) (bool, error) {
	if last, ok, err := e.wal.LatestPlan(); err != nil {
		return false, err
	} else if ok {
		e.next = last.Batch + 1
	}
	plan, ok, err := e.wal.Pending()
	if err != nil || !ok {
		return false, err
	}
	decision, owned := decideRecovery(plan, func(tp offsets.TopicPartition) (int64, bool) {
		if s := srcs[tp]; s != nil {
			return s.next, true
		}
		return 0, false
	})
	log := e.rt.Logger()
	switch decision {
	case replayPlan:
		log.Info("weir: replaying an uncommitted batch with its planned ranges", "batch", plan.Batch)
		e.next = plan.Batch
		return true, e.runBatch(ctx, plan, srcs, true)
	case writeLostCommit:
		log.Info("weir: batch had committed; writing its lost commit record", "batch", plan.Batch)
		e.next = plan.Batch + 1
		return false, e.wal.WriteCommit(ctx, offsets.Commit{Batch: plan.Batch, Timestamp: e.rt.Now()})
	default:
		log.Info("weir: dropping a stale batch plan", "batch", plan.Batch, "ranges", len(plan.Ranges), "owned", owned)
		e.next = plan.Batch
		return false, e.wal.DiscardPlan(ctx, plan.Batch)
	}
}

// watermark is the smallest stream time among tasks that have seen records.
func (e *Engine) watermark() time.Time {
	var wm time.Time
	_ = e.rt.Tasks().Each(func(t *processor.Task) error {
		if st := t.StreamTime(); !st.IsZero() && (wm.IsZero() || st.Before(wm)) {
			wm = st
		}
		return nil
	})
	return wm
}

// storeSizesEvery is how often a batch's progress counts the stores' rows
// afresh: counting walks every row (and, in Badger, every version in its
// memtables) — 14 % of a word count's CPU when done after every batch.
const storeSizesEvery = 10 * time.Second

// storeSizes counts the rows of each task's key-value stores.
func (e *Engine) storeSizes() []microbatch.StoreProgress {
	var out []microbatch.StoreProgress
	_ = e.rt.Tasks().Each(func(t *processor.Task) error {
		for _, name := range t.StoreNames() {
			s, _ := t.Store(name)
			if kv, ok := s.(statestore.KeyValueStore); ok {
				if n, err := kv.ApproximateNumEntries(); err == nil {
					out = append(out, microbatch.StoreProgress{Name: name, Partition: t.ID().Partition, NumRows: n})
				}
			}
		}
		return nil
	})
	slices.SortFunc(out, func(a, b microbatch.StoreProgress) int {
		if a.Name != b.Name {
			if a.Name < b.Name {
				return -1
			}
			return 1
		}
		return int(a.Partition - b.Partition)
	})
	return out
}
