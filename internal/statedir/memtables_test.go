package statedir

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Only empty .mem files go: a memtable log with entries, the tables and
// the other files stay.
func TestRemoveEmptyMemtables(t *testing.T) {
	dir := t.TempDir()
	files := map[string][]byte{
		"00005.mem":  nil,
		"00006.mem":  []byte("entries"),
		"000001.sst": nil,
		"MANIFEST":   []byte("m"),
	}
	for name, data := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
	}
	removed, err := RemoveEmptyMemtables(dir)
	require.NoError(t, err)
	require.Equal(t, []string{"00005.mem"}, removed)
	require.NoFileExists(t, filepath.Join(dir, "00005.mem"))
	for _, name := range []string{"00006.mem", "000001.sst", "MANIFEST"} {
		require.FileExists(t, filepath.Join(dir, name))
	}

	removed, err = RemoveEmptyMemtables(filepath.Join(dir, "absent"))
	require.NoError(t, err)
	require.Empty(t, removed)
}
