package exactlyonce_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/exactlyonce"
)

func TestLoadOrCreateInstanceID(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "nested")
	id, err := exactlyonce.LoadOrCreateInstanceID(dir)
	require.NoError(t, err)
	require.Regexp(t, `^[0-9a-f]{32}$`, id)
	again, err := exactlyonce.LoadOrCreateInstanceID(dir)
	require.NoError(t, err)
	require.Equal(t, id, again)

	other, err := exactlyonce.LoadOrCreateInstanceID(t.TempDir())
	require.NoError(t, err)
	require.NotEqual(t, id, other)

	// No temporary file is left behind.
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.Equal(t, exactlyonce.InstanceIDFile, entries[0].Name())

	// An id chosen by hand is kept; a damaged file is an error, not a new id.
	custom := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(custom, exactlyonce.InstanceIDFile), []byte("host-a.1\n"), 0o644))
	got, err := exactlyonce.LoadOrCreateInstanceID(custom)
	require.NoError(t, err)
	require.Equal(t, "host-a.1", got)
	for _, bad := range []string{"", "has space", strings.Repeat("x", 300)} {
		require.NoError(t, os.WriteFile(filepath.Join(custom, exactlyonce.InstanceIDFile), []byte(bad), 0o644))
		_, err := exactlyonce.LoadOrCreateInstanceID(custom)
		require.Error(t, err, "%q", bad)
	}
	_, err = exactlyonce.LoadOrCreateInstanceID("")
	require.Error(t, err)
}

// TestLoadOrCreateInstanceIDRace creates the id from many goroutines at
// once: all of them get the same one.
func TestLoadOrCreateInstanceIDRace(t *testing.T) {
	dir := t.TempDir()
	ids := make([]string, 16)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			id, err := exactlyonce.LoadOrCreateInstanceID(dir)
			if err != nil {
				t.Error(err)
			}
			ids[i] = id
		})
	}
	wg.Wait()
	for _, id := range ids {
		require.Equal(t, ids[0], id)
	}
}
