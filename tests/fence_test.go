package tests

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/exactlyonce"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/internal/txn"
)

// Two instances under exactly-once; one is killed with SIGKILL mid-epoch,
// its transaction open. The survivor takes its partitions over after the
// session timeout and fences the dead instance's transactional id
// (internal/engine/tasks/fence.go): the open transaction is aborted at
// once, so the survivor restores the dead instance's changelogs and its
// output appears without waiting for the transaction timeout and the
// broker's abort check (transaction.abort.timed.out.transaction.cleanup.
// interval.ms, 10 s on Kafka). The last counts appear within about the
// session timeout plus a few seconds of the kill, and a read_committed
// reader sees each count exactly once.
//
// The transaction timeout is below the session timeout (weir takes half
// of it), so without the fence the broker may abort the transaction
// before the takeover anyway: on kfake, which aborts a timed-out
// transaction at the next request, always; on Kafka when its abort check
// happens to run early. This test shows the takeover stays exactly-once
// and prompt with the fence; internal/txn's TestFenceAbortsAbandonedTransaction
// (a 60 s timeout) shows the fence itself ends the transaction.
func TestKilledInstanceIsFencedAtTakeover(t *testing.T) {
	kafkatest.Long(t)
	if testing.Short() {
		t.Skip("starts child processes")
	}
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		const session = 6 * time.Second // transaction timeout: 3 s
		in, out := kafkatest.Topic(t), kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, in, 4)
		kafkatest.CreateTopic(t, env, out, 4)
		appID := kafkatest.GroupID(t)
		vocab := make([]string, 40)
		for i := range vocab {
			vocab[i] = fmt.Sprintf("w%02d", i)
		}
		want := map[string]int64{}
		knobs := []string{"WEIR_CHILD_SESSION=" + session.String(), "WEIR_CHILD_EPOCH=1s"}
		a := startChild(t, env, "continuous", appID, in, out, t.TempDir(), knobs...)
		b := startChild(t, env, "continuous", appID, in, out, t.TempDir(), knobs...)
		produceLines(t, env, in, 0, 200, vocab, want)
		waitForCounts(t, env, out, want)
		// Both instances run tasks before the kill.
		time.Sleep(2 * session)
		produceLines(t, env, in, 200, 200, vocab, want)
		waitForCounts(t, env, out, want)

		// Records keep coming through the kill: the transaction open at
		// the kill has written to the outputs and changelogs.
		var killed time.Time
		killAt := time.Now().Add(1500 * time.Millisecond)
		for i := 0; i < 60; i++ {
			produceLines(t, env, in, 400+10*i, 10, vocab, want)
			if killed.IsZero() && time.Now().After(killAt) {
				killed = time.Now()
				a.kill(t)
			}
			time.Sleep(50 * time.Millisecond)
		}
		require.False(t, killed.IsZero())
		requireExact(t, want, waitForCounts(t, env, out, want))
		pause := time.Since(killed)
		t.Logf("%s: the last counts appeared %v after the kill (session timeout %v)", env.Name, pause.Round(10*time.Millisecond), session)
		require.Less(t, pause, session+6*time.Second, "the survivor's output waits for the dead instance's transaction")
		b.stop(t)
	})
}

// A member stalled (SIGSTOP) past its session timeout while a second one
// runs: the survivor takes its partitions and fences its transactional id
// as if it had died. When the zombie wakes up (SIGCONT) its transaction
// fails as fenced; it re-creates its producer, rewinds and rejoins, and
// none of its stalled epoch's records is ever visible: every count
// appears once for a read_committed reader.
func TestStalledMemberFencedBySurvivorRewinds(t *testing.T) {
	kafkatest.Long(t)
	if testing.Short() {
		t.Skip("starts child processes")
	}
	if raceEnabled {
		t.Skip("sarama's own data race on failed transactional batches (see TestStalledMemberIsFenced)")
	}
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		in, out := kafkatest.Topic(t), kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, in, 4)
		kafkatest.CreateTopic(t, env, out, 4)
		appID := kafkatest.GroupID(t)
		vocab := []string{"ash", "elm", "fir", "oak", "yew", "box", "bay"}
		want := map[string]int64{}

		a := startChild(t, env, "continuous", appID, in, out, t.TempDir())
		b := startChild(t, env, "continuous", appID, in, out, t.TempDir())
		produceLines(t, env, in, 0, 100, vocab, want)
		waitForCounts(t, env, out, want)
		time.Sleep(6 * time.Second) // both members run tasks

		stallAndWake(t, env, a, in, out, vocab, want, func() {}) // b takes a's partitions
		a.stop(t)
		b.stop(t)
	})
}

// A live member's transactional id is fenced while it keeps its tasks,
// as a survivor's fence lands on a member that was expelled and has
// already rejoined with the same id (a late fence), or on one that only
// seemed to leave: nothing about the group changes, only the producer's
// epoch. Each fence aborts the transaction the member has open; the
// member's next produce, offsets or EndTxn fails as fenced, it
// re-creates its producer, rewinds to the committed offsets and redoes
// the work, in both modes. A read_committed reader sees each count once.
func TestLiveMemberFencedWhileKeepingItsTasks(t *testing.T) {
	kafkatest.Long(t)
	if testing.Short() {
		t.Skip("starts child processes")
	}
	if raceEnabled {
		t.Skip("sarama's own data race on failed transactional batches (see TestStalledMemberIsFenced)")
	}
	for _, mode := range []string{"continuous", "micro-batch"} {
		t.Run(mode, func(t *testing.T) {
			kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
				in, out := kafkatest.Topic(t), kafkatest.Topic(t)
				kafkatest.CreateTopic(t, env, in, 4)
				kafkatest.CreateTopic(t, env, out, 4)
				appID := kafkatest.GroupID(t)
				vocab := []string{"ash", "elm", "fir", "oak", "yew", "box", "bay"}
				want := map[string]int64{}
				dirA, dirB := t.TempDir(), t.TempDir()
				a := startChild(t, env, mode, appID, in, out, dirA)
				b := startChild(t, env, mode, appID, in, out, dirB)
				produceLines(t, env, in, 0, 100, vocab, want)
				waitForCounts(t, env, out, want)
				time.Sleep(6 * time.Second) // both members run tasks

				var ids []string
				for _, dir := range []string{dirA, dirB} {
					id, err := exactlyonce.LoadOrCreateInstanceID(dir)
					require.NoError(t, err)
					ids = append(ids, appID+"-"+id)
				}
				fences := 0
				for i := range 40 {
					produceLines(t, env, in, 100+10*i, 10, vocab, want)
					if i%4 == 1 {
						id := ids[(i/4)%2]
						ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
						require.NoError(t, txn.Fence(ctx, txn.Config{Kafka: env.Config(), TransactionalID: id,
							SessionTimeout: 3 * time.Second, Logger: testLogger()}))
						cancel()
						fences++
					}
					time.Sleep(150 * time.Millisecond)
				}
				t.Logf("%s: fenced the members' transactional ids %d times", env.Name, fences)
				requireExact(t, want, waitForCounts(t, env, out, want))
				time.Sleep(2 * time.Second) // time for a late commit to land if it could
				requireExact(t, want, countsSeen(t, env, out))
				a.stop(t)
				b.stop(t)
			})
		})
	}
}
