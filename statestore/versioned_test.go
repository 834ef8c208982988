package statestore_test

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/statestore"
)

// versionModel is the versioned store's reference: every version ever put
// within the grace period, per key, and the lookups' rules applied to
// them directly (nothing is ever expired from it).
type versionModel struct {
	retention int64
	observed  int64
	versions  map[string][]modelVersion // by from
}

type modelVersion struct {
	from  int64
	value *string
}

func (m *versionModel) put(k string, v *string, at int64) statestore.PutStatus {
	if m.observed >= 0 && at < m.observed-m.retention {
		return statestore.PutExpired
	}
	m.observed = max(m.observed, at)
	vs := m.versions[k]
	i, found := slices.BinarySearchFunc(vs, at, func(v modelVersion, t int64) int { return int(v.from - t) })
	if found {
		vs[i].value = v
	} else {
		vs = slices.Insert(vs, i, modelVersion{at, v})
	}
	m.versions[k] = vs
	if i == len(vs)-1 {
		return statestore.PutLatest
	}
	return statestore.PutHistory
}

// asOf returns the value valid at, its from and its to (-1: latest).
func (m *versionModel) asOf(k string, at int64) (*string, int64, int64) {
	vs := m.versions[k]
	for i := len(vs) - 1; i >= 0; i-- {
		if vs[i].from > at {
			continue
		}
		to := int64(-1)
		if i < len(vs)-1 {
			to = vs[i+1].from
			if at < m.observed-m.retention {
				return nil, 0, 0 // beyond the history retention
			}
		}
		return vs[i].value, vs[i].from, to
	}
	return nil, 0, 0
}

func TestVersionedMatchesModel(t *testing.T) {
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 11))
		retention := int64(rng.IntN(40))
		m := &versionModel{retention: retention, observed: -1, versions: map[string][]modelVersion{}}
		s := statestore.NewInMemoryVersioned("v", time.Duration(retention)*time.Millisecond)
		keys := []string{"a", "b", "c"}
		now := int64(100)
		for step := range 300 {
			k := keys[rng.IntN(len(keys))]
			at := now - int64(rng.IntN(60))
			if rng.IntN(3) == 0 {
				now += int64(rng.IntN(10))
			}
			switch rng.IntN(3) {
			case 0, 1:
				var v *string
				if rng.IntN(5) > 0 {
					text := string(rune('p' + rng.IntN(8)))
					v = &text
				}
				var vb []byte
				if v != nil {
					vb = []byte(*v)
				}
				want := m.put(k, v, at)
				got, _, err := s.Put([]byte(k), vb, time.UnixMilli(at))
				require.NoError(t, err)
				require.Equal(t, want, got, "seed %d step %d: put %s@%d", seed, step, k, at)
			default:
				v, from, to := m.asOf(k, at)
				rec, ok, err := s.GetAsOf([]byte(k), time.UnixMilli(at))
				require.NoError(t, err)
				require.Equal(t, v != nil, ok, "seed %d step %d: asOf %s@%d", seed, step, k, at)
				if ok {
					require.Equal(t, *v, string(rec.Value), "seed %d step %d", seed, step)
					require.Equal(t, from, rec.ValidFrom.UnixMilli(), "seed %d step %d", seed, step)
					require.Equal(t, to == -1, rec.Latest, "seed %d step %d", seed, step)
					if to != -1 {
						require.Equal(t, to, rec.ValidTo.UnixMilli(), "seed %d step %d", seed, step)
					}
				}
			}
		}
	}
}

// A key deleted longer ago than the history retention leaves nothing in
// the store, as in Kafka Streams, whose tombstones live in segments that
// expire: a table of short-lived keys stays bounded.
func TestVersionedExpiresOldTombstones(t *testing.T) {
	kv := statestore.NewInMemoryKeyValue("v")
	s := statestore.NewVersioned(kv, 10*time.Millisecond)
	for i := range 100 {
		k := []byte{byte(i)}
		_, _, err := s.Put(k, []byte("x"), time.UnixMilli(int64(i)))
		require.NoError(t, err)
		_, _, err = s.Put(k, nil, time.UnixMilli(int64(i)+1))
		require.NoError(t, err)
	}
	// Keys 90 to 99 were deleted after 90, stream time 100 minus the
	// retention: each keeps its tombstone, its older value and their two
	// index entries; the other keys left nothing. Plus the stream time.
	it, err := kv.Range(nil, nil)
	require.NoError(t, err)
	n := 0
	for it.Next() {
		n++
	}
	require.NoError(t, it.Close())
	require.Equal(t, 1+4*10, n, "entries left in the store")

	// A deleted key whose tombstone expired reads as absent, and a put
	// after it is the key's latest.
	_, ok, err := s.LatestTimestamp([]byte{0})
	require.NoError(t, err)
	require.False(t, ok)
	_, ok, err = s.GetAsOf([]byte{0}, time.UnixMilli(95))
	require.NoError(t, err)
	require.False(t, ok)
	st, _, err := s.Put([]byte{0}, []byte("y"), time.UnixMilli(95))
	require.NoError(t, err)
	require.Equal(t, statestore.PutLatest, st)
}
