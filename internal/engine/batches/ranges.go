package batches

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"sync"

	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/microbatch"
	"github.com/weirstream/weir/offsets"
	"github.com/weirstream/weir/processor"
)

// rangeRun is what reading one planned range did.
type rangeRun struct {
	progress microbatch.SourceProgress
	bytes    int64 // keys and values processed
	err      error // what stopped the range before its end
}

// readRanges processes a plan's ranges and returns what each did, in plan
// order. The ranges of one task run in plan order on one goroutine, as a
// task's records must; the tasks run side by side, up to rangeWorkers()
// at once, as the continuous engine's claims do — so one task's fetch
// waits overlap another's processing and a batch uses every core. With a
// ForEachBatch sink they run one at a time, so that the sink receives a
// batch's records in plan order, the same again when the batch is
// replayed. A
// range that fails ends its task's part of the batch; the other tasks
// finish theirs (runBatch decides what the failure means for the batch).
func (e *Engine) readRanges(ctx context.Context, plan offsets.Plan, srcs map[offsets.TopicPartition]*source) []rangeRun {
	runs := make([]rangeRun, len(plan.Ranges))
	var groups [][]int // indexes into plan.Ranges, one slice per task
	byTask := map[*tasks.Task]int{}
	for i, r := range plan.Ranges {
		runs[i].progress = microbatch.SourceProgress{Topic: r.Topic, Partition: r.Partition, StartOffset: r.Start, EndOffset: r.End}
		s := srcs[r.TopicPartition]
		if s == nil {
			continue // no longer claimed: nothing to read
		}
		g, ok := byTask[s.task]
		if !ok {
			g = len(groups)
			byTask[s.task] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], i)
	}
	workers := rangeWorkers()
	if e.cfg.ForEachBatch != nil {
		workers = 1
	}
	slots := make(chan struct{}, workers)
	var wg sync.WaitGroup
	for _, g := range groups {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			for _, i := range g {
				r := plan.Ranges[i]
				if runs[i].err = e.readRange(ctx, r, srcs[r.TopicPartition], &runs[i]); runs[i].err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	return runs
}

// rangeWorkers bounds the tasks a batch processes at once: two per core,
// so that a task waiting for a fetch leaves its core to another.
func rangeWorkers() int { return max(2, 2*goruntime.GOMAXPROCS(0)) }

// readRange processes range r of source s from s.next, recording in run
// what it read. It returns the error that stopped it: one that wraps
// tasks.ErrRewind (the transaction is doomed), a processor.RecordError
// (a record that stops the application), ctx's error, or a read failure.
func (e *Engine) readRange(ctx context.Context, r offsets.Range, s *source, run *rangeRun) error {
	var err error
	if s.next < r.End {
		err = e.rt.ReadRange(ctx, r.Topic, r.Partition, s.next, r.End, func(rec kafka.Record) error {
			if err := s.task.Process(ctx, rec); err != nil {
				return err
			}
			s.next = rec.Offset + 1
			run.progress.NumInputRows++
			run.bytes += int64(len(rec.Key) + len(rec.Value))
			return nil
		})
		if err == nil {
			s.next = r.End // the range is read: markers and aborted records included
		}
	}
	e.rt.Track(r.TopicPartition, s.next, max(s.c.HighWaterMarkOffset(), r.End))
	return err
}

// settleRanges turns what the ranges did into the batch's outcome: an
// error to return at once (fatal, or a doomed transaction, which it ends
// so that the engine rewinds), or procErr — a record that stops the
// application, or a stop — after which what was processed is committed
// and the batch ends there. Errors are taken in plan order; a doomed
// transaction comes first, whatever the order.
func (e *Engine) settleRanges(ctx context.Context, plan offsets.Plan, runs []rangeRun) (procErr, fatal error) {
	for _, run := range runs {
		if errors.Is(run.err, tasks.ErrRewind) {
			return nil, errors.Join(run.err, e.rt.Rewind(ctx, run.err))
		}
	}
	for i, run := range runs {
		if run.err == nil {
			continue
		}
		var re *processor.RecordError
		if !errors.As(run.err, &re) && ctx.Err() == nil {
			return nil, fmt.Errorf("microbatch: batch %d: read %s: %w", plan.Batch, plan.Ranges[i], run.err)
		}
		if procErr == nil {
			procErr = run.err
		}
	}
	return procErr, nil
}
