package main

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The example verifies its own output (every order exactly once, read
// committed; bad records dead-lettered) and fails on any mismatch.
func TestDemoVerifies(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	require.NoError(t, runDemo(ctx, slog.New(slog.DiscardHandler)))
}
