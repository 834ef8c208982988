package runtime

import (
	"testing"
	"time"
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
