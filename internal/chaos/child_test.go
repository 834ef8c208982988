package chaos

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
)

// WEIR_CHAOS_CHILD_LOG sets the children's log level, warn by default.
func TestChildLogLevel(t *testing.T) {
	for env, want := range map[string]slog.Level{"": slog.LevelWarn, "debug": slog.LevelDebug, "INFO": slog.LevelInfo, "loud": slog.LevelWarn} {
		t.Setenv(ChildLogEnv, env)
		require.Equal(t, want, childLogLevel(), env)
	}
}
