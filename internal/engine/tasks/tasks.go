package tasks

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/sink"
	"github.com/weirstream/weir/statestore"
	"github.com/weirstream/weir/statestore/badgerstore"
)

// Tasks is the registry of the tasks this instance runs. A task exists
// while at least one claim of its partition is held: the first Acquire
// restores its stores from their changelogs and creates it, the last
// Release closes it and drops its state. It is safe for concurrent use.
type Tasks struct {
	rt *Runtime
	mu sync.Mutex
	m  map[processor.TaskID]*Task
	// cache is the byte budget the record caches of every task share
	// (Config.CacheMaxBytes); nil without caches.
	cache *statestore.CacheBudget
}

func newTasks(rt *Runtime) *Tasks {
	ts := &Tasks{rt: rt, m: map[processor.TaskID]*Task{}}
	if rt.cfg.CacheMaxBytes > 0 {
		ts.cache, _ = statestore.NewCacheBudget(rt.cfg.CacheMaxBytes) // positive: no error
	}
	return ts
}

// Task is one running task. Its methods are safe for concurrent use: the
// claims of the co-partitioned topics of one task share it.
type Task struct {
	id     processor.TaskID
	rt     *Runtime
	ready  chan struct{} // closed once restored and created (or failed)
	err    error         // creation error, set before ready closes
	refs   int           // guarded by Tasks.mu
	mu     sync.Mutex    // guards task, ctx and hold
	task   *processor.Task
	staged []stagedStore
	owned  []badgerstore.StorePartition // store partitions this task holds
	ctx    context.Context              // of the Process call in progress, for emits
	// hold, if set, takes the task's changelog records instead of the
	// producer (holdChangelogs).
	hold func(kafka.Record)
	// writer is the generation stamped on the task's changelog records
	// (see writer.go): the group generation it was acquired in, or the
	// newest its restore saw if that is newer — unless it was acquired
	// without one (outOfGroup). Set before ready closes.
	writer int32
	// outOfGroup is set when the claim that acquired the task had no
	// generation (negative: its member is out of the group, see
	// claimMembership), or the coordinator no longer knew its member
	// (Task.replaced): the partition is another member's. Its writer then
	// stays below the owner's — a restore skips whatever changelog record
	// it might write, its external sink claim fences nobody — and it
	// processes nothing: Process rewinds (ErrRewind), so that the claims
	// start again, acquiring the task anew, once the member rejoined (a
	// task kept into the member's next generation would write with the
	// old generation, which restores skip).
	outOfGroup bool
	// member is the membership the claim that acquired the task read
	// (AcquireIn): the coordinator is asked whether it still holds when
	// the changelog holds a newer writer generation (see restore); nil
	// for Acquire. Read while the task opens only.
	member *kafka.GroupMetadata
	// ext holds the task's external sink state (external.go); nil if its
	// sub-topology writes none. in and inOffset name the input record
	// being processed (inOffset -1 outside Process).
	ext      *taskExternal
	in       sink.TopicPartition
	inOffset int64
}

// Acquire returns the task id, creating and restoring it if this is its
// first claim; generation is the group generation of the claim's session
// (negative: its member is out of the group). Every successful Acquire
// must be paired with a Release.
func (ts *Tasks) Acquire(ctx context.Context, id processor.TaskID, generation int32) (*Task, error) {
	return ts.acquire(ctx, id, generation, nil)
}

// AcquireIn is Acquire for a claim of the group session s, in its
// member's generation (claimMembership). If the task's changelog holds a
// newer writer generation than that one, the coordinator is asked whether
// the member is still in the group before the task takes that generation
// (see Task.restore). Every successful AcquireIn must be paired with a
// Release.
func (ts *Tasks) AcquireIn(ctx context.Context, id processor.TaskID, s kafka.Session) (*Task, error) {
	md := claimMembership(s)
	return ts.acquire(ctx, id, md.GenerationID, &md)
}

func (ts *Tasks) acquire(ctx context.Context, id processor.TaskID, generation int32, member *kafka.GroupMetadata) (*Task, error) {
	ts.mu.Lock()
	t, ok := ts.m[id]
	if !ok {
		t = &Task{id: id, rt: ts.rt, ready: make(chan struct{}), writer: max(generation, 0), outOfGroup: generation < 0,
			member: member, inOffset: -1}
		ts.m[id] = t
	}
	t.refs++
	ts.mu.Unlock()
	if !ok {
		t.err = t.open(ctx)
		if t.err == nil {
			t.err = t.claimExternal(ctx)
		}
		close(t.ready)
	}
	select {
	case <-t.ready:
	case <-ctx.Done():
		ts.Release(t)
		return nil, ctx.Err()
	}
	if t.err != nil {
		ts.Release(t)
		return nil, t.err
	}
	return t, nil
}

// Release drops one claim's hold on t; the last one closes it.
func (ts *Tasks) Release(t *Task) {
	ts.mu.Lock()
	t.refs--
	last := t.refs == 0
	if last {
		delete(ts.m, t.id)
	}
	ts.mu.Unlock()
	if !last {
		return
	}
	<-t.ready
	ts.rt.layers.dropKept(t) // its uncommitted ones never do (see Commit)
	ts.rt.waitApplied()      // its committed layers reach Badger before its stores close (layers.go)
	t.mu.Lock()
	defer t.mu.Unlock()
	var errs []error
	if t.task != nil {
		errs = append(errs, t.task.Close())
		t.task = nil // Each skips it from now on
	}
	errs = append(errs, t.closeStores())
	if err := errors.Join(errs...); err != nil {
		ts.rt.log.Warn("weir: closing task", "task", t.id.String(), "err", err)
	}
}

// Each calls fn for every ready task, holding the task's lock.
func (ts *Tasks) Each(fn func(t *processor.Task) error) error {
	return ts.eachTask(func(t *Task) error { return fn(t.task) })
}

// eachTask calls fn for every ready task, holding the task's lock.
func (ts *Tasks) eachTask(fn func(t *Task) error) error {
	ts.mu.Lock()
	list := make([]*Task, 0, len(ts.m))
	for _, t := range ts.m {
		list = append(list, t)
	}
	ts.mu.Unlock()
	var errs []error
	for _, t := range list {
		select {
		case <-t.ready:
		default:
			continue
		}
		if t.err != nil {
			continue
		}
		t.mu.Lock()
		if t.task != nil {
			errs = append(errs, fn(t))
		}
		t.mu.Unlock()
	}
	return errors.Join(errs...)
}

// open restores the task's stores from their changelogs and creates it.
func (t *Task) open(ctx context.Context) error {
	g := t.rt.cfg.Graph
	if t.id.Subtopology < 0 || t.id.Subtopology >= len(g.Subtopologies) {
		return fmt.Errorf("runtime: no sub-topology %d", t.id.Subtopology)
	}
	start := time.Now()
	t.rt.restoringBy(1)
	defer t.rt.restoringBy(-1)
	factory, err := t.openStores(ctx, g.Subtopologies[t.id.Subtopology].Stores)
	if err != nil {
		t.closeStores()
		return err
	}
	task, err := processor.NewTask(g, processor.TaskConfig{
		ApplicationID: t.rt.cfg.ApplicationID, ID: t.id, Stores: factory,
		Emit: t.emit, WallClock: t.rt.Now(),
		// One changelog record per changed key per commit (see Commit).
		CoalesceChangelog: true,
		CacheBudget:       t.rt.tasks.cache,
		Globals:           t.rt.globalStores(),
	})
	if err != nil {
		t.closeStores()
		return fmt.Errorf("runtime: %w", err)
	}
	t.task = task
	t.rt.log.Debug("weir: task ready", "task", t.id.String(), "took", time.Since(start))
	return nil
}

// closeStores closes the task's overlays and their Badger stores; the
// committed state stays in Badger for the next owner on this instance.
func (t *Task) closeStores() error {
	var errs []error
	for _, st := range t.staged {
		errs = append(errs, st.Close())
	}
	t.staged = nil
	t.rt.standby.deactivate(t.owned)
	t.owned = nil
	return errors.Join(errs...)
}

// Process runs one input record through the task. A record the topology
// cannot handle goes to the bad-record policy; the returned error means the
// application must stop.
func (t *Task) Process(ctx context.Context, rec kafka.Record) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.rt.globalFailed(); err != nil {
		return err
	}
	if t.outOfGroup {
		// A zombie's claim: nothing it processes may reach Kafka, the
		// stores or an external sink. The rewind ends the member's claims;
		// they start again, in a generation, once it rejoined — or not at
		// all, the partitions being another member's.
		return fmt.Errorf("%w: task %s was acquired by a member out of its group", ErrRewind, t.id)
	}
	t.ctx = ctx
	t.in, t.inOffset = sink.TopicPartition{Topic: rec.Topic, Partition: rec.Partition}, rec.Offset
	t.startInput()
	t.rt.stats.RecordsIn.Add(1)
	err := t.task.Process(processor.RawRecord{
		Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset,
		Key: rec.Key, Value: rec.Value, Timestamp: rec.Timestamp, Headers: toProcessorHeaders(rec.Headers),
	})
	t.ctx = nil
	t.inOffset = -1
	if err != nil {
		return t.rt.handleBadRecord(ctx, rec, err)
	}
	return nil
}

// emit writes a task output through the committer (Send), or to the
// sink interceptor (InterceptSinks).
func (t *Task) emit(o processor.Output) error {
	if o.Kind == processor.OutputExternal {
		return t.collectExternal(o)
	}
	ctx := t.ctx
	if ctx == nil {
		ctx = context.Background() // a wall-clock punctuation
	}
	part := o.Partition
	if part < 0 {
		part = kafka.PartitionByKey
	}
	rec := kafka.Record{
		Topic: o.Topic, Partition: part, Key: o.Key, Value: o.Value,
		Headers: toKafkaHeaders(o.Headers), Timestamp: o.Timestamp,
	}
	var err error
	if o.Kind == processor.OutputChangelog {
		rec.Headers = append(rec.Headers, writerHeader(t.writer))
	}
	if o.Kind == processor.OutputSink && t.rt.sinks != nil {
		err = t.rt.sinks(ctx, rec)
	} else {
		// A record no producer would deliver fails the input record
		// being processed (its bad-record policy applies), not the
		// producer or the whole transaction.
		if err := kafka.CheckSize(rec); err != nil {
			return fmt.Errorf("runtime: output: %w", err)
		}
		if o.Kind == processor.OutputChangelog && t.hold != nil {
			t.hold(rec)
			return nil // counted when sent
		}
		err = t.rt.committer.Send(ctx, rec)
	}
	if err != nil {
		return fmt.Errorf("%w: %w", errNotSent, err)
	}
	t.rt.stats.RecordsOut.Add(1)
	return nil
}

func toProcessorHeaders(hs []kafka.Header) []processor.Header {
	if len(hs) == 0 {
		return nil
	}
	out := make([]processor.Header, len(hs))
	for i, h := range hs {
		out[i] = processor.Header{Key: h.Key, Value: h.Value}
	}
	return out
}

func toKafkaHeaders(hs []processor.Header) []kafka.Header {
	if len(hs) == 0 {
		return nil
	}
	out := make([]kafka.Header, len(hs))
	for i, h := range hs {
		out[i] = kafka.Header{Key: h.Key, Value: h.Value}
	}
	return out
}
