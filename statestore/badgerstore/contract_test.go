package badgerstore_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/statestore"
	"github.com/weirstream/weir/statestore/badgerstore"
)

// The contract tests: one table of tests of the statestore interfaces, run
// against every store engine — the in-memory stores (the reference), the
// Badger stores, and the staging overlays over each. A test opens fresh
// stores through the factory it is given.

// engine makes the factory a contract test runs on.
type engine struct {
	name string
	new  func(t *testing.T) statestore.Factory
}

func engines() []engine {
	memory := func(*testing.T) statestore.Factory { return statestore.NewInMemoryFactory() }
	return []engine{
		{"memory", memory},
		{"badger", badgerFactory},
		{"staged-memory", func(t *testing.T) statestore.Factory { return stagedFactory{memory(t)} }},
		{"staged-badger", func(t *testing.T) statestore.Factory { return stagedFactory{badgerFactory(t)} }},
	}
}

// openTestDB opens a database in a new temporary directory, closed at the
// end of the test.
func openTestDB(t testing.TB, opts badgerstore.Options) *badgerstore.DB {
	t.Helper()
	db, err := badgerstore.Open(t.TempDir(), opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, db.Close()) })
	return db
}

func badgerFactory(t *testing.T) statestore.Factory {
	return openTestDB(t, badgerstore.Options{}).Factory()
}

// stagedFactory wraps the stores of a factory in staging overlays.
type stagedFactory struct{ base statestore.Factory }

func (f stagedFactory) Open(spec statestore.Spec, partition int32) (statestore.Store, error) {
	s, err := f.base.Open(spec, partition)
	if err != nil {
		return nil, err
	}
	return statestore.NewStaged(s, spec.Kind, 1<<30)
}

// contract is one contract test: it opens its stores with open.
type contract struct {
	name string
	run  func(t *testing.T, open opener)
}

// opener opens a new, empty store of a kind.
type opener struct {
	t       *testing.T
	factory statestore.Factory
	next    *atomic.Int32
}

func (o opener) open(kind statestore.Kind) statestore.Store {
	o.t.Helper()
	s, err := o.factory.Open(statestore.Spec{Name: "store", Kind: kind}, o.next.Add(1))
	require.NoError(o.t, err)
	return s
}

func (o opener) kv() statestore.KeyValueStore {
	return o.open(statestore.KindKeyValue).(statestore.KeyValueStore)
}

func (o opener) window() statestore.WindowStore {
	return o.open(statestore.KindWindow).(statestore.WindowStore)
}

func (o opener) session() statestore.SessionStore {
	return o.open(statestore.KindSession).(statestore.SessionStore)
}

// staged reports whether s is a staging overlay, whose ApproximateNumEntries
// is only an estimate.
func staged(s statestore.Store) bool {
	_, ok := s.(statestore.Staged)
	return ok
}

func runContracts(t *testing.T, contracts []contract) {
	for _, e := range engines() {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			f := e.new(t)
			var next atomic.Int32
			for _, c := range contracts {
				t.Run(c.name, func(t *testing.T) {
					c.run(t, opener{t: t, factory: f, next: &next})
				})
			}
		})
	}
}

func TestContractKeyValue(t *testing.T)  { runContracts(t, kvContracts) }
func TestContractWindow(t *testing.T)    { runContracts(t, windowContracts) }
func TestContractSession(t *testing.T)   { runContracts(t, sessionContracts) }
func TestContractFactories(t *testing.T) { runContracts(t, factoryContracts) }

var factoryContracts = []contract{
	{"Kinds", func(t *testing.T, o opener) {
		require.Implements(t, (*statestore.KeyValueStore)(nil), o.open(statestore.KindKeyValue))
		require.Implements(t, (*statestore.WindowStore)(nil), o.open(statestore.KindWindow))
		require.Implements(t, (*statestore.SessionStore)(nil), o.open(statestore.KindSession))
	}},
	{"SameHandle", func(t *testing.T, o opener) {
		spec := statestore.Spec{Name: "counts", Kind: statestore.KindKeyValue}
		a, err := o.factory.Open(spec, 100)
		require.NoError(t, err)
		require.Equal(t, "counts", a.Name())
		b, err := o.factory.Open(spec, 100)
		require.NoError(t, err)
		if _, ok := o.factory.(stagedFactory); !ok {
			require.Same(t, a, b, "same (name, partition), same store")
		}
		other, err := o.factory.Open(spec, 101)
		require.NoError(t, err)
		require.NoError(t, a.(statestore.KeyValueStore).Put([]byte("k"), []byte("v")))
		_, ok, err := other.(statestore.KeyValueStore).Get([]byte("k"))
		require.NoError(t, err)
		require.False(t, ok, "partitions do not share state")
	}},
	{"Invalid", func(t *testing.T, o opener) {
		_, err := o.factory.Open(statestore.Spec{Kind: statestore.KindKeyValue}, 0)
		require.Error(t, err, "empty name")
		_, err = o.factory.Open(statestore.Spec{Name: "x", Kind: statestore.Kind(42)}, 0)
		require.Error(t, err, "unknown kind")
		_, err = o.factory.Open(statestore.Spec{Name: "twice", Kind: statestore.KindKeyValue}, 0)
		require.NoError(t, err)
		_, err = o.factory.Open(statestore.Spec{Name: "twice", Kind: statestore.KindWindow}, 0)
		require.Error(t, err, "another kind")
	}},
}

// ms returns the time n milliseconds after the Unix epoch.
func ms(n int64) time.Time { return time.UnixMilli(n) }

// kv is a key-value pair as tests write them.
type kv struct{ k, v string }

func drainKV(t *testing.T, it statestore.Iterator) []kv {
	t.Helper()
	var out []kv
	for it.Next() {
		require.NotNil(t, it.Key())
		require.NotNil(t, it.Value())
		out = append(out, kv{string(it.Key()), string(it.Value())})
	}
	require.NoError(t, it.Err())
	require.NoError(t, it.Close())
	return out
}

// win is a windowed entry as tests write them; start in milliseconds.
type win struct {
	k     string
	start int64
	v     string
}

func drainWindows(t *testing.T, it statestore.WindowIterator) []win {
	t.Helper()
	var out []win
	for it.Next() {
		w := it.Window()
		require.Equal(t, time.UnixMilli(w.UnixMilli()), w, "a time.UnixMilli value")
		out = append(out, win{string(it.Key()), w.UnixMilli(), string(it.Value())})
	}
	require.NoError(t, it.Err())
	require.NoError(t, it.Close())
	return out
}

// sess is a session entry as tests write them; times in milliseconds.
type sess struct {
	k          string
	start, end int64
	v          string
}

func drainSessions(t *testing.T, it statestore.SessionIterator) []sess {
	t.Helper()
	var out []sess
	for it.Next() {
		out = append(out, sess{string(it.Key()), it.Start().UnixMilli(), it.End().UnixMilli(), string(it.Value())})
	}
	require.NoError(t, it.Err())
	require.NoError(t, it.Close())
	return out
}

func (w win) String() string  { return fmt.Sprintf("%q@%d=%q", w.k, w.start, w.v) }
func (s sess) String() string { return fmt.Sprintf("%q[%d,%d]=%q", s.k, s.start, s.end, s.v) }
