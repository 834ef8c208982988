package tasks

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/statestore"
	"github.com/weirstream/weir/statestore/badgerstore"
)

// Global tables (processor.GlobalStore), as Kafka Streams' global thread
// keeps them:
//
//  1. Prepare restores every global store before the member joins the
//     group (startGlobals): from each partition's checkpoint — the next
//     offset to read, kept in Badger beside the rows, as Kafka Streams
//     keeps its global .checkpoint file — or, lacking one for any
//     partition, from the topic's start over an emptied store, up to the
//     partitions' ends. The topic itself is the changelog: there is no
//     other.
//  2. A global reader (runGlobals, one goroutine, outside the group) then
//     polls the partitions' ends every GlobalInterval and applies what it
//     has not read, independent of the tasks.
//  3. Each batch of records goes into Badger in one Apply, with the
//     partitions' checkpoints: a checkpoint is never ahead of its rows, so
//     a restart resumes exactly (a record applied twice writes the same
//     value).
//  4. Tasks read the store through processor.TaskConfig.Globals, read-only,
//     as it is when they read it: no epoch, batch or transaction covers a
//     global table (docs/semantics.md).
//
// Under exactly-once the reader reads committed records only, up to the
// last stable offset. A record the table's serdes cannot read follows the
// bad-record policy; a dead letter is sent by the plain producer, since no
// transaction covers the global reader. A failure the reader cannot get
// past stops the application: the next record a task processes returns it.

// GlobalInterval is how often the global reader looks for new records of
// the global tables' topics.
const GlobalInterval = 50 * time.Millisecond

// globalState is the instance's global tables.
type globalState struct {
	tables []*globalTable
	// stores are the tables' Badger stores, by name, as tasks read them.
	stores map[string]statestore.KeyValueStore
	// failed holds the error that stopped the global reader.
	failed atomic.Pointer[error]
	stop   context.CancelFunc
	done   sync.WaitGroup
}

// globalTable is one global store and how far its topic is read.
type globalTable struct {
	def   *processor.GlobalStore
	store statestore.KeyValueStore
	// next is the next offset to read of each partition.
	next map[int32]int64
}

// globalRows is the Badger partition holding a global store's rows: the
// store is one whole, whatever partition its records come from.
const globalRows = 0

// globalOffsets names the Badger store partitions whose checkpoints hold
// how far each partition of a global store's topic is applied; no rows
// are kept under it, and 0x01 keeps it apart from any store's name.
func globalOffsets(store string) string { return store + "\x01global-offsets" }

// startGlobals restores the global stores and starts the global reader.
func (r *Runtime) startGlobals(ctx context.Context) error {
	g := r.cfg.Graph
	if len(g.Globals) == 0 {
		return nil
	}
	gs := &globalState{stores: map[string]statestore.KeyValueStore{}}
	for i := range g.Globals {
		def := &g.Globals[i]
		gt, err := r.restoreGlobal(ctx, gs, def)
		if err != nil {
			return fmt.Errorf("runtime: global table %q (topic %q): %w", def.Spec.Name, def.Topic, err)
		}
		gs.tables = append(gs.tables, gt)
		gs.stores[def.Spec.Name] = gt.store
	}
	bg, cancel := context.WithCancel(context.Background())
	gs.stop = cancel
	r.global = gs
	gs.done.Go(func() { r.runGlobals(bg, gs) })
	return nil
}

// stopGlobals stops the global reader and waits for it.
func (r *Runtime) stopGlobals() {
	if gs := r.global; gs != nil {
		gs.stop()
		gs.done.Wait()
	}
}

// globalStores returns the global stores tasks read, by name.
func (r *Runtime) globalStores() map[string]statestore.KeyValueStore {
	if r.global == nil {
		return nil
	}
	return r.global.stores
}

// globalFailed returns the error that stopped the global reader, if any.
func (r *Runtime) globalFailed() error {
	if r.global == nil {
		return nil
	}
	if p := r.global.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// restoreGlobal opens def's store and brings it up to its topic's end.
func (r *Runtime) restoreGlobal(ctx context.Context, gs *globalState, def *processor.GlobalStore) (*globalTable, error) {
	counts, err := r.admin.PartitionCounts(ctx, []string{def.Topic})
	if err != nil {
		return nil, err
	}
	n := counts[def.Topic]
	parts := make([]int32, n)
	for p := range parts {
		parts[p] = int32(p)
	}
	ends, err := r.EndOffsets(ctx, def.Topic, parts)
	if err != nil {
		return nil, err
	}
	gt := &globalTable{def: def, next: map[int32]int64{}}
	fresh := false
	for _, p := range parts {
		pos, ok, err := r.db.Checkpoint(globalOffsets(def.Spec.Name), p)
		if err != nil {
			return nil, err
		}
		if !ok || pos.Offset > ends[p] {
			fresh = true
			break
		}
		gt.next[p] = pos.Offset
	}
	if fresh {
		if err := r.db.DropPartition(def.Spec.Name, globalRows); err != nil {
			return nil, err
		}
		for _, p := range parts {
			if err := r.db.DropPartition(globalOffsets(def.Spec.Name), p); err != nil {
				return nil, err
			}
		}
		starts, err := r.admin.StartOffsets(ctx, def.Topic, parts)
		if err != nil {
			return nil, err
		}
		gt.next = starts
	}
	s, err := r.db.Factory().Open(def.Spec, globalRows)
	if err != nil {
		return nil, err
	}
	kv, ok := s.(statestore.KeyValueStore)
	if !ok {
		_ = s.Close()
		return nil, fmt.Errorf("store is a %T, not a key-value store", s)
	}
	gt.store = kv
	start := time.Now()
	read := r.stats.GlobalRead.Load()
	if err := r.readGlobal(ctx, gs, gt, ends); err != nil {
		_ = kv.Close()
		return nil, err
	}
	r.log.Info("weir: restored global table", "store", def.Spec.Name, "topic", def.Topic,
		"records", r.stats.GlobalRead.Load()-read, "fresh", fresh, "took", time.Since(start))
	return gt, nil
}

// runGlobals is the global reader: it applies the new records of every
// global topic every GlobalInterval until ctx ends or a failure it cannot
// get past.
func (r *Runtime) runGlobals(ctx context.Context, gs *globalState) {
	every(ctx, GlobalInterval, func() bool {
		for _, gt := range gs.tables {
			err := r.pollGlobal(ctx, gs, gt)
			if err == nil || ctx.Err() != nil {
				continue
			}
			if errors.Is(err, errGlobalFatal) {
				err = fmt.Errorf("runtime: global table %q (topic %q): %w", gt.def.Spec.Name, gt.def.Topic, err)
				gs.failed.Store(&err)
				r.log.Error("weir: the global reader stopped", "err", err)
				return false
			}
			r.log.Warn("weir: reading a global table; trying again", "store", gt.def.Spec.Name, "err", err)
		}
		return true
	})
}

// every calls tick every interval until ctx ends or tick returns false.
func every(ctx context.Context, interval time.Duration, tick func() bool) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !tick() {
			return
		}
	}
}

// pollGlobal applies gt's records up to its partitions' ends.
func (r *Runtime) pollGlobal(ctx context.Context, gs *globalState, gt *globalTable) error {
	parts := make([]int32, 0, len(gt.next))
	for p := range gt.next {
		parts = append(parts, p)
	}
	ends, err := r.EndOffsets(ctx, gt.def.Topic, parts)
	if err != nil {
		return err
	}
	return r.readGlobal(ctx, gs, gt, ends)
}

// readGlobal reads gt's partitions from gt.next up to ends and applies
// their records, restoreBatch records to a Badger Apply.
func (r *Runtime) readGlobal(ctx context.Context, gs *globalState, gt *globalTable, ends map[int32]int64) error {
	name := gt.def.Spec.Name
	for p, end := range ends {
		from := gt.next[p]
		if from >= end {
			continue
		}
		batch := &globalBatch{name: name}
		flush := func(next int64) error {
			sp := badgerstore.StorePartition{Store: globalOffsets(name), Partition: p}
			if err := r.db.Apply(batch.changes, map[badgerstore.StorePartition]badgerstore.Position{sp: {Offset: next}}); err != nil {
				return fmt.Errorf("%w: %w", errGlobalFatal, err)
			}
			r.stats.GlobalRead.Add(int64(batch.records))
			batch.changes, batch.records = batch.changes[:0], 0
			gt.next[p] = next
			return nil
		}
		err := r.admin.ReadRange(ctx, gt.def.Topic, p, from, end, r.readCommitted.Load(), func(rec kafka.Record) error {
			batch.records++
			if err := r.applyGlobal(ctx, gt, batch, rec); err != nil {
				return err
			}
			if len(batch.changes) >= restoreBatch {
				return flush(rec.Offset + 1)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if err := flush(end); err != nil {
			return err
		}
	}
	return nil
}

// applyGlobal adds one record of a global topic to batch, or applies the
// bad-record policy to it.
func (r *Runtime) applyGlobal(ctx context.Context, gt *globalTable, batch *globalBatch, rec kafka.Record) error {
	_, err := gt.def.ApplyGlobal(batch, processor.RawRecord{
		Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset,
		Key: rec.Key, Value: rec.Value, Timestamp: rec.Timestamp, Headers: toProcessorHeaders(rec.Headers),
	})
	var re *processor.RecordError
	if err == nil || !errors.As(err, &re) {
		return err
	}
	switch r.cfg.BadRecords {
	case Skip:
		r.stats.Skipped.Add(1)
		r.log.Warn("weir: skipping bad record of a global table", "topic", rec.Topic, "partition", rec.Partition,
			"offset", rec.Offset, "kind", re.Kind.String(), "err", re.Err)
		return nil
	case DeadLetter:
		if err := r.producer.SendWait(ctx, deadLetter(rec, re)); err != nil {
			return fmt.Errorf("runtime: dead-letter %s/%d@%d: %w", rec.Topic, rec.Partition, rec.Offset, err)
		}
		r.stats.DeadLetter.Add(1)
		return nil
	default:
		return fmt.Errorf("%w: %w", errGlobalFatal, re)
	}
}

// globalBatch collects the writes ApplyGlobal makes as Badger changes: it
// is the store ApplyGlobal writes, and only Put and Delete are used.
type globalBatch struct {
	name    string
	changes []badgerstore.Change
	records int
}

var _ statestore.KeyValueStore = (*globalBatch)(nil)

func (b *globalBatch) Name() string { return b.name }
func (b *globalBatch) Close() error { return nil }
func (b *globalBatch) Put(key, value []byte) error {
	b.changes = append(b.changes, badgerstore.Change{Store: b.name, Partition: globalRows, Kind: statestore.KindKeyValue, Key: key, Value: value})
	return nil
}
func (b *globalBatch) Delete(key []byte) error { return b.Put(key, nil) }
func (b *globalBatch) Get([]byte) ([]byte, bool, error) {
	return nil, false, errGlobalBatchRead
}
func (b *globalBatch) Range(_, _ []byte) (statestore.Iterator, error) { return nil, errGlobalBatchRead }
func (b *globalBatch) PrefixScan([]byte) (statestore.Iterator, error) { return nil, errGlobalBatchRead }
func (b *globalBatch) ApproximateNumEntries() (int64, error)          { return 0, errGlobalBatchRead }

// globalInfo describes a global store for queries: one partition, 0, that
// every instance holds once it has restored it (0 partitions before: the
// query layer then answers "starting").
func (r *Runtime) globalInfo(name string, codec processor.StoreCodec) (StoreInfo, bool) {
	def := r.cfg.Graph.Global(name)
	if def == nil {
		return StoreInfo{}, false
	}
	info := StoreInfo{Spec: def.Spec, Codec: codec, Subtopology: -1, Global: true}
	if r.prepared.Load() && r.global != nil { // prepared is stored after global: read it first
		info.Partitions = 1
	}
	return info, true
}

// queryGlobal returns a read-only handle on a global store as this
// instance's global reader has applied it: a key is looked up here, never
// forwarded.
func (r *Runtime) queryGlobal(info StoreInfo, partition int32) (statestore.Store, error) {
	if info.Partitions == 0 {
		return nil, fmt.Errorf("%w: global store %q is not restored yet", ErrNotOwner, info.Spec.Name)
	}
	if partition != globalRows {
		return nil, fmt.Errorf("runtime: global store %q has one partition, 0; not %d", info.Spec.Name, partition)
	}
	s, err := r.db.Reader(info.Spec, globalRows)
	if err != nil {
		return nil, fmt.Errorf("runtime: %w", err)
	}
	return s, nil
}

// checkGlobalTopics is the preflight of the global tables' topics (see
// CheckTopics): each must exist; under the DeadLetter policy its
// dead-letter topic is created with as many partitions, or must have them.
func checkGlobalTopics(req Requirements, facts map[string]kafka.TopicFacts, opts PreflightOptions) (errs []error, create []kafka.TopicSpec) {
	for _, t := range req.Globals {
		f := facts[t]
		switch {
		case f.Unauthorized:
			errs = append(errs, fmt.Errorf("%w: global table topic %q: the cluster refuses to describe it (an ACL granting Read on it is needed)", ErrNotAuthorized, t))
			continue
		case !f.Exists():
			errs = append(errs, fmt.Errorf("%w: global table topic %q does not exist", ErrMissingTopic, t))
			continue
		}
		if !opts.DeadLetter {
			continue
		}
		dlq := DeadLetterTopic(t)
		switch d := facts[dlq]; {
		case d.Unauthorized:
			errs = append(errs, fmt.Errorf("%w: dead-letter topic %q: the cluster refuses to describe it (an ACL granting Write on it is needed, and one granting Create while it does not exist)", ErrNotAuthorized, dlq))
		case !d.Exists():
			create = append(create, opts.Internal.spec(dlq, f.Partitions, false))
		case d.Partitions != f.Partitions:
			errs = append(errs, fmt.Errorf("%w: dead-letter topic %q has %d partitions; weir needs %d, as many as %q",
				ErrInternalTopic, dlq, d.Partitions, f.Partitions, t))
		}
	}
	return errs, create
}
