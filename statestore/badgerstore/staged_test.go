package badgerstore_test

import (
	"cmp"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/statestore"
	"github.com/weirstream/weir/statestore/badgerstore"
)

// TestStagedEpochsOnBadger runs the engine's protocol: processors write
// staging overlays over Badger stores; an epoch commits by applying every
// overlay's Changes with the checkpoints in one Apply, then Reset, or aborts
// with Reset alone. The overlays must read like the model of the epoch's
// state, the Badger stores like the model of the committed state — after a
// reopen too.
func TestStagedEpochsOnBadger(t *testing.T) {
	dir := t.TempDir()
	db, err := badgerstore.Open(dir, badgerstore.Options{})
	require.NoError(t, err)
	const partition = 5
	kvStaged, err := statestore.NewStagedKeyValue(openKV(t, db, "kv", partition), 1<<20)
	require.NoError(t, err)
	winStaged, err := statestore.NewStagedWindow(openWindow(t, db, "win", partition), 1<<20)
	require.NoError(t, err)
	sessStaged, err := statestore.NewStagedSession(openSession(t, db, "sess", partition), 1<<20)
	require.NoError(t, err)
	overlays := []statestore.Staged{kvStaged, winStaged, sessStaged}

	type winID struct {
		k     string
		start int64
	}
	type sessID struct {
		k          string
		start, end int64
	}
	var (
		kvCur, kvCommitted     = map[string]string{}, map[string]string{}
		winCur, winCommitted   = map[winID]string{}, map[winID]string{}
		sessCur, sessCommitted = map[sessID]string{}, map[sessID]string{}
	)
	keys := []string{"", "a", "a\x00", "ab", "b"}
	r := rand.New(rand.NewPCG(21, 22))

	wantKV := func(m map[string]string) []kv {
		var out []kv
		for _, k := range slices.Sorted(maps.Keys(m)) {
			out = append(out, kv{k, m[k]})
		}
		return out
	}
	wantWin := func(m map[winID]string) []win {
		var out []win
		for id, v := range m {
			out = append(out, win{id.k, id.start, v})
		}
		slices.SortFunc(out, func(a, b win) int { return cmp.Or(strings.Compare(a.k, b.k), cmp.Compare(a.start, b.start)) })
		return out
	}
	wantSess := func(m map[sessID]string, key string) []sess {
		var out []sess
		for id, v := range m {
			if id.k == key {
				out = append(out, sess{id.k, id.start, id.end, v})
			}
		}
		slices.SortFunc(out, func(a, b sess) int { return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.end, b.end)) })
		return out
	}
	check := func(step int, kvs statestore.KeyValueStore, ws statestore.WindowStore, ss statestore.SessionStore,
		kvm map[string]string, wm map[winID]string, sm map[sessID]string,
	) {
		require.Equal(t, wantKV(kvm), rangeKV(t, kvs, nil, nil), "step %d", step)
		require.Equal(t, wantWin(wm), fetchAll(t, ws, -100, 100), "step %d", step)
		for _, k := range keys {
			require.Equal(t, wantSess(sm, k), find(t, ss, k, -100, 100), "step %d key %q", step, k)
		}
	}

	offset := int64(0)
	for step := range 3000 {
		k, v := keys[r.IntN(len(keys))], string(rune('a'+r.IntN(26)))
		start := int64(r.IntN(40))
		end := start + int64(r.IntN(10))
		offset++
		switch op := r.IntN(100); {
		case op < 15:
			require.NoError(t, kvStaged.Put([]byte(k), []byte(v)))
			kvCur[k] = v
		case op < 20:
			require.NoError(t, kvStaged.Delete([]byte(k)))
			delete(kvCur, k)
		case op < 35:
			require.NoError(t, winStaged.Put([]byte(k), ms(start), []byte(v)))
			winCur[winID{k, start}] = v
		case op < 40:
			require.NoError(t, winStaged.Put([]byte(k), ms(start), nil))
			delete(winCur, winID{k, start})
		case op < 43:
			cutoff := int64(r.IntN(30))
			require.NoError(t, winStaged.ExpireBefore(ms(cutoff)))
			maps.DeleteFunc(winCur, func(id winID, _ string) bool { return id.start < cutoff })
		case op < 58:
			require.NoError(t, sessStaged.Put([]byte(k), ms(start), ms(end), []byte(v)))
			sessCur[sessID{k, start, end}] = v
		case op < 63:
			require.NoError(t, sessStaged.Remove([]byte(k), ms(start), ms(end)))
			delete(sessCur, sessID{k, start, end})
		case op < 66:
			cutoff := int64(r.IntN(40))
			require.NoError(t, sessStaged.ExpireBefore(ms(cutoff)))
			maps.DeleteFunc(sessCur, func(id sessID, _ string) bool { return id.end < cutoff })
		case op < 85:
			check(step, kvStaged, winStaged, sessStaged, kvCur, winCur, sessCur)
		case op < 95:
			// Commit the epoch: one Apply for every store.
			var changes []badgerstore.Change
			checkpoints := map[sp]badgerstore.Position{}
			for _, o := range overlays {
				staged, err := o.Changes()
				require.NoError(t, err)
				for _, c := range staged {
					changes = append(changes, badgerstore.Change{Store: o.Name(), Partition: partition, Kind: o.Kind(), Key: c.Key, Value: c.Value})
				}
				checkpoints[sp{Store: o.Name(), Partition: partition}] = badgerstore.Position{Offset: offset}
			}
			require.NoError(t, db.Apply(changes, checkpoints))
			for _, o := range overlays {
				o.Reset()
			}
			kvCommitted, winCommitted, sessCommitted = maps.Clone(kvCur), maps.Clone(winCur), maps.Clone(sessCur)
			check(step, kvStaged.Base(), winStaged.Base(), sessStaged.Base(), kvCommitted, winCommitted, sessCommitted)
		default:
			// Abort: drop the staged state; the stores never saw it.
			for _, o := range overlays {
				o.Reset()
			}
			kvCur, winCur, sessCur = maps.Clone(kvCommitted), maps.Clone(winCommitted), maps.Clone(sessCommitted)
			check(step, kvStaged, winStaged, sessStaged, kvCur, winCur, sessCur)
		}
	}
	for _, o := range overlays {
		o.Reset()
	}
	committedAt, ok, err := db.Checkpoint("kv", partition)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, db.Close())

	db, err = badgerstore.Open(dir, badgerstore.Options{})
	require.NoError(t, err)
	defer db.Close()
	check(-1, openKV(t, db, "kv", partition), openWindow(t, db, "win", partition), openSession(t, db, "sess", partition),
		kvCommitted, winCommitted, sessCommitted)
	for _, store := range []string{"win", "sess"} {
		at, ok, err := db.Checkpoint(store, partition)
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, committedAt, at)
	}
}
