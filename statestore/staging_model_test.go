package statestore

import (
	"cmp"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The model tests drive an overlay over an in-memory base with random
// operations and compare every read with two maps: the state the processor
// sees (current) and the committed state (the base). An epoch ends with
// Commit, with Changes applied to the base followed by Reset (the Badger
// engine's path), or with Reset alone (an abort).

var modelKeys = []string{"", "a", "ab", "abc", "b", "b\x00", "ba", "c"}

func randKey(r *rand.Rand) string { return modelKeys[r.IntN(len(modelKeys))] }

func randValue(r *rand.Rand) []byte {
	if r.IntN(10) == 0 {
		return []byte{}
	}
	return []byte{byte('a' + r.IntN(26)), byte('a' + r.IntN(26))}
}

// endEpoch ends an epoch of st in one of the three ways and returns the new
// committed state: current, or committed after an abort.
func endEpoch[M any](t *testing.T, r *rand.Rand, st Staged, apply func(Change), current, committed M) M {
	t.Helper()
	switch r.IntN(3) {
	case 0:
		require.NoError(t, st.Commit())
	case 1:
		changes, err := st.Changes()
		require.NoError(t, err)
		for _, c := range changes {
			apply(c)
		}
		st.Reset()
	default:
		st.Reset()
		return committed
	}
	require.Zero(t, st.StagedBytes())
	return current
}

func TestStagedKeyValueModel(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	s, err := NewStagedKeyValue(NewInMemoryKeyValue("kv"), 1<<20)
	require.NoError(t, err)
	committed, current := map[string]string{}, map[string]string{}

	want := wantKV
	var (
		pending     Iterator
		pendingWant []kv
	)
	for step := range 20000 {
		switch op := r.IntN(100); {
		case op < 40:
			k, v := randKey(r), randValue(r)
			require.NoError(t, s.Put([]byte(k), v))
			current[k] = string(v)
		case op < 55:
			k := randKey(r)
			require.NoError(t, s.Delete([]byte(k)))
			delete(current, k)
		case op < 70:
			k := randKey(r)
			v, ok := getKV(t, s, k)
			w, wok := current[k]
			require.Equal(t, wok, ok, "step %d key %q", step, k)
			require.Equal(t, w, v)
		case op < 80:
			from, to := randKey(r), randKey(r)
			open := r.IntN(3) == 0
			var toB []byte
			if !open {
				toB = []byte(to)
			}
			require.Equal(t, want(current, from, to, open), rangeKV(t, s, []byte(from), toB), "step %d", step)
		case op < 85:
			p := randKey(r)
			it, err := s.PrefixScan([]byte(p))
			require.NoError(t, err)
			var w []kv
			for _, e := range want(current, p, "", true) {
				if strings.HasPrefix(e.k, p) {
					w = append(w, e)
				}
			}
			require.Equal(t, w, drainKV(t, it))
		case op < 90:
			// An iterator opened now and drained later sees this state.
			if pending != nil {
				require.Equal(t, pendingWant, drainKV(t, pending))
			}
			pending, err = s.Range(nil, nil)
			require.NoError(t, err)
			pendingWant = want(current, "", "", true)
		default:
			committed = endEpoch(t, r, s, func(c Change) {
				require.NoError(t, s.Base().Put(c.Key, c.Value))
			}, current, committed)
			current = maps.Clone(committed)
			require.Equal(t, want(committed, "", "", true), rangeKV(t, s.Base(), nil, nil), "step %d", step)
		}
	}
	if pending != nil {
		require.Equal(t, pendingWant, drainKV(t, pending))
	}
}

type winID struct {
	k     string
	start int64
}

func TestStagedWindowModel(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	s, err := NewStagedWindow(NewInMemoryWindow("w"), 1<<20)
	require.NoError(t, err)
	committed, current := map[winID]string{}, map[winID]string{}
	want := wantWindows
	for step := range 6000 {
		k, start := randKey(r), int64(r.IntN(40))
		switch op := r.IntN(100); {
		case op < 40:
			v := randValue(r)
			require.NoError(t, s.Put([]byte(k), ms(start), v))
			current[winID{k, start}] = string(v)
		case op < 50:
			require.NoError(t, s.Put([]byte(k), ms(start), nil))
			delete(current, winID{k, start})
		case op < 55:
			cutoff := int64(r.IntN(30))
			require.NoError(t, s.ExpireBefore(ms(cutoff)))
			maps.DeleteFunc(current, func(id winID, _ string) bool { return id.start < cutoff })
		case op < 70:
			v, ok, err := s.Get([]byte(k), ms(start))
			require.NoError(t, err)
			w, wok := current[winID{k, start}]
			require.Equal(t, wok, ok, "step %d", step)
			require.Equal(t, w, string(v))
		case op < 80:
			to := start + int64(r.IntN(20)) - 5
			it, err := s.Fetch([]byte(k), ms(start), ms(to))
			require.NoError(t, err)
			require.Equal(t, want(current, &k, start, to), drainWindows(t, it), "step %d", step)
		case op < 90:
			to := start + int64(r.IntN(20)) - 5
			require.Equal(t, want(current, nil, start, to), fetchAll(t, s, start, to), "step %d", step)
		default:
			committed = endEpoch(t, r, s, func(c Change) {
				key, start, err := DecodeWindowKey(c.Key)
				require.NoError(t, err)
				require.NoError(t, s.Base().Put(key, start, c.Value))
			}, current, committed)
			current = maps.Clone(committed)
			require.Equal(t, want(committed, nil, 0, 100), fetchAll(t, s.Base(), 0, 100), "step %d", step)
		}
	}
}

type sessID struct {
	k          string
	start, end int64
}

func TestStagedSessionModel(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 17))
	base := scanningSessions{NewInMemorySession("s"), modelKeys}
	s, err := NewStagedSession(base, 1<<20)
	require.NoError(t, err)
	committed, current := map[sessID]string{}, map[sessID]string{}
	want := wantSessions
	for step := range 6000 {
		k, start := randKey(r), int64(r.IntN(40))
		end := start + int64(r.IntN(10))
		switch op := r.IntN(100); {
		case op < 40:
			v := randValue(r)
			require.NoError(t, s.Put([]byte(k), ms(start), ms(end), v))
			current[sessID{k, start, end}] = string(v)
		case op < 50:
			require.NoError(t, s.Remove([]byte(k), ms(start), ms(end)))
			delete(current, sessID{k, start, end})
		case op < 55:
			cutoff := int64(r.IntN(40))
			require.NoError(t, s.ExpireBefore(ms(cutoff)))
			maps.DeleteFunc(current, func(id sessID, _ string) bool { return id.end < cutoff })
		case op < 90:
			earliestEnd, latestStart := int64(r.IntN(50)), int64(r.IntN(50))
			it, err := s.FindSessions([]byte(k), ms(earliestEnd), ms(latestStart))
			require.NoError(t, err)
			require.Equal(t, want(current, k, earliestEnd, latestStart), drainSessions(t, it), "step %d", step)
		default:
			committed = endEpoch(t, r, s, func(c Change) {
				key, start, end, err := DecodeSessionKey(c.Key)
				require.NoError(t, err)
				require.NoError(t, s.Base().Put(key, start, end, c.Value))
			}, current, committed)
			current = maps.Clone(committed)
			for _, k := range modelKeys {
				require.Equal(t, want(committed, k, -1, 1000), allSessions(t, s.Base(), k), "step %d", step)
			}
		}
	}
}

// wantKV lists the entries of m with keys in [from, to) (to open if
// open), in key order.
func wantKV(m map[string]string, from, to string, open bool) []kv {
	var out []kv
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if k >= from && (open || k < to) {
			out = append(out, kv{k, m[k]})
		}
	}
	return out
}

// wantWindows lists the windows of m with key (every key if nil) whose
// start is in [from, to], ordered by key, then start.
func wantWindows(m map[winID]string, key *string, from, to int64) []win {
	var out []win
	for id, v := range m {
		if (key == nil || id.k == *key) && id.start >= from && id.start <= to {
			out = append(out, win{id.k, id.start, v})
		}
	}
	slices.SortFunc(out, func(a, b win) int {
		return cmp.Or(strings.Compare(a.k, b.k), cmp.Compare(a.start, b.start))
	})
	return out
}

// wantSessions lists the sessions of key in m that end at or after
// earliestEnd and start at or before latestStart, by start, then end.
func wantSessions(m map[sessID]string, key string, earliestEnd, latestStart int64) []sess {
	var out []sess
	for id, v := range m {
		if id.k == key && id.end >= earliestEnd && id.start <= latestStart {
			out = append(out, sess{id.k, id.start, id.end, v})
		}
	}
	slices.SortFunc(out, func(a, b sess) int { return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.end, b.end)) })
	return out
}
