package offsets

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// testLogger sends Badger's warnings and errors to the test's output.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// openAt opens a log in dir and closes it when the test ends.
func openAt(t testing.TB, dir string, retain int) *Log {
	t.Helper()
	l, err := Open(dir, Options{Retain: retain, Logger: testLogger(t)})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, l.Close()) })
	return l
}

// openWAL opens a log in a fresh directory and returns its namespace "app".
func openWAL(t testing.TB, retain int) (*Log, *WAL) {
	t.Helper()
	l := openAt(t, t.TempDir(), retain)
	w, err := l.Namespace("app")
	require.NoError(t, err)
	return l, w
}

func rng(topic string, partition int32, start, end int64) Range {
	return Range{TopicPartition: TopicPartition{Topic: topic, Partition: partition}, Start: start, End: end}
}

func ms(n int64) time.Time { return time.UnixMilli(n).UTC() }

// plan returns a valid plan for batch n over two partitions.
func plan(n int64) Plan {
	return Plan{
		Batch:     n,
		Ranges:    []Range{rng("clicks", 0, 10*n, 10*n+10), rng("clicks", 1, 7*n, 7*n+7), rng("views", 0, n, n)},
		Timestamp: ms(1_700_000_000_000 + n*1000),
		Watermark: ms(1_699_999_990_000 + n*1000),
		Trigger:   "ProcessingTime(1s)",
	}
}

func commit(n int64) Commit {
	return Commit{Batch: n, Timestamp: ms(1_700_000_000_500 + n*1000)}
}

func epoch(n int64) Epoch {
	return Epoch{
		Epoch:     n,
		Offsets:   []PartitionOffset{{TopicPartition{"clicks", 0}, 100 * n}, {TopicPartition{"clicks", 3}, 50 * n}},
		Timestamp: ms(1_700_000_000_000 + n*100),
	}
}
