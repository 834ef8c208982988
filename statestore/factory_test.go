package statestore

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestInMemoryFactory(t *testing.T) {
	f := NewInMemoryFactory()

	kv, err := f.Open(Spec{Name: "counts", Kind: KindKeyValue}, 0)
	require.NoError(t, err)
	require.Implements(t, (*KeyValueStore)(nil), kv)
	require.Equal(t, "counts", kv.Name())

	again, err := f.Open(Spec{Name: "counts", Kind: KindKeyValue, Logged: true}, 0)
	require.NoError(t, err)
	require.Same(t, kv, again, "same (name, partition), same store")

	other, err := f.Open(Spec{Name: "counts", Kind: KindKeyValue}, 1)
	require.NoError(t, err)
	require.NotSame(t, kv, other, "another partition")

	require.NoError(t, kv.(KeyValueStore).Put([]byte("k"), []byte("v")))
	_, ok, err := other.(KeyValueStore).Get([]byte("k"))
	require.NoError(t, err)
	require.False(t, ok, "partitions do not share state")

	w, err := f.Open(Spec{Name: "windows", Kind: KindWindow}, 0)
	require.NoError(t, err)
	require.Implements(t, (*WindowStore)(nil), w)

	s, err := f.Open(Spec{Name: "sessions", Kind: KindSession}, 0)
	require.NoError(t, err)
	require.Implements(t, (*SessionStore)(nil), s)

	// A closed store is replaced by a new, empty one.
	require.NoError(t, kv.Close())
	fresh, err := f.Open(Spec{Name: "counts", Kind: KindKeyValue}, 0)
	require.NoError(t, err)
	require.NotSame(t, kv, fresh)
	_, ok, err = fresh.(KeyValueStore).Get([]byte("k"))
	require.NoError(t, err)
	require.False(t, ok)
}

func TestInMemoryFactoryErrors(t *testing.T) {
	f := NewInMemoryFactory()
	_, err := f.Open(Spec{Name: "w", Kind: KindWindow}, 3)
	require.NoError(t, err)

	tests := []struct {
		name    string
		spec    Spec
		wantErr string
	}{
		{"unknown kind", Spec{Name: "x", Kind: Kind(42)}, `statestore: open store "x" in partition 3: unknown kind 42`},
		{"zero kind", Spec{Name: "x"}, `statestore: open store "x" in partition 3: unknown kind 0`},
		{"empty name", Spec{Kind: KindKeyValue}, "statestore: open store in partition 3: empty name"},
		{"another kind", Spec{Name: "w", Kind: KindSession}, `statestore: open store "w" in partition 3 as session: already open as window`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := f.Open(tt.spec, 3)
			require.EqualError(t, err, tt.wantErr)
			require.Nil(t, s)
		})
	}
}

func TestKindString(t *testing.T) {
	require.Equal(t, "key-value", KindKeyValue.String())
	require.Equal(t, "window", KindWindow.String())
	require.Equal(t, "session", KindSession.String())
	require.Equal(t, "unknown", Kind(0).String())
}
