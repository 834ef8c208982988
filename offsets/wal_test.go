package offsets

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/statedir/damagetest"
)

var ctx = context.Background()

// batches lists a WAL's retained batches as plans and commits.
func batches(t *testing.T, w *WAL) ([]int64, []*Commit) {
	t.Helper()
	var ns []int64
	var cs []*Commit
	require.NoError(t, w.Batches(ctx, func(p Plan, c *Commit) error {
		ns = append(ns, p.Batch)
		cs = append(cs, c)
		return nil
	}))
	return ns, cs
}

func TestPlanThenCommit(t *testing.T) {
	_, w := openWAL(t, 0)

	_, found, err := w.LatestPlan()
	require.NoError(t, err)
	require.False(t, found)
	_, found, err = w.Pending()
	require.NoError(t, err)
	require.False(t, found)
	_, found, err = w.LatestCommit()
	require.NoError(t, err)
	require.False(t, found)

	require.NoError(t, w.WritePlan(ctx, plan(0)))
	got, found, err := w.Plan(0)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, plan(0), got)
	pending, found, err := w.Pending()
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, plan(0), pending)

	require.NoError(t, w.WriteCommit(ctx, commit(0)))
	_, found, err = w.Pending()
	require.NoError(t, err)
	require.False(t, found)
	c, found, err := w.LatestCommit()
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, commit(0), c)

	require.NoError(t, w.WritePlan(ctx, plan(1)))
	latest, found, err := w.LatestPlan()
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, plan(1), latest)
	c, _, err = w.LatestCommit()
	require.NoError(t, err)
	require.Equal(t, commit(0), c)

	ns, cs := batches(t, w)
	require.Equal(t, []int64{0, 1}, ns)
	require.Equal(t, commit(0), *cs[0])
	require.Nil(t, cs[1])

	_, found, err = w.Plan(7)
	require.NoError(t, err)
	require.False(t, found)
	_, _, err = w.Plan(-1)
	require.ErrorIs(t, err, ErrInvalid)
}

func TestFirstPlanMayStartAnywhere(t *testing.T) {
	_, w := openWAL(t, 0)
	require.NoError(t, w.WritePlan(ctx, plan(41)))
	require.NoError(t, w.WriteCommit(ctx, commit(41)))
	require.NoError(t, w.WritePlan(ctx, plan(42)))
}

func TestPendingSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{Logger: testLogger(t)})
	require.NoError(t, err)
	w, err := l.Namespace("app")
	require.NoError(t, err)
	require.NoError(t, w.WritePlan(ctx, plan(0)))
	require.NoError(t, w.WriteCommit(ctx, commit(0)))
	require.NoError(t, w.WritePlan(ctx, plan(1)))
	require.NoError(t, l.Close()) // the crash: batch 1 planned, never committed

	l = openAt(t, dir, 0)
	w, err = l.Namespace("app")
	require.NoError(t, err)
	p, found, err := w.Pending()
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, plan(1), p)

	// Replay writes the same plan again, then commits it.
	require.NoError(t, w.WritePlan(ctx, plan(1)))
	require.NoError(t, w.WriteCommit(ctx, commit(1)))
	_, found, err = w.Pending()
	require.NoError(t, err)
	require.False(t, found)
}

func TestIdempotentRewrites(t *testing.T) {
	_, w := openWAL(t, 0)
	require.NoError(t, w.WritePlan(ctx, plan(0)))
	require.NoError(t, w.WritePlan(ctx, plan(0)))
	require.NoError(t, w.WriteCommit(ctx, commit(0)))
	require.NoError(t, w.WriteCommit(ctx, commit(0)))
	require.NoError(t, w.WritePlan(ctx, plan(1)))
	// A committed batch's plan can be written again too.
	require.NoError(t, w.WritePlan(ctx, plan(0)))

	// Sub-millisecond differences are not differences: times are stored
	// in milliseconds.
	p := plan(1)
	p.Timestamp = p.Timestamp.Add(999)
	require.NoError(t, w.WritePlan(ctx, p))

	ns, _ := batches(t, w)
	require.Equal(t, []int64{0, 1}, ns)
}

func TestConflicts(t *testing.T) {
	_, w := openWAL(t, 0)
	require.NoError(t, w.WritePlan(ctx, plan(0)))

	other := plan(0)
	other.Ranges[0].End++
	err := w.WritePlan(ctx, other)
	require.ErrorIs(t, err, ErrConflict)
	require.EqualError(t, err, "offsets: conflict: batch 0 already has a different plan")

	err = w.WritePlan(ctx, plan(1))
	require.ErrorIs(t, err, ErrConflict, "batch 0 is pending")
	require.Contains(t, err.Error(), "still pending")

	require.NoError(t, w.WriteCommit(ctx, commit(0)))
	other.Batch = 0
	require.ErrorIs(t, w.WritePlan(ctx, other), ErrConflict, "a committed plan is conflicting too")

	different := commit(0)
	different.Timestamp = different.Timestamp.Add(1e9)
	require.ErrorIs(t, w.WriteCommit(ctx, different), ErrConflict)

	require.ErrorIs(t, w.WritePlan(ctx, plan(2)), ErrConflict, "skips batch 1")
	require.NoError(t, w.WritePlan(ctx, plan(1)))
	require.NoError(t, w.WriteCommit(ctx, commit(1)))
	require.NoError(t, w.DiscardPlan(ctx, 5), "nothing to discard")

	// Going back below the retained history.
	_, w2 := openWAL(t, 0)
	require.NoError(t, w2.WritePlan(ctx, plan(10)))
	require.NoError(t, w2.WriteCommit(ctx, commit(10)))
	require.ErrorIs(t, w2.WritePlan(ctx, plan(3)), ErrConflict)
}

func TestCommitWithoutPlan(t *testing.T) {
	_, w := openWAL(t, 0)
	err := w.WriteCommit(ctx, commit(0))
	require.ErrorIs(t, err, ErrNoPlan)
	require.EqualError(t, err, "offsets: no plan for batch 0")
	require.NoError(t, w.WritePlan(ctx, plan(0)))
	require.ErrorIs(t, w.WriteCommit(ctx, commit(1)), ErrNoPlan)
}

func TestDiscardPlan(t *testing.T) {
	_, w := openWAL(t, 0)
	require.NoError(t, w.WritePlan(ctx, plan(0)))
	require.NoError(t, w.WriteCommit(ctx, commit(0)))
	require.NoError(t, w.WritePlan(ctx, plan(1)))

	require.ErrorIs(t, w.DiscardPlan(ctx, 0), ErrConflict, "batch 0 is committed")
	require.NoError(t, w.DiscardPlan(ctx, 1))
	require.NoError(t, w.DiscardPlan(ctx, 1), "discarding again is harmless")
	_, found, err := w.Pending()
	require.NoError(t, err)
	require.False(t, found)

	// Batch 1 can now be planned afresh with other ranges.
	stale := plan(1)
	stale.Ranges = stale.Ranges[:1]
	require.NoError(t, w.WritePlan(ctx, stale))
	got, _, err := w.Plan(1)
	require.NoError(t, err)
	require.Equal(t, stale, got)
	require.ErrorIs(t, w.DiscardPlan(ctx, -1), ErrInvalid)
}

func TestRetentionKeepsLastK(t *testing.T) {
	_, w := openWAL(t, 3)
	for n := range int64(10) {
		require.NoError(t, w.WritePlan(ctx, plan(n)))
		require.NoError(t, w.WriteCommit(ctx, commit(n)))
		ns, _ := batches(t, w)
		require.Len(t, ns, int(min(n+1, 3)))
	}
	ns, cs := batches(t, w)
	require.Equal(t, []int64{7, 8, 9}, ns)
	for i, c := range cs {
		require.Equal(t, commit(ns[i]), *c)
	}

	// A pending plan beyond the kept ones stays; retention runs on commit.
	require.NoError(t, w.WritePlan(ctx, plan(10)))
	ns, _ = batches(t, w)
	require.Equal(t, []int64{7, 8, 9, 10}, ns)
	require.NoError(t, w.WriteCommit(ctx, commit(10)))
	ns, _ = batches(t, w)
	require.Equal(t, []int64{8, 9, 10}, ns)

	// No stray commits are left behind.
	n := 0
	require.NoError(t, w.log.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: w.commits})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			n++
		}
		return nil
	}))
	require.Equal(t, 3, n)
}

func TestRetentionNeverDeletesAPendingPlan(t *testing.T) {
	l, w := openWAL(t, 2)
	// An old plan without a commit cannot be written through the API (the
	// next plan would be refused), so forge one: batch 0 pending, batch 1
	// committed.
	require.NoError(t, l.db.Update(func(txn *badger.Txn) error {
		for _, rec := range []struct {
			key []byte
			val interface{ MarshalBinary() ([]byte, error) }
		}{{recordKey(w.offsets, 0), plan(0)}, {recordKey(w.offsets, 1), plan(1)}, {recordKey(w.commits, 1), commit(1)}} {
			b, err := rec.val.MarshalBinary()
			if err != nil {
				return err
			}
			if err := txn.Set(rec.key, b); err != nil {
				return err
			}
		}
		return nil
	}))
	for n := int64(2); n < 6; n++ {
		require.NoError(t, w.WritePlan(ctx, plan(n)))
		require.NoError(t, w.WriteCommit(ctx, commit(n)))
	}
	ns, cs := batches(t, w)
	require.Equal(t, []int64{0, 4, 5}, ns)
	require.Nil(t, cs[0])
}

func TestRetentionShrinksOnReopen(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{Logger: testLogger(t)})
	require.NoError(t, err)
	w, err := l.Namespace("app")
	require.NoError(t, err)
	for n := range int64(20) {
		require.NoError(t, w.WritePlan(ctx, plan(n)))
		require.NoError(t, w.WriteCommit(ctx, commit(n)))
	}
	require.NoError(t, l.Close())

	l = openAt(t, dir, 5)
	w, err = l.Namespace("app")
	require.NoError(t, err)
	ns, _ := batches(t, w)
	require.Len(t, ns, 20, "retention runs on the next commit, not on open")
	require.NoError(t, w.WritePlan(ctx, plan(20)))
	require.NoError(t, w.WriteCommit(ctx, commit(20)))
	ns, _ = batches(t, w)
	require.Equal(t, []int64{16, 17, 18, 19, 20}, ns)
}

func TestBatchesPagesAndStops(t *testing.T) {
	_, w := openWAL(t, 1000)
	const total = pageSize*2 + 3
	for n := range int64(total) {
		require.NoError(t, w.WritePlan(ctx, plan(n)))
		require.NoError(t, w.WriteCommit(ctx, commit(n)))
	}
	ns, _ := batches(t, w)
	require.Len(t, ns, total)
	for i, n := range ns {
		require.Equal(t, int64(i), n)
	}

	stop := errors.New("stop")
	seen := 0
	err := w.Batches(ctx, func(Plan, *Commit) error {
		seen++
		if seen == 3 {
			return stop
		}
		return nil
	})
	require.ErrorIs(t, err, stop)
	require.Equal(t, 3, seen)

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	require.ErrorIs(t, w.Batches(cctx, func(Plan, *Commit) error { return nil }), context.Canceled)

	// fn may call the WAL.
	require.NoError(t, w.Batches(ctx, func(p Plan, _ *Commit) error {
		_, _, err := w.Plan(p.Batch)
		return err
	}))
}

func TestNamespacesAreIndependent(t *testing.T) {
	l, a := openWAL(t, 0)
	b, err := l.Namespace("app-b")
	require.NoError(t, err)
	same, err := l.Namespace("app")
	require.NoError(t, err)
	require.Same(t, a, same)
	require.Equal(t, "app", a.Name())

	require.NoError(t, a.WritePlan(ctx, plan(0)))
	require.NoError(t, b.WritePlan(ctx, plan(5)), "app's pending batch does not block app-b")
	_, found, err := b.Plan(0)
	require.NoError(t, err)
	require.False(t, found)
	require.NoError(t, b.AppendEpoch(ctx, epoch(1)))

	names, err := l.Namespaces()
	require.NoError(t, err)
	require.Equal(t, []string{"app", "app-b"}, names)

	for _, bad := range []string{"", "a/b", "tab\there", string([]byte{0xff}), string(make([]byte, 256))} {
		_, err := l.Namespace(bad)
		require.ErrorIs(t, err, ErrInvalid, "%q", bad)
	}
}

func TestClosed(t *testing.T) {
	l, err := Open(t.TempDir(), Options{Logger: testLogger(t)})
	require.NoError(t, err)
	w, err := l.Namespace("app")
	require.NoError(t, err)
	require.NoError(t, w.WritePlan(ctx, plan(0)))
	require.NoError(t, l.Close())
	require.NoError(t, l.Close(), "Close is idempotent")

	require.ErrorIs(t, w.WritePlan(ctx, plan(0)), ErrClosed)
	require.ErrorIs(t, w.WriteCommit(ctx, commit(0)), ErrClosed)
	require.ErrorIs(t, w.DiscardPlan(ctx, 0), ErrClosed)
	require.ErrorIs(t, w.AppendEpoch(ctx, epoch(0)), ErrClosed)
	_, _, err = w.Plan(0)
	require.ErrorIs(t, err, ErrClosed)
	_, _, err = w.LatestPlan()
	require.ErrorIs(t, err, ErrClosed)
	_, _, err = w.LatestCommit()
	require.ErrorIs(t, err, ErrClosed)
	_, _, err = w.Pending()
	require.ErrorIs(t, err, ErrClosed)
	_, _, err = w.LatestEpoch()
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, w.Batches(ctx, func(Plan, *Commit) error { return nil }), ErrClosed)
	require.ErrorIs(t, w.Epochs(ctx, func(Epoch) error { return nil }), ErrClosed)
	_, err = l.Namespace("other")
	require.ErrorIs(t, err, ErrClosed)
	_, err = l.Namespaces()
	require.ErrorIs(t, err, ErrClosed)
	require.EqualError(t, ErrClosed, "offsets: closed")
}

func TestOpenErrors(t *testing.T) {
	_, err := Open("", Options{})
	require.ErrorIs(t, err, ErrInvalid)
	_, err = Open(t.TempDir(), Options{Retain: -1})
	require.ErrorIs(t, err, ErrInvalid)

	// The directory is locked while a Log has it open.
	dir := t.TempDir()
	openAt(t, dir, 0)
	_, err = Open(dir, Options{Logger: testLogger(t)})
	require.Error(t, err)
	require.Contains(t, err.Error(), "offsets: open "+dir)

	// A Badger database of another kind is refused.
	other := filepath.Join(t.TempDir(), "store")
	db, err := badger.Open(badger.DefaultOptions(other).WithLogger(nil))
	require.NoError(t, err)
	require.NoError(t, db.Update(func(txn *badger.Txn) error { return txn.Set([]byte("key"), []byte("value")) }))
	require.NoError(t, db.Close())
	_, err = Open(other, Options{Logger: testLogger(t)})
	require.ErrorIs(t, err, ErrCorrupt)
	// ...and left usable: the failed Open closed it.
	db, err = badger.Open(badger.DefaultOptions(other).WithLogger(nil))
	require.NoError(t, err)
	require.NoError(t, db.Close())
}

func TestCorruptRecords(t *testing.T) {
	l, w := openWAL(t, 0)
	require.NoError(t, w.WritePlan(ctx, plan(0)))
	require.NoError(t, w.WriteCommit(ctx, commit(0)))

	// Plan 1's key holding plan 2's bytes.
	b, err := plan(2).MarshalBinary()
	require.NoError(t, err)
	require.NoError(t, l.db.Update(func(txn *badger.Txn) error { return txn.Set(recordKey(w.offsets, 1), b) }))
	_, _, err = w.LatestPlan()
	require.ErrorIs(t, err, ErrCorrupt)
	require.Contains(t, err.Error(), "app/offsets/00000000000000000001")

	require.NoError(t, l.db.Update(func(txn *badger.Txn) error { return txn.Set(recordKey(w.offsets, 1), []byte{9, 9}) }))
	_, _, err = w.Plan(1)
	require.ErrorIs(t, err, ErrCorrupt)
	_, _, err = w.Pending()
	require.ErrorIs(t, err, ErrCorrupt)
	require.ErrorIs(t, w.WritePlan(ctx, plan(1)), ErrCorrupt)
	require.ErrorIs(t, w.Batches(ctx, func(Plan, *Commit) error { return nil }), ErrCorrupt)

	require.NoError(t, l.db.Update(func(txn *badger.Txn) error { return txn.Set(append(w.offsets, "12x"...), b) }))
	require.ErrorIs(t, w.Batches(ctx, func(Plan, *Commit) error { return nil }), ErrCorrupt)
}

func TestCanceledContext(t *testing.T) {
	_, w := openWAL(t, 0)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	err := w.WritePlan(cctx, plan(0))
	require.ErrorIs(t, err, context.Canceled)
	require.EqualError(t, err, "offsets: write plan 0: context canceled")
	require.ErrorIs(t, w.AppendEpoch(cctx, epoch(0)), context.Canceled)
	_, found, err := w.LatestPlan()
	require.NoError(t, err)
	require.False(t, found)

	// A writer waiting for another gives up when its context ends.
	w.write <- struct{}{}
	tctx, cancel := context.WithCancel(ctx)
	done := make(chan error)
	go func() { done <- w.WritePlan(tctx, plan(0)) }()
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	<-w.write
}

func TestInvalidArguments(t *testing.T) {
	_, w := openWAL(t, 0)
	bad := plan(0)
	bad.Ranges[0], bad.Ranges[1] = bad.Ranges[1], bad.Ranges[0]
	require.ErrorIs(t, w.WritePlan(ctx, bad), ErrInvalid)
	require.ErrorIs(t, w.WriteCommit(ctx, Commit{Batch: -1}), ErrInvalid)
	require.ErrorIs(t, w.AppendEpoch(ctx, Epoch{Epoch: -1}), ErrInvalid)
}

// TestConcurrentWriters runs batches in several namespaces at once, with
// duplicate writers racing on the same batches, readers listing, and
// epochs appended from many goroutines. Run it with -race.
func TestConcurrentWriters(t *testing.T) {
	l := openAt(t, t.TempDir(), 5)
	const namespaces, batchesPer = 4, 25

	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range namespaces {
		w, err := l.Namespace(fmt.Sprintf("app-%d", i))
		require.NoError(t, err)
		// Two writers replay the same batches: every write either lands or
		// finds the identical record in place.
		for range 2 {
			wg.Go(func() {
				for n := range int64(batchesPer) {
					if err := w.WritePlan(ctx, plan(n)); err != nil && !errors.Is(err, ErrConflict) {
						errs <- err
						return
					} else if err != nil {
						// The other writer is at another batch (n was
						// trimmed, or the other's batch is pending): skip n.
						continue
					}
					if err := w.WriteCommit(ctx, commit(n)); err != nil {
						// Between this writer's WritePlan and WriteCommit the
						// other committed n and planned Retain batches more,
						// which trimmed n's plan: skip n.
						latest, ok, lerr := w.LatestPlan()
						if errors.Is(err, ErrNoPlan) && lerr == nil && ok && latest.Batch >= n+5 {
							continue
						}
						errs <- err
						return
					}
				}
			})
		}
		wg.Go(func() {
			for range batchesPer {
				if _, _, err := w.Pending(); err != nil {
					errs <- err
					return
				}
				if err := w.Batches(ctx, func(p Plan, c *Commit) error {
					if c != nil && c.Batch != p.Batch {
						return fmt.Errorf("commit %d listed with plan %d", c.Batch, p.Batch)
					}
					return nil
				}); err != nil {
					errs <- err
					return
				}
			}
		})
	}

	ew, err := l.Namespace("epochs")
	require.NoError(t, err)
	var next sync.Mutex
	epochNo := int64(0)
	for range 4 {
		wg.Go(func() {
			for range 20 {
				next.Lock()
				epochNo++
				e := epochNo
				next.Unlock()
				// Appends may arrive out of order; the late ones conflict.
				if err := ew.AppendEpoch(ctx, epoch(e)); err != nil && !errors.Is(err, ErrConflict) {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	for i := range namespaces {
		w, err := l.Namespace(fmt.Sprintf("app-%d", i))
		require.NoError(t, err)
		ns, cs := batches(t, w)
		require.Equal(t, []int64{20, 21, 22, 23, 24}, ns)
		for _, c := range cs {
			require.NotNil(t, c)
		}
	}
	var es []int64
	require.NoError(t, ew.Epochs(ctx, func(e Epoch) error { es = append(es, e.Epoch); return nil }))
	require.Len(t, es, 5)
	require.True(t, slicesIsSortedStrict(es), "%v", es)
	latest, found, err := ew.LatestEpoch()
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, es[len(es)-1], latest.Epoch)
}

func slicesIsSortedStrict(s []int64) bool {
	for i := 1; i < len(s); i++ {
		if s[i] <= s[i-1] {
			return false
		}
	}
	return true
}

// TestCloseWhileWriting closes the log under running writers and readers:
// each operation either completes or returns ErrClosed.
func TestCloseWhileWriting(t *testing.T) {
	l, err := Open(t.TempDir(), Options{Logger: testLogger(t)})
	require.NoError(t, err)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 4 {
		w, err := l.Namespace(fmt.Sprintf("app-%d", i))
		require.NoError(t, err)
		wg.Go(func() {
			for n := int64(0); ; n++ {
				err := w.WritePlan(ctx, plan(n))
				if err == nil {
					err = w.WriteCommit(ctx, commit(n))
				}
				if err == nil {
					_, _, err = w.LatestCommit()
				}
				if errors.Is(err, ErrClosed) {
					return
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	w0, err := l.Namespace("app-0")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		c, found, err := w0.LatestCommit()
		return err == nil && found && c.Batch >= 3
	}, 10*time.Second, time.Millisecond)
	require.NoError(t, l.Close())
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

func TestDeleteBeforeBudgetAndLowMark(t *testing.T) {
	l, w := openWAL(t, 1000)
	for n := range int64(10) {
		require.NoError(t, w.WritePlan(ctx, plan(n)))
		require.NoError(t, w.WriteCommit(ctx, commit(n)))
	}
	err := l.db.Update(func(txn *badger.Txn) error {
		deleted, low, err := deleteBefore(txn, w.commits, 0, 8, 3, nil)
		require.NoError(t, err)
		require.Equal(t, 3, deleted)
		require.Equal(t, int64(3), low, "the budget ran out at commit 3")

		deleted, low, err = deleteBefore(txn, w.commits, low, 8, 100, func(n int64) (bool, error) { return n == 5, nil })
		require.NoError(t, err)
		require.Equal(t, 4, deleted)
		require.Equal(t, int64(5), low, "commit 5 was kept")

		deleted, low, err = deleteBefore(txn, w.commits, 8, 8, 100, nil)
		require.NoError(t, err)
		require.Zero(t, deleted)
		require.Equal(t, int64(8), low)
		return nil
	})
	require.NoError(t, err)

	// Retention raises the marks, so later scans skip the tombstones.
	_, w3 := openWAL(t, 3)
	for n := range int64(10) {
		require.NoError(t, w3.WritePlan(ctx, plan(n)))
		require.NoError(t, w3.WriteCommit(ctx, commit(n)))
		require.NoError(t, w3.AppendEpoch(ctx, epoch(n)))
	}
	require.Equal(t, int64(7), w3.lowOffsets.load())
	require.Equal(t, int64(7), w3.lowCommits.load())
	require.Equal(t, int64(7), w3.lowEpochs.load())
}

// A damaged log is ErrDamaged, naming the file, never a panic; each kind
// of damage.
func TestOpenDamaged(t *testing.T) {
	for _, kind := range damagetest.Kinds {
		t.Run(kind, func(t *testing.T) {
			dir := closedLog(t, 50)
			_, err := damagetest.Damage(dir, kind, 3)
			require.NoError(t, err)
			_, err = Open(dir, Options{Logger: slog.New(slog.DiscardHandler)})
			require.ErrorIs(t, err, ErrDamaged)
			require.ErrorContains(t, err, dir)
		})
	}
}

// A killed process can leave an empty memtable log (.mem), which Badger's
// own Open refuses; it holds nothing, so the log opens with its entries.
func TestOpenWithAnEmptyMemtable(t *testing.T) {
	dir := closedLog(t, 50)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "00099.mem"), nil, 0o644))

	l := openAt(t, dir, 0)
	w, err := l.Namespace("app")
	require.NoError(t, err)
	last, ok, err := w.LatestEpoch()
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, int64(49), last.Epoch)
}

// closedLog writes epochs 0..n-1 to namespace "app" of a new log and
// closes it, returning its directory.
func closedLog(t *testing.T, n int64) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "offsets")
	l, err := Open(dir, Options{Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	w, err := l.Namespace("app")
	require.NoError(t, err)
	for i := range n {
		require.NoError(t, w.AppendEpoch(ctx, Epoch{Epoch: i}))
	}
	require.NoError(t, l.Close())
	return dir
}
