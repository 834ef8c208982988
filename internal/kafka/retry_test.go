package kafka

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestBackoffDoublesToOneSecond(t *testing.T) {
	want := []time.Duration{50, 100, 200, 400, 800, 1000, 1000}
	for attempt, w := range want {
		if got := Backoff(attempt); got != w*time.Millisecond {
			t.Errorf("Backoff(%d) = %v, want %v", attempt, got, w*time.Millisecond)
		}
	}
	if got := Backoff(-3); got != 50*time.Millisecond {
		t.Errorf("Backoff(-3) = %v, want the first wait", got)
	}
	if got := Backoff(1 << 20); got != time.Second {
		t.Errorf("Backoff(huge) = %v, want 1s", got)
	}
}

func TestPauseEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Pause(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Pause on a done context = %v, want context.Canceled", err)
	}
	if err := Pause(ctx, 0); err != nil {
		t.Fatalf("Pause(0) = %v, want nil", err)
	}
	if err := Pause(context.Background(), time.Millisecond); err != nil {
		t.Fatalf("Pause(1ms) = %v", err)
	}
}
