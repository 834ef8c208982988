package weir

// Tests of the package's unexported parts: the bad-record policy's
// mapping, the application state, the Kafka options' mapping.

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/microbatch"
)

// Each of weir's policies is the runtime's policy of the same meaning.
func TestBadRecordPolicyReachesTheRuntime(t *testing.T) {
	for _, tc := range []struct {
		p    BadRecordPolicy
		want tasks.BadRecordPolicy
		name string
	}{
		{Fail, tasks.Fail, "fail"},
		{Skip, tasks.Skip, "skip"},
		{DeadLetter, tasks.DeadLetter, "dead-letter"},
		{DeadLetter + 1, tasks.BadRecordPolicy(3), "BadRecordPolicy(3)"},
	} {
		require.Equal(t, tc.want, tc.p.runtime())
		require.Equal(t, tc.name, tc.p.String())
	}
}

// The state tracker: hooks move the state, Restoring shows while tasks
// restore in Running, a commit that hangs past the stall bound shows
// Retrying, Failed lasts until Run's end, the listener sees every change
// in order.
func TestStateTracker(t *testing.T) {
	var seen []State
	st := newStateTracker(func(_ State, to Status) { seen = append(seen, to.State) }, nil)
	st.stallAfter = 20 * time.Millisecond
	h := st.hooks()
	expect := func(want State) {
		t.Helper()
		if got := st.status().State; got != want {
			t.Fatalf("state %v, want %v", got, want)
		}
	}
	expect(Created)
	st.set(Starting, nil)
	h.Prepared()
	expect(Rebalancing)
	h.Rebalanced(1)
	expect(Running)
	h.Restoring(2)
	expect(Restoring)
	h.Restoring(0)
	expect(Running)

	boom := errors.New("transaction abortable")
	h.Rewound("abortable", boom)
	expect(Retrying)
	if err := st.status().Err; err != boom {
		t.Fatalf("Err = %v", err)
	}
	h.Committed(0, nil) // nothing committed, a failure just now: still retrying
	expect(Retrying)
	h.Progressed()
	expect(Running)

	// A commit that does not end.
	h.Committing()
	time.Sleep(60 * time.Millisecond)
	expect(Retrying)
	h.Committed(0, nil)
	h.Progressed()
	expect(Running)
	// One that ends in time leaves the state alone.
	h.Committing()
	h.Committed(0, nil)
	time.Sleep(40 * time.Millisecond)
	expect(Running)

	h.Failing(boom)
	expect(Failed)
	h.Progressed()
	h.Rewound("abortable", boom)
	expect(Failed)
	st.end(Failed, boom)
	st.set(Starting, nil) // a new Run
	expect(Starting)
	st.end(Stopped, nil)
	expect(Stopped)

	want := []State{Starting, Rebalancing, Running, Restoring, Running, Retrying, Running, Retrying, Running, Failed, Starting, Stopped}
	if len(seen) != len(want) {
		t.Fatalf("listener saw %v, want %v", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Fatalf("listener saw %v, want %v", seen, want)
		}
	}
}

// The clients' linger: none (the producers' adaptive linger) in every
// mode and guarantee, and WithLinger's value wherever it is given.
func TestLingerDefaultsByMode(t *testing.T) {
	linger := func(opts ...Option) time.Duration {
		t.Helper()
		c := newConfig()
		for _, o := range opts {
			o(&c)
		}
		c.ensureDefaults()
		return c.kafkaConfig().Tuning.Linger
	}
	mb := WithMicroBatch(microbatch.Config{Trigger: microbatch.Continuously()})
	require.Zero(t, linger())
	require.Zero(t, linger(WithGuarantee(ExactlyOnce)))
	require.Zero(t, linger(mb))
	require.Zero(t, linger(mb, WithGuarantee(ExactlyOnce)))
	require.Equal(t, 2*time.Millisecond, linger(WithLinger(2*time.Millisecond)))
	require.Equal(t, 2*time.Millisecond, linger(mb, WithLinger(2*time.Millisecond)))
}
