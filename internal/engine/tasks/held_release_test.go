package tasks

import (
	"context"
	"testing"

	"github.com/weirstream/weir/internal/kafka"
)

// A commit that held few records waits out the markers; one that held
// many (a saturated epoch) releases at once.
func TestMarkersPauseOnlyForFewHeld(t *testing.T) {
	for _, c := range []struct {
		held int
		want bool
	}{{0, true}, {40, true}, {markersWaitMaxHeld, true}, {markersWaitMaxHeld + 1, false}, {50_000, false}} {
		if got := markersPause(c.held) > 0; got != c.want {
			t.Errorf("markersPause(%d) waits %v, want %v", c.held, got, c.want)
		}
	}
}

// count follows the records held and resets at the release.
func TestHeldSendsCount(t *testing.T) {
	h := newHeldSends(10, 1<<20)
	h.hold()
	for i := 0; i < 3; i++ {
		if held, err := h.add(context.Background(), kafka.Record{Topic: "t", Value: []byte("v")}); !held || err != nil {
			t.Fatalf("add %d: held %v, err %v", i, held, err)
		}
	}
	if n := h.count(); n != 3 {
		t.Fatalf("count after 3 adds = %d", n)
	}
	if err := h.release(func(kafka.Record) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if n := h.count(); n != 0 {
		t.Fatalf("count after release = %d", n)
	}
}
