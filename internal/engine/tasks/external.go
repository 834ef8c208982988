package tasks

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/offsets"
	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/sink"
)

// External sinks: the records a topology's ToSink writes go to stores
// outside Kafka, per task, by the protocol of package sink — claim the
// task's progress row when the task is acquired (claimExternal), drop the
// outputs of input records that row's position covers
// (collectExternal), write each task's records with its position before
// Kafka's commit (writeExternal, called by Commit once the record caches
// are flushed), and forget the refusals Kafka's commit covers
// (externalCommitted). The continuous engine commits under its barrier
// when external sinks exist, so that the positions Commit receives are
// exactly those of the records buffered.

// externalRetryFor bounds how long a write to an external sink is tried
// again in place (with back-off) before the epoch rewinds: the store is
// down, and the epoch's Kafka transaction should not wait for it until it
// times out. The rewind's back-off (rewindBackoff) then spaces the next
// attempts.
const externalRetryFor = 10 * time.Second

// externalParallel bounds the tasks whose writes run at once.
const externalParallel = 8

// taskExternal is a task's state for its external sinks, guarded by the
// task's lock.
type taskExternal struct {
	// known is, per sink, the position the store holds for the task: the
	// claim's, then each successful write's. refused holds, per sink, the
	// records the store's writes left out as bad since the last Kafka
	// commit (the claim's, then each write's), with the store's error: a
	// replay of their input hands them to the policy again (their dead
	// letters went into the commit that failed), and each write carries
	// them (sink.Batch.Refused) until a Kafka commit clears them.
	known   map[string]sink.Position
	token   map[string]int64 // per sink, the claim's fencing token
	refused map[string]map[sink.RecordID]string
	// index counts, per sink, the records the input being processed wrote
	// to it (sink.Record.Index); reset by each input.
	index map[string]int
	// buf holds, per sink, the records written since the last commit.
	buf map[string][]sink.Record
}

// HasExternalSinks reports whether the topology writes to external sinks.
func (r *Runtime) HasExternalSinks() bool { return len(r.cfg.ExternalSinks) > 0 }

// claimExternal claims the task's progress rows in every external sink
// its sub-topology writes (sink.Sink.Claim), with its writer generation
// as the fencing token. A store that cannot be reached is tried again
// with back-off until ctx ends: the task waits, nothing is processed.
func (t *Task) claimExternal(ctx context.Context) error {
	names := t.rt.cfg.Graph.Subtopologies[t.id.Subtopology].ExternalSinks()
	if len(names) == 0 {
		return nil
	}
	ext := &taskExternal{known: map[string]sink.Position{}, token: map[string]int64{}, buf: map[string][]sink.Record{},
		refused: map[string]map[sink.RecordID]string{}, index: map[string]int{}}
	task := sink.Task{Subtopology: t.id.Subtopology, Partition: t.id.Partition}
	for _, name := range names {
		if _, done := ext.known[name]; done {
			continue
		}
		s, ok := t.rt.cfg.ExternalSinks[name]
		if !ok {
			return fmt.Errorf("runtime: no external sink registered as %q", name)
		}
		for attempt := 1; ; attempt++ {
			p, err := s.Claim(ctx, name, task, t.writer)
			if err == nil {
				ext.known[name] = p.Position
				ext.token[name] = p.Token
				ext.refused[name] = refusals(p.Refused)
				t.rt.log.Debug("weir: external sink claimed", "sink", name, "task", task.String(), "generation", t.writer,
					"token", p.Token, "position", p.Position.String(), "refused", len(p.Refused))
				break
			}
			if errors.Is(err, sink.ErrPermanent) {
				return fmt.Errorf("runtime: external sink %q: claim task %s: %w", name, task, err)
			}
			t.rt.log.Warn("weir: external sink unreachable; the task waits", "sink", name, "task", task.String(), "attempt", attempt, "err", err)
			if perr := kafka.Pause(ctx, externalBackoff(attempt)); perr != nil {
				return fmt.Errorf("runtime: external sink %q: claim task %s: %w", name, task, errors.Join(perr, err))
			}
		}
	}
	t.ext = ext
	return nil
}

// externalBackoff is the wait before attempt n+1 of an external sink
// call: 100 ms doubling to 5 s.
func externalBackoff(n int) time.Duration {
	return min(100*time.Millisecond<<min(max(n-1, 0), 6), 5*time.Second)
}

// collectExternal buffers an external sink's output of the record being
// processed, unless the store already holds the outputs of that record
// (its claimed or last written position covers it). The caller holds the
// task's lock.
func (t *Task) collectExternal(o processor.Output) error {
	if t.ext == nil {
		return fmt.Errorf("runtime: external sink %q written by a task that did not claim it", o.Topic)
	}
	rec := sink.Record{
		Key: o.Key, Value: o.Value, Timestamp: o.Timestamp, Source: t.in, Offset: t.inOffset,
		Index: t.ext.index[o.Topic],
	}
	t.ext.index[o.Topic]++
	for _, h := range o.Headers {
		rec.Headers = append(rec.Headers, sink.Header{Key: h.Key, Value: h.Value})
	}
	if t.ext.known[o.Topic].Covers(rec.Source, rec.Offset) {
		t.rt.log.Debug("weir: external sink holds the output already", "sink", o.Topic, "task", t.id.String(),
			"topic", rec.Source.Topic, "partition", rec.Source.Partition, "offset", rec.Offset, "refused", len(t.ext.refused[o.Topic]))
		if cause, ok := t.ext.refused[o.Topic][rec.ID()]; ok {
			return t.rt.badExternal(t.ctxOrBackground(), o.Topic, nil)(rec, errors.New(cause))
		}
		return nil
	}
	t.ext.buf[o.Topic] = append(t.ext.buf[o.Topic], rec)
	t.rt.stats.RecordsOut.Add(1)
	return nil
}

// startInput resets the per-input record indexes (Process, before the
// input's processing).
func (t *Task) startInput() {
	if t.ext != nil {
		clear(t.ext.index)
	}
}

func (t *Task) ctxOrBackground() context.Context {
	if t.ctx != nil {
		return t.ctx
	}
	return context.Background()
}

// refusals indexes a claim's refused records.
func refusals(rs []sink.Refusal) map[sink.RecordID]string {
	m := make(map[sink.RecordID]string, len(rs))
	for _, r := range rs {
		m[r.ID] = r.Error
	}
	return m
}

// dropExternal forgets the records buffered since the last commit: the
// epoch rewinds, and its replay writes them again (dropStaged).
func (t *Task) dropExternal() {
	if t.ext == nil {
		return
	}
	clear(t.ext.buf)
}

// externalWrite is one task's write to one sink at a commit.
type externalWrite struct {
	t       *Task
	name    string
	batch   *sink.Batch
	refused []sink.Refusal // the records the policy took, by the write's Bad
}

// writeExternal writes every task's buffered external records with its
// position, before Kafka's commit of the epoch or batch whose records end
// at positions (see the sink package's protocol). The writes of several
// tasks run at once. A store that fails is tried again with back-off for
// up to externalRetryFor, then the epoch rewinds (ErrRewind); a fenced
// write (a newer owner claimed the task) rewinds at once; a permanent
// failure or a refused record under the Fail policy stops the
// application. After a write succeeds the task's known position is its
// To, so that a replay of the epoch (its Kafka commit failing) drops what
// the store holds.
func (r *Runtime) writeExternal(ctx context.Context, positions Positions) error {
	if !r.HasExternalSinks() {
		return nil
	}
	var writes []externalWrite
	_ = r.tasks.eachTask(func(t *Task) error {
		if t.ext == nil {
			return nil
		}
		for name, recs := range t.ext.buf {
			if len(recs) == 0 {
				continue
			}
			from := t.ext.known[name]
			to := from.Merge(nil)
			for tp, next := range positions {
				if tp.Partition == t.id.Partition && r.readsTopic(t.id.Subtopology, tp.Topic) {
					stp := sink.TopicPartition{Topic: tp.Topic, Partition: tp.Partition}
					to[stp] = max(to[stp], next)
				}
			}
			for _, rec := range recs {
				if rec.Offset >= 0 && to[rec.Source] <= rec.Offset {
					to[rec.Source] = rec.Offset + 1
				}
			}
			var carried []sink.Refusal
			for id, cause := range t.ext.refused[name] {
				carried = append(carried, sink.Refusal{ID: id, Error: cause})
			}
			writes = append(writes, externalWrite{t: t, name: name, batch: &sink.Batch{
				Sink: name, Task: sink.Task{Subtopology: t.id.Subtopology, Partition: t.id.Partition},
				Generation: t.writer, Token: t.ext.token[name], From: from, To: to, Records: recs, Refused: carried,
			}})
		}
		return nil
	})
	if len(writes) == 0 {
		return nil
	}
	errs := make([]error, len(writes))
	var wg sync.WaitGroup
	sem := make(chan struct{}, externalParallel)
	for i := range writes {
		w := &writes[i]
		w.batch.Bad = r.badExternal(ctx, w.name, &w.refused)
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = r.writeOne(ctx, r.cfg.ExternalSinks[w.name], w.batch)
		})
	}
	wg.Wait()
	var rewind, fatal []error
	for i, w := range writes {
		err := errs[i]
		if err == nil {
			w.t.mu.Lock()
			if w.t.ext != nil {
				w.t.ext.known[w.name] = w.batch.To
				if w.t.ext.refused[w.name] == nil {
					w.t.ext.refused[w.name] = map[sink.RecordID]string{}
				}
				for _, rf := range w.refused {
					w.t.ext.refused[w.name][rf.ID] = rf.Error
				}
				r.log.Debug("weir: external sink written", "sink", w.name, "task", w.batch.Task.String(), "records", len(w.batch.Records),
					"position", w.batch.To.String(), "refused", len(w.refused), "carried", len(w.batch.Refused))
				w.t.ext.buf[w.name] = nil
			}
			w.t.mu.Unlock()
			continue
		}
		err = fmt.Errorf("external sink %q, task %s: %w", w.name, w.batch.Task, err)
		if errors.Is(err, ErrRewind) {
			rewind = append(rewind, err)
		} else {
			fatal = append(fatal, err)
		}
	}
	switch {
	case len(fatal) > 0:
		return r.failing(fmt.Errorf("runtime: %w", errors.Join(append(fatal, rewind...)...)))
	case len(rewind) > 0:
		return fmt.Errorf("runtime: %w", errors.Join(rewind...))
	}
	return nil
}

// externalCommitted forgets the refusals whose input Kafka's commit at
// positions covers: their dead letters committed with it (Commit, once
// Kafka's commit succeeded). A refusal of an input not replayed yet stays
// (an epoch may commit before the replay reaches it).
func (r *Runtime) externalCommitted(positions Positions) {
	if !r.HasExternalSinks() {
		return
	}
	_ = r.tasks.eachTask(func(t *Task) error {
		if t.ext == nil {
			return nil
		}
		for _, ids := range t.ext.refused {
			for id := range ids {
				next, ok := positions[offsets.TopicPartition{Topic: id.Source.Topic, Partition: id.Source.Partition}]
				if ok && id.Offset < next {
					delete(ids, id)
				}
			}
		}
		return nil
	})
}

// writeOne runs one sink write, trying an outage again with back-off for
// up to externalRetryFor. Its errors wrap ErrRewind when the epoch is to
// be replayed (fenced, or the store still unreachable); any other error
// is fatal.
func (r *Runtime) writeOne(ctx context.Context, s sink.Sink, b *sink.Batch) error {
	deadline := time.Now().Add(externalRetryFor)
	for attempt := 1; ; attempt++ {
		err := s.Write(ctx, b)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, sink.ErrFenced):
			return fmt.Errorf("%w: %w", ErrRewind, err)
		case errors.Is(err, sink.ErrPermanent), errors.Is(err, ErrExternalRecord):
			return err
		case ctx.Err() != nil:
			return fmt.Errorf("%w: %w", ErrRewind, errors.Join(ctx.Err(), err))
		}
		wait := externalBackoff(attempt)
		if time.Now().Add(wait).After(deadline) {
			return fmt.Errorf("%w: unreachable for %v (%d attempts): %w", ErrRewind, externalRetryFor, attempt, err)
		}
		r.log.Warn("weir: external sink write failed; trying again", "sink", b.Sink, "task", b.Task.String(), "attempt", attempt, "err", err)
		_ = kafka.Pause(ctx, wait)
	}
}

// badExternal returns the bad-record policy for the records one write to
// sink name refuses: Skip logs and counts them; DeadLetter writes the sink
// record to the dead-letter topic of the source topic of the input that
// wrote it, with the store's error in its headers (inside the transaction
// under exactly-once), once even if the write is tried again; Fail fails
// the write with ErrExternalRecord. The records it takes are added to
// *took (if not nil), each once although a write tried again meets its
// bad records again.
func (r *Runtime) badExternal(ctx context.Context, name string, took *[]sink.Refusal) func(sink.Record, error) error {
	handled := map[sink.RecordID]bool{}
	return func(rec sink.Record, cause error) error {
		id := rec.ID()
		if handled[id] {
			return nil
		}
		if took != nil {
			defer func() {
				if handled[id] {
					*took = append(*took, sink.Refusal{ID: id, Error: cause.Error()})
				}
			}()
		}
		switch r.cfg.BadRecords {
		case Skip:
			handled[id] = true
			r.stats.Skipped.Add(1)
			r.log.Warn("weir: skipping a record the external sink refuses", "sink", name, "topic", rec.Source.Topic,
				"partition", rec.Source.Partition, "offset", rec.Offset, "err", cause)
			return nil
		case DeadLetter:
			if rec.Offset < 0 {
				return fmt.Errorf("%w: %q refuses a record a punctuator wrote (no source topic to dead-letter it to): %w", ErrExternalRecord, name, cause)
			}
			dlq := kafka.Record{
				Topic: DeadLetterTopic(rec.Source.Topic), Partition: rec.Source.Partition,
				Key: rec.Key, Value: rec.Value, Timestamp: rec.Timestamp,
			}
			for _, h := range rec.Headers {
				dlq.Headers = append(dlq.Headers, kafka.Header{Key: h.Key, Value: h.Value})
			}
			dlq.Headers = append(dlq.Headers,
				kafka.Header{Key: HeaderErrorKind, Value: []byte("ExternalSinkError")},
				kafka.Header{Key: HeaderErrorMessage, Value: []byte(cause.Error())},
				kafka.Header{Key: HeaderErrorNode, Value: []byte(name)},
				kafka.Header{Key: HeaderSourceTopic, Value: []byte(rec.Source.Topic)},
				kafka.Header{Key: HeaderSourcePartiton, Value: []byte(strconv.Itoa(int(rec.Source.Partition)))},
				kafka.Header{Key: HeaderSourceOffset, Value: []byte(strconv.FormatInt(rec.Offset, 10))},
			)
			if err := r.committer.Send(ctx, dlq); err != nil {
				return fmt.Errorf("runtime: dead-letter a record external sink %q refuses: %w", name, err)
			}
			handled[id] = true
			r.stats.DeadLetter.Add(1)
			r.log.Debug("weir: dead-lettered a record the external sink refuses", "sink", name, "topic", rec.Source.Topic,
				"partition", rec.Source.Partition, "offset", rec.Offset, "err", cause)
			return nil
		default:
			return fmt.Errorf("%w: %q refuses the record of %s/%d@%d: %w", ErrExternalRecord, name,
				rec.Source.Topic, rec.Source.Partition, rec.Offset, cause)
		}
	}
}

// readsTopic reports whether sub-topology sub reads topic.
func (r *Runtime) readsTopic(sub int, topic string) bool {
	for _, ref := range r.cfg.Graph.Subtopologies[sub].SourceTopics() {
		if ref.Resolve(r.cfg.ApplicationID) == topic {
			return true
		}
	}
	return false
}
