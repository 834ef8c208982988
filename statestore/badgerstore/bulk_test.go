package badgerstore_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/statestore"
	"github.com/weirstream/weir/statestore/badgerstore"
)

// freshChangelog is a changelog of one key-value store partition as
// batches: n writes to keys drawn from a few hundred (so keys repeat
// within a batch and across batches), one in six a tombstone; want is the
// state it leaves, the last value of each key.
func freshChangelog(seed uint64, n int) (batches [][]badgerstore.Change, want map[string]string) {
	rng := rand.New(rand.NewPCG(seed, 1))
	want = map[string]string{}
	var batch []badgerstore.Change
	size := 1 + rng.IntN(400)
	for i := range n {
		k := fmt.Sprintf("k%03d", rng.IntN(300))
		c := badgerstore.Change{Store: "counts", Partition: 3, Kind: statestore.KindKeyValue, Key: []byte(k)}
		if rng.IntN(6) == 0 {
			delete(want, k)
		} else {
			c.Value = fmt.Appendf(nil, "v%d", i)
			want[k] = string(c.Value)
		}
		batch = append(batch, c)
		if len(batch) == size || i == n-1 {
			batches = append(batches, batch)
			batch, size = nil, 1+rng.IntN(400)
		}
	}
	return batches, want
}

// A restore's ApplyFresh batches leave the store partition as Apply's
// would: each key's last value, no key whose last write deleted it, the
// last batch's checkpoint; a write after them wins over them, and all of
// it survives a reopen.
func TestApplyFreshMatchesApply(t *testing.T) {
	seed := kafkatest.Seed(t)
	batches, want := freshChangelog(seed, 5000)
	part := sp{Store: "counts", Partition: 3}

	dir := t.TempDir()
	fresh, err := badgerstore.Open(dir, badgerstore.Options{})
	require.NoError(t, err)
	plain := openTestDB(t, badgerstore.Options{})
	other := openKV(t, fresh, "counts", 4) // another partition, written meanwhile
	offset := int64(0)
	for i, b := range batches {
		offset += int64(len(b))
		require.NoError(t, fresh.ApplyFresh(b, part, badgerstore.Position{Offset: offset, Writer: 2}))
		require.NoError(t, plain.Apply(b, map[sp]badgerstore.Position{part: {Offset: offset, Writer: 2}}))
		require.NoError(t, other.Put([]byte("other"), fmt.Appendf(nil, "%d", i)))
	}
	wantKV := func(m map[string]string) []kv {
		var out []kv
		for k, v := range m {
			out = append(out, kv{k, v})
		}
		sortKV(out)
		return out
	}
	require.Equal(t, wantKV(want), rangeKV(t, openKV(t, plain, "counts", 3), nil, nil), "Apply")
	require.Equal(t, wantKV(want), rangeKV(t, openKV(t, fresh, "counts", 3), nil, nil), "ApplyFresh")
	pos, ok, err := fresh.Checkpoint("counts", 3)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, badgerstore.Position{Offset: offset, Writer: 2}, pos)

	// The task's writes after the restore win over the restored rows.
	s := openKV(t, fresh, "counts", 3)
	for k := range want {
		require.NoError(t, s.Put([]byte(k), []byte("after")))
		want[k] = "after"
		break
	}
	require.NoError(t, fresh.Apply([]badgerstore.Change{{Store: "counts", Partition: 3, Kind: statestore.KindKeyValue, Key: []byte("k000")}}, nil))
	delete(want, "k000")
	require.NoError(t, fresh.Close())

	fresh, err = badgerstore.Open(dir, badgerstore.Options{})
	require.NoError(t, err)
	defer func() { require.NoError(t, fresh.Close()) }()
	require.Equal(t, wantKV(want), rangeKV(t, openKV(t, fresh, "counts", 3), nil, nil), "after a reopen")
	require.Equal(t, []kv{{"other", strconv.Itoa(len(batches) - 1)}}, rangeKV(t, openKV(t, fresh, "counts", 4), nil, nil))
}

func TestApplyFreshInvalid(t *testing.T) {
	db := openTestDB(t, badgerstore.Options{})
	part := sp{Store: "counts", Partition: 0}
	kvc := func(store string, p int32, kind statestore.Kind) badgerstore.Change {
		return badgerstore.Change{Store: store, Partition: p, Kind: kind, Key: []byte("k"), Value: []byte("v")}
	}
	for name, changes := range map[string][]badgerstore.Change{
		"another partition": {kvc("counts", 1, statestore.KindKeyValue)},
		"another store":     {kvc("sums", 0, statestore.KindKeyValue)},
		"two kinds":         {kvc("counts", 0, statestore.KindKeyValue), kvc("counts", 0, statestore.KindWindow)},
		"bad window key":    {kvc("counts", 0, statestore.KindWindow)},
	} {
		require.ErrorIs(t, db.ApplyFresh(changes, part, badgerstore.Position{Offset: 1}), badgerstore.ErrInvalid, name)
	}
	require.ErrorIs(t, db.ApplyFresh(nil, part, badgerstore.Position{Offset: -1}), badgerstore.ErrInvalid)
	require.NoError(t, db.Apply([]badgerstore.Change{kvc("counts", 0, statestore.KindKeyValue)}, nil))
	require.ErrorIs(t, db.ApplyFresh([]badgerstore.Change{{Store: "counts", Kind: statestore.KindWindow,
		Key: statestore.EncodeWindowKey([]byte("k"), ms(1)), Value: []byte("w")}}, part, badgerstore.Position{Offset: 1}),
		badgerstore.ErrInvalid, "a key-value partition")
	_, ok, err := db.Checkpoint("counts", 0)
	require.NoError(t, err)
	require.False(t, ok, "a failed ApplyFresh wrote a checkpoint")
}

func sortKV(kvs []kv) {
	slices.SortFunc(kvs, func(a, b kv) int { return strings.Compare(a.k, b.k) })
}

// envFreshCrash makes TestApplyFreshKilled's child: it applies the
// changelog with ApplyFresh into the directory it names and kills itself
// with SIGKILL in the middle of a batch.
const envFreshCrash = "WEIR_TEST_FRESH_CRASH_DIR"

// A process killed in the middle of a restore's ApplyFresh batches leaves
// a checkpoint no further than the rows written; a restore that goes on
// from it (with Apply, as from any checkpoint) ends with the changelog's
// state, the rows the killed batch had written replaced.
func TestApplyFreshKilled(t *testing.T) {
	if dir := os.Getenv(envFreshCrash); dir != "" {
		freshCrashChild(dir)
		return
	}
	seed := kafkatest.Seed(t)
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestApplyFreshKilled$")
	cmd.Env = append(os.Environ(), envFreshCrash+"="+dir, "WEIR_TEST_SEED="+strconv.FormatUint(seed, 10))
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "the child was not killed: %s", out)
	ws, ok := exit.Sys().(syscall.WaitStatus)
	require.True(t, ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL, "the child ended otherwise: %v: %s", err, out)

	batches, want := freshChangelog(seed, 20000)
	db, err := badgerstore.Open(dir, badgerstore.Options{})
	require.NoError(t, err)
	defer func() { require.NoError(t, db.Close()) }()
	pos, ok, err := db.Checkpoint("counts", 3)
	require.NoError(t, err)
	require.True(t, ok, "no checkpoint")
	total, done := int64(0), -1
	for i, b := range batches {
		total += int64(len(b))
		if total == pos.Offset {
			done = i
		}
	}
	require.GreaterOrEqual(t, done, len(batches)/2-1, "checkpoint %d is not at the end of a batch past the half", pos.Offset)
	require.Less(t, done, len(batches)-1, "the child finished")
	offset := pos.Offset
	for _, b := range batches[done+1:] {
		offset += int64(len(b))
		require.NoError(t, db.Apply(b, map[sp]badgerstore.Position{{Store: "counts", Partition: 3}: {Offset: offset}}))
	}
	var wantKV []kv
	for k, v := range want {
		wantKV = append(wantKV, kv{k, v})
	}
	sortKV(wantKV)
	require.Equal(t, wantKV, rangeKV(t, openKV(t, db, "counts", 3), nil, nil))
}

// freshCrashChild applies half the batches, starts the next and kills
// the process while it runs.
func freshCrashChild(dir string) {
	seed, _ := strconv.ParseUint(os.Getenv("WEIR_TEST_SEED"), 10, 64)
	batches, _ := freshChangelog(seed, 20000)
	db, err := badgerstore.Open(dir, badgerstore.Options{})
	if err != nil {
		panic(err)
	}
	part := badgerstore.StorePartition{Store: "counts", Partition: 3}
	offset := int64(0)
	for i, b := range batches {
		offset += int64(len(b))
		if i == len(batches)/2 {
			go func() { _ = db.ApplyFresh(b, part, badgerstore.Position{Offset: offset}) }()
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		if err := db.ApplyFresh(b, part, badgerstore.Position{Offset: offset}); err != nil {
			panic(err)
		}
	}
}

// ApplyFresh while other tasks commit to the same database, as a restore
// runs beside the instance's other tasks: the restored rows are all
// there and the others' writes too. (Under -race this caught ApplyFresh
// reading Badger's newest version racily, through DB.MaxVersion.)
func TestApplyFreshBesideCommits(t *testing.T) {
	batches, want := freshChangelog(kafkatest.Seed(t), 3000)
	part := sp{Store: "counts", Partition: 3}
	db := openTestDB(t, badgerstore.Options{})
	other := openKV(t, db, "counts", 4)
	done := make(chan struct{})
	writes := make(chan int, 1)
	go func() {
		n := 0
		defer func() { writes <- n }()
		for {
			select {
			case <-done:
				return
			default:
			}
			if err := other.Put(fmt.Appendf(nil, "o%05d", n), []byte("x")); err != nil {
				return
			}
			n++
		}
	}()
	offset := int64(0)
	for _, b := range batches {
		offset += int64(len(b))
		require.NoError(t, db.ApplyFresh(b, part, badgerstore.Position{Offset: offset}))
	}
	close(done)
	n := <-writes
	var wantKV []kv
	for k, v := range want {
		wantKV = append(wantKV, kv{k, v})
	}
	sortKV(wantKV)
	require.Equal(t, wantKV, rangeKV(t, openKV(t, db, "counts", 3), nil, nil))
	require.Len(t, rangeKV(t, other, nil, nil), n)
}
