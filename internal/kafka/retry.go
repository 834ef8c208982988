package kafka

import (
	"context"
	"time"
)

// Backoff is the wait before retry number attempt (counted from 0) of a
// request the broker refused for a passing reason: 50 ms doubling to 1 s.
// Every retry loop of the Kafka adapters (internal/kafka, internal/txn)
// uses it.
func Backoff(attempt int) time.Duration {
	return min(50*time.Millisecond<<min(max(attempt, 0), 5), time.Second)
}

// Pause waits d, or until ctx is done: then it returns ctx's error. A d of
// zero or less returns nil at once.
func Pause(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
