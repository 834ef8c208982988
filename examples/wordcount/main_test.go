package main

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The README's first command: the demo runs on the embedded broker and
// ends by itself.
func TestDemoRuns(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	require.NoError(t, runDemo(ctx, slog.New(slog.DiscardHandler)))
}
