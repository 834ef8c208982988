package tasks

import (
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// Rewinds in a row back off: the first retries at once, the next after
// 100 ms doubling, never more than 5 s.
func TestRewindBackoff(t *testing.T) {
	want := []time.Duration{0, 0, 100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond,
		800 * time.Millisecond, 1600 * time.Millisecond, 3200 * time.Millisecond, 5 * time.Second, 5 * time.Second}
	for n, w := range want {
		if got := rewindBackoff(n); got != w {
			t.Errorf("rewindBackoff(%d) = %v, want %v", n, got, w)
		}
	}
	if got := rewindBackoff(1000); got != 5*time.Second {
		t.Errorf("rewindBackoff(1000) = %v", got)
	}
}

// A rewind because the group moved on — the epoch's offset commit fenced
// by a rebalance — starts again at once, however many came before: the
// member must rejoin while the rebalance waits for it. Waiting made each
// late rejoin start another rebalance that fenced the other members'
// epochs, and a loaded three-broker cluster spent minutes rebalancing.
func TestRewindAfterARebalanceDoesNotWait(t *testing.T) {
	for _, cause := range []error{
		fmt.Errorf("exactlyonce: commit: producer fenced: %w", sarama.ErrIllegalGeneration),
		fmt.Errorf("commit: %w", sarama.ErrRebalanceInProgress),
		fmt.Errorf("commit: %w", sarama.ErrUnknownMemberId),
	} {
		if got := rewindWait(7, cause); got != 0 {
			t.Errorf("rewindWait(7, %v) = %v, want 0", cause, got)
		}
	}
	if got := rewindWait(7, fmt.Errorf("produce: %w", sarama.ErrNotEnoughReplicas)); got != rewindBackoff(7) {
		t.Errorf("rewindWait(7, NOT_ENOUGH_REPLICAS) = %v, want the backoff %v", got, rewindBackoff(7))
	}
}
