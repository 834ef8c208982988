package main

import (
	"testing"
	"time"
)

func TestMedianRun(t *testing.T) {
	run := func(wall time.Duration) row { return row{system: "s", in: 1000, wall: wall} }
	slow, mid, fast := run(3*time.Second), run(2*time.Second), run(time.Second)
	if got := median([]row{fast, slow, mid}); got.wall != mid.wall {
		t.Fatalf("median of three: wall %v, want %v", got.wall, mid.wall)
	}
	if got := median([]row{fast, slow}); got.wall != slow.wall {
		t.Fatalf("median of two: wall %v, want the slower run's %v", got.wall, slow.wall)
	}
	failed := row{system: "s", err: "child exited"}
	if got := median([]row{fast, failed, mid}); got.err != failed.err {
		t.Fatalf("a failed run must not be hidden by the median: got %+v", got)
	}
}
