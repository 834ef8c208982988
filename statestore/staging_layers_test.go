package statestore

import (
	"maps"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// The layer tests drive an overlay as an engine that applies committed
// epochs behind processing does: an epoch that commits is frozen (Freeze),
// or frozen pending while its commit runs behind (FreezePending) and then
// marked committed (Layer.Commit) or, when it aborts, discarded with the
// epoch in progress (Layer.Discard, Reset); an aborted epoch is dropped
// (Reset); and the oldest committed layer is applied to the base
// (Changes, then Drop) at random moments, pending or not. Every read of
// the overlay must equal the processor's state (current), every read of
// its committed view the state of the last committed epoch (never a
// pending one), and the base after each applied layer the state of that
// layer's epoch.

// layered is the model of an overlay with frozen layers.
type layered[M any] struct {
	t       *testing.T
	st      Staged
	clone   func(M) M
	current M
	// frozen are the states after each committed layer not yet applied,
	// oldest first; committed is the newest committed state, or the
	// base's.
	frozen    []M
	committed M
	layers    []*Layer
	// inFlight is set while an epoch's commit is undecided: pending is its
	// layer (nil if it staged nothing), pendingState its state.
	inFlight     bool
	pending      *Layer
	pendingState M
}

// step ends an epoch in one of several ways, decides the epoch in flight,
// or applies the oldest committed layer with apply, and returns the state
// the base must hold after it (ok true) when a layer was applied.
func (m *layered[M]) step(r *rand.Rand, apply func(Change)) (base M, applied bool) {
	switch r.IntN(6) {
	case 0: // the epoch committed (under the barrier)
		if m.inFlight {
			return base, false // one epoch at a time: the engine settles first
		}
		if l := m.st.Freeze(); l != nil {
			m.layers = append(m.layers, l)
			m.frozen = append(m.frozen, m.clone(m.current))
		}
		m.committed = m.clone(m.current)
		require.Zero(m.t, m.st.StagedBytes())
	case 1: // the epoch commits behind: frozen pending
		if m.inFlight {
			return base, false
		}
		m.inFlight, m.pending, m.pendingState = true, m.st.FreezePending(), m.clone(m.current)
		require.Zero(m.t, m.st.StagedBytes())
		require.True(m.t, m.pending == nil || m.pending.Pending())
	case 2: // the epoch in flight committed
		if !m.inFlight {
			return base, false
		}
		if m.pending != nil {
			m.pending.Commit()
			require.False(m.t, m.pending.Pending())
			m.layers = append(m.layers, m.pending)
			m.frozen = append(m.frozen, m.pendingState)
		}
		m.committed = m.pendingState
		m.inFlight, m.pending = false, nil
	case 3: // aborted: back to the last committed epoch, committed layers kept
		if m.inFlight {
			if m.pending != nil {
				m.pending.Discard()
			}
			m.inFlight, m.pending = false, nil
		}
		m.st.Reset()
		m.current = m.clone(m.committed)
	default:
		if len(m.layers) == 0 {
			return base, false
		}
		m.layers[0].Discard() // committed: not discarded
		changes, err := m.layers[0].Changes()
		require.NoError(m.t, err)
		for _, c := range changes {
			apply(c)
		}
		m.layers[0].Drop()
		base = m.frozen[0]
		m.layers, m.frozen = m.layers[1:], m.frozen[1:]
		held := len(m.layers)
		if m.pending != nil {
			held++
		}
		require.Equal(m.t, held, m.st.Frozen())
		return base, true
	}
	return base, false
}

func TestStagedKeyValueLayersModel(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 23))
	s, view := stagedWithView(t)
	m := &layered[map[string]string]{t: t, st: s, clone: maps.Clone[map[string]string], current: map[string]string{}, committed: map[string]string{}}
	all := func(m map[string]string) []kv { return wantKV(m, "", "", true) }
	for step := range 20000 {
		switch op := r.IntN(100); {
		case op < 40:
			k, v := randKey(r), randValue(r)
			require.NoError(t, s.Put([]byte(k), v))
			m.current[k] = string(v)
		case op < 55:
			k := randKey(r)
			require.NoError(t, s.Delete([]byte(k)))
			delete(m.current, k)
		case op < 65:
			k := randKey(r)
			v, ok := getKV(t, s, k)
			w, wok := m.current[k]
			require.Equal(t, wok, ok, "step %d key %q", step, k)
			require.Equal(t, w, v)
			v, ok = getKV(t, view.(KeyValueStore), k)
			w, wok = m.committed[k]
			require.Equal(t, wok, ok, "step %d key %q (committed view)", step, k)
			require.Equal(t, w, v)
		case op < 80:
			require.Equal(t, all(m.current), rangeKV(t, s, nil, nil), "step %d", step)
			require.Equal(t, all(m.committed), rangeKV(t, view.(KeyValueStore), nil, nil), "step %d (committed view)", step)
		default:
			if base, ok := m.step(r, func(c Change) { require.NoError(t, s.Base().Put(c.Key, c.Value)) }); ok {
				require.Equal(t, all(base), rangeKV(t, s.Base(), nil, nil), "step %d (base)", step)
			}
		}
	}
	require.Error(t, view.(KeyValueStore).Put([]byte("a"), []byte("b")), "a committed view is read-only")
}

func TestStagedWindowLayersModel(t *testing.T) {
	r := rand.New(rand.NewPCG(29, 31))
	s, err := NewStagedWindow(NewInMemoryWindow("w"), 1<<20)
	require.NoError(t, err)
	view, err := s.Committed(s.Base())
	require.NoError(t, err)
	m := &layered[map[winID]string]{t: t, st: s, clone: maps.Clone[map[winID]string], current: map[winID]string{}, committed: map[winID]string{}}
	want := func(m map[winID]string, from, to int64) []win { return wantWindows(m, nil, from, to) }
	for step := range 8000 {
		k, start := randKey(r), int64(r.IntN(40))
		switch op := r.IntN(100); {
		case op < 40:
			v := randValue(r)
			require.NoError(t, s.Put([]byte(k), ms(start), v))
			m.current[winID{k, start}] = string(v)
		case op < 50:
			require.NoError(t, s.Put([]byte(k), ms(start), nil))
			delete(m.current, winID{k, start})
		case op < 54:
			cutoff := int64(r.IntN(30))
			require.NoError(t, s.ExpireBefore(ms(cutoff)))
			maps.DeleteFunc(m.current, func(id winID, _ string) bool { return id.start < cutoff })
		case op < 64:
			v, ok, err := s.Get([]byte(k), ms(start))
			require.NoError(t, err)
			w, wok := m.current[winID{k, start}]
			require.Equal(t, wok, ok, "step %d", step)
			require.Equal(t, w, string(v))
			v, ok, err = view.(WindowStore).Get([]byte(k), ms(start))
			require.NoError(t, err)
			w, wok = m.committed[winID{k, start}]
			require.Equal(t, wok, ok, "step %d (committed view)", step)
			require.Equal(t, w, string(v))
		case op < 72:
			to := start + int64(r.IntN(20)) - 5
			it, err := s.Fetch([]byte(k), ms(start), ms(to))
			require.NoError(t, err)
			require.Equal(t, wantWindows(m.current, &k, start, to), drainWindows(t, it), "step %d", step)
		case op < 80:
			to := start + int64(r.IntN(20)) - 5
			require.Equal(t, want(m.current, start, to), fetchAll(t, s, start, to), "step %d", step)
			require.Equal(t, want(m.committed, start, to), fetchAll(t, view.(WindowStore), start, to), "step %d (committed view)", step)
		default:
			base, ok := m.step(r, func(c Change) {
				key, start, err := DecodeWindowKey(c.Key)
				require.NoError(t, err)
				require.NoError(t, s.Base().Put(key, start, c.Value))
			})
			if ok {
				require.Equal(t, want(base, 0, 100), fetchAll(t, s.Base(), 0, 100), "step %d (base)", step)
			}
		}
	}
}

func TestStagedSessionLayersModel(t *testing.T) {
	r := rand.New(rand.NewPCG(37, 41))
	s, err := NewStagedSession(scanningSessions{NewInMemorySession("s"), modelKeys}, 1<<20)
	require.NoError(t, err)
	view, err := s.Committed(s.Base())
	require.NoError(t, err)
	m := &layered[map[sessID]string]{t: t, st: s, clone: maps.Clone[map[sessID]string], current: map[sessID]string{}, committed: map[sessID]string{}}
	for step := range 8000 {
		k, start := randKey(r), int64(r.IntN(40))
		end := start + int64(r.IntN(10))
		switch op := r.IntN(100); {
		case op < 40:
			v := randValue(r)
			require.NoError(t, s.Put([]byte(k), ms(start), ms(end), v))
			m.current[sessID{k, start, end}] = string(v)
		case op < 50:
			require.NoError(t, s.Remove([]byte(k), ms(start), ms(end)))
			delete(m.current, sessID{k, start, end})
		case op < 54:
			cutoff := int64(r.IntN(40))
			require.NoError(t, s.ExpireBefore(ms(cutoff)))
			maps.DeleteFunc(m.current, func(id sessID, _ string) bool { return id.end < cutoff })
		case op < 80:
			earliestEnd, latestStart := int64(r.IntN(50)), int64(r.IntN(50))
			it, err := s.FindSessions([]byte(k), ms(earliestEnd), ms(latestStart))
			require.NoError(t, err)
			require.Equal(t, wantSessions(m.current, k, earliestEnd, latestStart), drainSessions(t, it), "step %d", step)
			it, err = view.(SessionStore).FindSessions([]byte(k), ms(earliestEnd), ms(latestStart))
			require.NoError(t, err)
			require.Equal(t, wantSessions(m.committed, k, earliestEnd, latestStart), drainSessions(t, it), "step %d (committed view)", step)
		default:
			base, ok := m.step(r, func(c Change) {
				key, start, end, err := DecodeSessionKey(c.Key)
				require.NoError(t, err)
				require.NoError(t, s.Base().Put(key, start, end, c.Value))
			})
			if ok {
				for _, k := range modelKeys {
					require.Equal(t, wantSessions(base, k, -1, 1000), allSessions(t, s.Base(), k), "step %d (base)", step)
				}
			}
		}
	}
}

// An abort after a frozen layer drops only the epoch in progress: the
// frozen layer's writes are committed, and stay readable until the base
// has them.
func TestStagedAbortKeepsTheFrozenLayer(t *testing.T) {
	s, view := stagedWithView(t)
	require.NoError(t, s.Put([]byte("a"), []byte("1")))
	l := s.Freeze()
	require.NotNil(t, l)
	require.NoError(t, s.Put([]byte("a"), []byte("2")))
	require.NoError(t, s.Put([]byte("b"), []byte("2")))
	v, _ := getKV(t, view.(KeyValueStore), "a")
	require.Equal(t, "1", v, "a query sees the committed layer, not the epoch in progress")
	_, ok := getKV(t, view.(KeyValueStore), "b")
	require.False(t, ok)

	s.Reset() // the epoch in progress aborts
	v, ok = getKV(t, s, "a")
	require.True(t, ok)
	require.Equal(t, "1", v, "the abort dropped the frozen layer's write")
	_, ok = getKV(t, s, "b")
	require.False(t, ok)

	changes, err := l.Changes()
	require.NoError(t, err)
	require.Equal(t, []Change{{Key: []byte("a"), Value: []byte("1")}}, changes)
	require.NoError(t, s.Base().Put(changes[0].Key, changes[0].Value))
	l.Drop()
	require.Zero(t, s.Frozen())
	v, _ = getKV(t, s, "a")
	require.Equal(t, "1", v)
	require.Nil(t, s.Freeze(), "nothing staged")
}

// A pending layer (its transaction commits behind processing) is read by
// the overlay — the task's own writes — but not by the committed view
// until it is marked committed; an abort discards it with the epoch in
// progress, and a committed layer is never discarded.
func TestStagedPendingLayer(t *testing.T) {
	s, view := stagedWithView(t)
	require.NoError(t, s.Put([]byte("a"), []byte("1")))
	first := s.FreezePending()
	require.True(t, first.Pending())
	require.NoError(t, s.Put([]byte("b"), []byte("1")))
	v, ok := getKV(t, s, "a")
	require.True(t, ok, "the task reads its pending layer")
	require.Equal(t, "1", v)
	_, ok = getKV(t, view.(KeyValueStore), "a")
	require.False(t, ok, "a query saw a pending layer")
	require.Empty(t, rangeKV(t, view.(KeyValueStore), nil, nil))

	first.Commit()
	v, ok = getKV(t, view.(KeyValueStore), "a")
	require.True(t, ok, "a query does not see the layer once committed")
	require.Equal(t, "1", v)
	first.Discard()
	require.Equal(t, 1, s.Frozen(), "a committed layer was discarded")

	second := s.FreezePending() // b=1
	require.NoError(t, s.Put([]byte("c"), []byte("1")))
	_, ok = getKV(t, view.(KeyValueStore), "b")
	require.False(t, ok)
	second.Discard() // its transaction aborted
	s.Reset()
	require.Equal(t, 1, s.Frozen())
	_, ok = getKV(t, s, "b")
	require.False(t, ok, "the discarded layer is still read")
	_, ok = getKV(t, s, "c")
	require.False(t, ok)
	require.Equal(t, []kv{{"a", "1"}}, rangeKV(t, s, nil, nil))
	second.Commit() // too late: discarded layers stay gone
	require.Equal(t, 1, s.Frozen())
}

// Pending layers stack — an at-least-once epoch whose offset commit failed
// stays pending under the next — and are committed oldest first: a query
// sees each once committed, never one above a pending layer.
func TestStagedPendingLayersStack(t *testing.T) {
	s, view := stagedWithView(t)
	require.NoError(t, s.Put([]byte("a"), []byte("1")))
	kept := s.FreezePending()
	require.NoError(t, s.Put([]byte("a"), []byte("2")))
	next := s.FreezePending()
	v, _ := getKV(t, s, "a")
	require.Equal(t, "2", v, "the task reads the newest pending layer")
	_, ok := getKV(t, view.(KeyValueStore), "a")
	require.False(t, ok, "a query saw a pending layer")

	kept.Commit()
	v, _ = getKV(t, view.(KeyValueStore), "a")
	require.Equal(t, "1", v, "a query sees the older layer once committed, not the pending one over it")
	next.Commit()
	v, _ = getKV(t, view.(KeyValueStore), "a")
	require.Equal(t, "2", v)
	require.Equal(t, 2, s.Frozen())
}

// The engine freezes and writes on the task's goroutine, applies and drops
// layers on the applier's, and queries read the committed view on their
// own: run under -race. Every read sees a counter's value at or after the
// last one applied, never one that went back.
func TestStagedLayersConcurrently(t *testing.T) {
	s, view := stagedWithView(t)
	layers := make(chan *Layer, 2)
	done := make(chan struct{})
	go func() { // the applier
		defer close(done)
		for l := range layers {
			changes, err := l.Changes()
			if err != nil {
				t.Error(err)
				return
			}
			for _, c := range changes {
				if err := s.Base().Put(c.Key, c.Value); err != nil {
					t.Error(err)
				}
			}
			l.Drop()
		}
	}()
	readers := make(chan struct{})
	for _, st := range []KeyValueStore{s, view.(KeyValueStore)} {
		go func() { // a reader: values only grow
			defer func() { readers <- struct{}{} }()
			last := -1
			for {
				select {
				case <-done:
					return
				default:
				}
				v, ok, err := st.Get([]byte("n"))
				if err != nil {
					t.Error(err)
					return
				}
				if !ok {
					continue
				}
				n := int(v[0])<<8 | int(v[1])
				if n < last {
					t.Errorf("n went back from %d to %d", last, n)
					return
				}
				last = n
				it, err := st.Range(nil, nil)
				if err != nil {
					t.Error(err)
					return
				}
				for it.Next() {
				}
				_ = it.Close()
			}
		}()
	}
	for i := range 2000 { // the task: one write per epoch, every epoch commits
		require.NoError(t, s.Put([]byte("n"), []byte{byte(i >> 8), byte(i)}))
		require.NoError(t, s.Put([]byte{byte(i % 50)}, []byte("x")))
		if l := s.Freeze(); l != nil {
			layers <- l
		}
	}
	close(layers)
	<-readers
	<-readers
	v, _ := getKV(t, s.Base(), "n")
	require.Equal(t, string([]byte{1999 >> 8, 1999 & 0xff}), v)
	require.Zero(t, s.Frozen())
}

// stagedWithView is a staged key-value store over an in-memory one, and
// the committed view of it that queries read.
func stagedWithView(t *testing.T) (*StagedKeyValue, Store) {
	t.Helper()
	s, err := NewStagedKeyValue(NewInMemoryKeyValue("kv"), 1<<20)
	require.NoError(t, err)
	view, err := s.Committed(s.Base())
	require.NoError(t, err)
	return s, view
}
