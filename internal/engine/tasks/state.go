package tasks

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/statestore"
	"github.com/weirstream/weir/statestore/badgerstore"
)

// DefaultStagingLimit bounds the bytes one store of one task may stage in
// one epoch or batch.
const DefaultStagingLimit = 64 << 20

// State stores live in one Badger database per instance, under
// <state dir>/stores. A task's processors write to staging overlays; an
// epoch or batch that commits in Kafka moves every overlay's writes into
// Badger in one batch, together with each store's changelog checkpoint (the
// offset to restore from next time), through a frozen layer (layers.go);
// one that aborts drops them — nothing is wiped, nothing restored. Badger,
// and so an interactive query, only ever holds committed state.

// openStores opens the instance's store database, rebuilt if damaged
// (rebuild.go).
func (r *Runtime) openStores() error {
	db, err := r.openStoresOrRebuild(filepath.Join(r.cfg.StateDir, "stores"), badgerstore.Options{Logger: r.log})
	if err != nil {
		return storesOpenError(r.cfg.StateDir, err)
	}
	r.db = db
	return nil
}

// openStores opens the stores of a task — restored up to the changelog's
// end — behind staging overlays, and returns the factory the task opens
// them through.
func (t *Task) openStores(ctx context.Context, specs []statestore.Spec) (statestore.Factory, error) {
	// A previous task of the partition may have left layers to apply: its
	// rows and checkpoints must be in Badger before this one restores.
	t.rt.waitApplied()
	for _, spec := range specs {
		t.owned = append(t.owned, badgerstore.StorePartition{Store: spec.Name, Partition: t.id.Partition})
		if spec.Logged { // before the task's first changelog record: its checkpoints (layers.go)
			t.rt.ackedOffsets().Track(processor.ChangelogTopic(spec.Name).Resolve(t.rt.cfg.ApplicationID))
		}
	}
	t.rt.standby.activate(t.owned)
	bases := make([]statestore.Store, 0, len(specs))
	fail := func(err error) (statestore.Factory, error) {
		for _, b := range bases {
			if b != nil {
				_ = b.Close()
			}
		}
		return nil, err
	}
	for _, spec := range specs {
		base, err := t.rt.db.Factory().Open(spec, t.id.Partition)
		if err != nil {
			return fail(fmt.Errorf("runtime: task %s: %w", t.id, err))
		}
		bases = append(bases, base)
		if spec.Logged {
			if err := t.restore(ctx, spec); err != nil {
				return fail(err)
			}
		}
	}
	if err := t.rt.committer.claimChangelogs(ctx, t, specs); err != nil {
		return fail(err)
	}
	f := stagedStores{}
	for i, spec := range specs {
		st, err := statestore.NewStaged(bases[i], spec.Kind, t.rt.stagingLimit())
		if err != nil {
			return fail(fmt.Errorf("runtime: task %s: %w", t.id, err))
		}
		t.staged = append(t.staged, stagedStore{spec: spec, Staged: st})
		bases[i] = nil
		f[spec.Name] = st
	}
	return f, nil
}

// claimChangelogs writes, under at-least-once, a marker with the task's
// writer generation to each of its changelog partitions and catches the
// restored stores up to it (see writer.go): a replaced owner's records
// that landed after the restore are then in the task's store exactly when
// a later restore applies them. Under exactly-once a replaced owner's
// records never commit, so there is nothing to claim.
func (t *Task) claimChangelogs(ctx context.Context, specs []statestore.Spec) error {
	var logged []statestore.Spec
	var markers []kafka.Record
	for _, spec := range specs {
		if spec.Logged {
			topic := processor.ChangelogTopic(spec.Name).Resolve(t.rt.cfg.ApplicationID)
			markers = append(markers, markerRecord(topic, t.id.Partition, t.writer))
			logged = append(logged, spec)
		}
	}
	if len(logged) == 0 {
		return nil
	}
	if err := t.writeMarkers(ctx, markers); err != nil {
		return fmt.Errorf("runtime: task %s: changelog marker: %w", t.id, err)
	}
	for _, spec := range logged {
		if err := t.restore(ctx, spec); err != nil {
			return err
		}
	}
	return nil
}

// writeMarkers sends the markers and waits for them alone
// (Producer.SendWait: a Flush here could take the failure of another
// task's output, which that task's epoch must see). A marker the
// producer gave up on for a cause that heals — its partition's leader
// being elected, say — is sent again, backing off, until the claim ends;
// sending one twice is harmless (the same generation). One no retry
// delivers is returned.
func (t *Task) writeMarkers(ctx context.Context, markers []kafka.Record) error {
	for attempt := 0; ; attempt++ {
		err := t.rt.producer.SendWait(ctx, markers...)
		if err == nil || ctx.Err() != nil {
			return err
		}
		if heals, fatal := t.rt.undelivered(ctx, err); !heals {
			return cmp.Or(fatal, err)
		}
		t.rt.log.Warn("weir: changelog marker not delivered; sending it again", "task", t.id.String(), "err", err)
		if err := kafka.Pause(ctx, kafka.Backoff(attempt)); err != nil {
			return err
		}
	}
}

func (r *Runtime) stagingLimit() int64 {
	if r.cfg.StagingLimit > 0 {
		return r.cfg.StagingLimit
	}
	return DefaultStagingLimit
}

// stagedStores is a factory over a task's already opened overlays.
type stagedStores map[string]statestore.Store

func (f stagedStores) Open(spec statestore.Spec, _ int32) (statestore.Store, error) {
	s, ok := f[spec.Name]
	if !ok {
		return nil, fmt.Errorf("runtime: no store %q", spec.Name)
	}
	return s, nil
}

type stagedStore struct {
	statestore.Staged
	spec statestore.Spec
}

// restore brings the Badger store of spec up to the end of its changelog
// partition (see catchUp) before the task runs on it, and raises the
// task's writer generation to the newest the changelog holds (the group's
// generations may have restarted, the group deleted and made again) —
// but for a task acquired out of the group (Task.outOfGroup), or by a
// member the coordinator no longer knows (replaced): raised, a zombie's
// records would carry the current owner's generation, restores would
// apply them after the owner's (a store gone back in time), and its
// external sink claim would fence the owner.
func (t *Task) restore(ctx context.Context, spec statestore.Spec) error {
	start := time.Now()
	c, err := t.rt.catchUp(ctx, spec, t.id.Partition, true)
	if err != nil {
		return fmt.Errorf("runtime: restore %q of task %s: %w", spec.Name, t.id, err)
	}
	if c.writer > t.writer && !t.outOfGroup && t.replaced(ctx, c.writer) {
		t.outOfGroup = true
	}
	if !t.outOfGroup {
		t.writer = max(t.writer, c.writer)
	}
	if c.applied > 0 || c.skipped > 0 {
		took := time.Since(start)
		t.rt.log.Info("weir: restored store", "store", spec.Name, "task", t.id.String(), "records", c.applied,
			"skipped_stale", c.skipped, "took", took.Round(time.Millisecond),
			"records_per_second", int64(float64(c.applied+c.skipped)/max(took.Seconds(), 1e-9)))
		if h := t.rt.cfg.Hooks.Restored; h != nil {
			h(spec.Name, int64(c.applied+c.skipped), took)
		}
	}
	return nil
}

// replaced reports whether the membership that acquired the task with an
// older generation than newest, the changelog's, is over: the coordinator
// no longer knows the member (UNKNOWN_MEMBER_ID: removed, a process stalled
// past its session timeout) or the group has moved past that generation
// (ILLEGAL_GENERATION) — kafka.Admin.InGeneration. A claim started from a
// member's last assignment after it lost it (a rewind ended its claims,
// which start again before the member rejoined) is then a zombie's: the
// newer generation is its successor's. A generation the coordinator still
// holds is the group's own, and newest comes from before the group was
// made again: the task takes it. Without a membership to ask (Acquire),
// or an answer that does not say, the membership is taken to hold.
func (t *Task) replaced(ctx context.Context, newest int32) bool {
	if t.member == nil {
		return false
	}
	in, err := t.rt.admin.InGeneration(ctx, *t.member)
	if err != nil || in {
		return false
	}
	t.rt.log.Warn("weir: a task acquired in a generation its member is no longer in keeps it",
		"task", t.id.String(), "generation", t.writer, "changelog_generation", newest, "member", t.member.MemberID)
	return true
}

// caughtUp is what one catchUp did.
type caughtUp struct {
	applied int
	// skipped counts the records of replaced writers it skipped (see
	// writer.go).
	skipped int
	// writer is the newest writer generation of the partition's changelog
	// up to where it read (from the checkpoint on).
	writer int32
	// lag is how far the rows were behind the changelog's end when the
	// catch-up began (offsets, markers and aborted records included).
	lag int64
}

// catchUp applies the changelog partition of a store to its Badger rows,
// from its checkpoint — or, without one, from the changelog's start after
// wiping whatever the partition held — to the changelog's end, skipping the
// records of replaced writers (see writer.go). Tasks do it before they run
// (restore true); standbys do it all along for the partitions other
// instances run.
//
// Under exactly-once a standby reads to the last stable offset: it must
// not wait for the owner's open transaction. A restore reads to the high
// watermark instead, waiting until every transaction below it is decided
// (ReadRange): the previous owner's last transaction may be committed —
// its input offsets already stable to this member's offset fetch — while
// its marker has not reached the changelog partition yet, so that its
// records still sit above the last stable offset. Restored to there, the
// task would start from those offsets without that transaction's state
// (the sums of a Reduce would come out short from then on).
func (r *Runtime) catchUp(ctx context.Context, spec statestore.Spec, p int32, restore bool) (caughtUp, error) {
	db := r.db
	topic := processor.ChangelogTopic(spec.Name).Resolve(r.cfg.ApplicationID)
	from, ok, err := db.Checkpoint(spec.Name, p)
	if err != nil {
		return caughtUp{}, err
	}
	end := r.EndOffsets
	if restore {
		end = r.admin.EndOffsets
	}
	ends, err := end(ctx, topic, []int32{p})
	if err != nil {
		return caughtUp{}, err
	}
	to := ends[p]
	if ok && from.Offset > to {
		// The changelog is shorter than the checkpoint: it was deleted and
		// created again, or the state dir belongs to another cluster.
		r.log.Warn("weir: store checkpoint is past its changelog's end; restoring from scratch",
			"store", spec.Name, "partition", p, "checkpoint", from.Offset, "end", to)
		ok = false
	}
	if !ok {
		if err := db.DropPartition(spec.Name, p); err != nil {
			return caughtUp{}, err
		}
		starts, err := r.admin.StartOffsets(ctx, topic, []int32{p})
		if err != nil {
			return caughtUp{}, err
		}
		from = badgerstore.Position{Offset: starts[p]}
	}
	filter := writerFilter{newest: from.Writer}
	lag := max(to-from.Offset, 0)
	if ok && from.Offset == to {
		return caughtUp{writer: from.Writer}, nil
	}
	sp := badgerstore.StorePartition{Store: spec.Name, Partition: p}
	ap := startApplier(db, sp, !ok, r.beforeRestoreApply, func(n int) {
		r.stats.Restored.Add(int64(n))
		if !restore {
			r.stats.Replicated.Add(int64(n))
		}
	})
	batch, size := ap.batch(), 0
	flush := func(next int64) error {
		err := ap.submit(ctx, batch, badgerstore.Position{Offset: next, Writer: filter.newest})
		batch, size = ap.batch(), 0
		return err
	}
	n := 0
	err = r.admin.ReadRange(ctx, topic, p, from.Offset, to, r.readCommitted.Load(), func(rec kafka.Record) error {
		if filter.keep(rec.Headers) && !IsWriterMarker(rec.Headers) {
			n++
			batch = append(batch, badgerstore.Change{Store: spec.Name, Partition: p, Kind: spec.Kind, Key: rec.Key, Value: rec.Value})
			size += len(rec.Key) + len(rec.Value)
		}
		if len(batch) >= restoreBatch || size >= restoreBatchBytes {
			return flush(rec.Offset + 1)
		}
		return nil
	})
	if err == nil {
		err = flush(to)
	}
	if serr := ap.stop(); serr != nil && !errors.Is(err, serr) {
		err = errors.Join(err, serr) // not what stopped the read already
	}
	return caughtUp{applied: n, skipped: filter.skipped, writer: filter.newest, lag: lag}, err
}

// EndOffsets returns how far the partitions can be read now: the last
// stable offset under exactly-once (read_committed), the high watermark
// otherwise. Restores and micro-batch plans end there.
func (r *Runtime) EndOffsets(ctx context.Context, topic string, partitions []int32) (map[int32]int64, error) {
	if r.readCommitted.Load() {
		return r.admin.StableOffsets(ctx, topic, partitions)
	}
	return r.admin.EndOffsets(ctx, topic, partitions)
}

// GroupCommitted returns the application group's committed offset of each
// partition (-1 where it has none), read stable: a commit inside a
// transaction still open is waited for.
func (r *Runtime) GroupCommitted(ctx context.Context, topic string, partitions []int32) (map[int32]int64, error) {
	return r.admin.CommittedOffsets(ctx, r.cfg.ApplicationID, topic, partitions)
}

// StartOffsets returns the log start offset of each partition.
func (r *Runtime) StartOffsets(ctx context.Context, topic string, partitions []int32) (map[int32]int64, error) {
	return r.admin.StartOffsets(ctx, topic, partitions)
}

// ReadableEnds returns EndOffsets of the partitions, and whether any of
// them holds records past that end — a transaction still open, or one
// ended whose markers are not written yet (Kafka writes them after EndTxn
// returns) — that EndOffsets does not reach yet but will. Never under
// at-least-once, where EndOffsets is the high watermark.
func (r *Runtime) ReadableEnds(ctx context.Context, topic string, partitions []int32) (map[int32]int64, bool, error) {
	high, err := r.admin.EndOffsets(ctx, topic, partitions)
	if err != nil || !r.readCommitted.Load() {
		return high, false, err
	}
	stable, err := r.admin.StableOffsets(ctx, topic, partitions)
	if err != nil {
		return nil, false, err
	}
	for p, end := range high {
		if stable[p] < end {
			return stable, true, nil
		}
	}
	return stable, false, nil
}

// isStagingFull reports an epoch too large for the staging limit: not bad
// input, so never dead-lettered.
func isStagingFull(err error) bool { return errors.Is(err, statestore.ErrStagingFull) }
