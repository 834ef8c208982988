package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// RemoveLeftovers removes the fillers of runners that are gone and keeps
// those of runners that still run.
func TestRemoveLeftovers(t *testing.T) {
	root := t.TempDir()
	app := filepath.Join(root, "weir-chaos-x")
	require.NoError(t, os.MkdirAll(app, 0o755))
	dead := filepath.Join(app, fmt.Sprintf("%s%d-m1", fillerPrefix, 1<<30)) // no such pid
	live := filepath.Join(app, fillerPrefix+"1-m0")                         // init runs
	other := filepath.Join(app, "m0-state1")
	for _, f := range []string{dead, live, other} {
		require.NoError(t, os.WriteFile(f, nil, 0o644))
	}
	require.Equal(t, []string{dead}, RemoveLeftovers(root, ""))
	for _, f := range []string{live, other} {
		require.FileExists(t, f)
	}
	require.NoFileExists(t, dead)
}
