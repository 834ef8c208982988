package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// The doc comment's commands: with WEIR_POSTGRES_DSN set, the demo runs on
// the embedded broker, ends by itself, and leaves in the table every
// word's count over the demo text, as psql would show it.
func TestDemoRuns(t *testing.T) {
	dsn := os.Getenv("WEIR_POSTGRES_DSN")
	if dsn == "" {
		t.Skip("WEIR_POSTGRES_DSN is not set (scripts/postgres/start.sh starts a server)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	table := fmt.Sprintf("word_counts_test_%d", time.Now().UnixNano())
	pool, err := pgxpool.New(ctx, dsn)
	require.NoError(t, err)
	defer pool.Close()
	t.Cleanup(func() { _, _ = pool.Exec(context.Background(), "DROP TABLE IF EXISTS "+table+", "+table+"_progress") })

	got, err := runDemo(ctx, slog.New(slog.DiscardHandler), dsn, table)
	require.NoError(t, err)
	want := map[string]int64{}
	for _, line := range demoText {
		for _, w := range strings.Fields(line) {
			want[w]++
		}
	}
	require.Equal(t, want, got)
	rows, err := readTable(ctx, pool, table)
	require.NoError(t, err)
	require.Equal(t, want, rows, "the table holds the counts after the instances stopped")
}
