package tasks_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/internal/third_party/kfake"
)

// An at-least-once commit — the micro-batch engine's Commit, the
// continuous engine's CutBehind and CommitBehind — sends the changelog
// records only once the outputs sent before them are acknowledged. The
// producer orders records within a partition only: while an output waits
// in its retries, a changelog record sent after it can land first, and a
// crash then leaves the changelog holding records whose outputs are lost
// — the next owner restores them and takes their replay for a duplicate,
// so their updates are never written. Here the changelog must not land
// while the output is still refused.
func TestAtLeastOnceChangelogWaitsForTheOutputs(t *testing.T) {
	commits := map[string]func(h *aloBehind, s kafka.Session) error{
		"commit": func(h *aloBehind, s kafka.Session) error {
			return h.rt.Commit(context.Background(), h.positions(), s)
		},
		"cut and commit behind": func(h *aloBehind, s kafka.Session) error {
			cut, err := h.rt.CutBehind(context.Background(), h.positions(), s, nil)
			if err != nil {
				return err
			}
			return h.rt.CommitBehind(context.Background(), cut, s, nil)
		},
	}
	for name, commit := range commits {
		t.Run(name, func(t *testing.T) {
			kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
				env.RequireKfake(t)
				testChangelogWaitsForTheOutputs(t, env, commit)
			})
		})
	}
}

func testChangelogWaitsForTheOutputs(t *testing.T, env *kafkatest.Env, commit func(h *aloBehind, s kafka.Session) error) {
	h := newALOBehind(t, env, 1)
	changelog := h.app + "-counts-changelog"
	end := func() int64 {
		end, err := kafkatest.EndOffsets(context.Background(), env.Config().Brokers, changelog, false)
		require.NoError(t, err)
		return end[0]
	}
	marker := end() // the task's writer marker (writer.go)
	written := func() bool { return end() > marker }
	// The output topic refuses every write, retriably; the changelog
	// topics do not.
	fault := env.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: h.out, Err: kerr.NotEnoughReplicas, Count: -1})
	h.process(0, "k")
	s := &commitSession{}
	committed := make(chan error, 1)
	go func() { committed <- commit(h, s) }()
	require.Never(t, written, time.Second, 20*time.Millisecond,
		"a changelog record landed while the output of its record was still refused")

	fault.Remove()
	select {
	case err := <-committed:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("the commit did not end once the output was written")
	}
	require.True(t, written(), "the commit wrote no changelog record")
	require.Equal(t, []map[int32]int64{{0: 1}}, s.committed)
	h.rt.Tasks().Release(h.tasks[0])
}
