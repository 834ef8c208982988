package tests

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
)

// replicaView is the group's placement of the stateful tasks (those of the
// sub-topology reading the repartition topic) as the members' assignments
// carry it.
type replicaView struct {
	members  []string
	owner    map[kafka.TaskID]string
	standbys map[kafka.TaskID][]string
	warmups  map[kafka.TaskID][]string
}

func readReplicas(t *testing.T, admin *kafka.Admin, appID string) (replicaView, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ms, err := admin.GroupMembers(ctx, appID)
	if err != nil {
		return replicaView{}, err
	}
	v := replicaView{owner: map[kafka.TaskID]string{}, standbys: map[kafka.TaskID][]string{}, warmups: map[kafka.TaskID][]string{}}
	for _, m := range ms {
		v.members = append(v.members, m.ID)
		for topic, ps := range m.Assigned {
			if strings.HasSuffix(topic, "-repartition") {
				for _, p := range ps {
					v.owner[kafka.TaskID{Topic: topic, Partition: p}] = m.ID
				}
			}
		}
		for _, id := range m.Standbys {
			v.standbys[id] = append(v.standbys[id], m.ID)
		}
		for _, id := range m.Warmups {
			v.warmups[id] = append(v.warmups[id], m.ID)
		}
	}
	return v, nil
}

// ownedBy counts the stateful tasks member owns.
func (v replicaView) ownedBy(member string) int {
	n := 0
	for _, m := range v.owner {
		if m == member {
			n++
		}
	}
	return n
}

func newAdmin(t *testing.T, env *kafkatest.Env) *kafka.Admin {
	t.Helper()
	admin, err := kafka.NewAdmin(env.Config())
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close() })
	return admin
}

// Three instances with one standby each: every store partition has
// exactly one standby, never on its owner, two per instance. The owner of
// two tasks is killed (SIGKILL): its tasks resume on their standbys, which
// replay only a tail, not the changelog, and the counts stay exact.
func TestOneStandbyPerTaskTakesOverAKilledOwner(t *testing.T) {
	kafkatest.Long(t)
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		in, out := kafkatest.Topic(t), kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, in, 6)
		kafkatest.CreateTopic(t, env, out, 6)
		appID := kafkatest.GroupID(t)
		topo := wordCountTopology(t, in, out)
		admin := newAdmin(t, env)
		vocab := make([]string, 300)
		for i := range vocab {
			vocab[i] = fmt.Sprintf("w%03d", i)
		}
		want := map[string]int64{}

		victim := startChild(t, env, "continuous", appID, in, out, t.TempDir(), "WEIR_CHILD_STANDBYS=1")
		opts := []weir.Option{weir.WithGuarantee(weir.ExactlyOnce), weir.WithStandbyReplicas(1), weir.WithHTTP("127.0.0.1:0")}
		b := startInstance(t, topo, env, appID, opts...)
		c := startInstance(t, topo, env, appID, opts...)
		defer func() { _ = b.stop(t) }()
		defer func() { _ = c.stop(t) }()
		produceLines(t, env, in, 0, 2000, vocab, want)
		waitForCounts(t, env, out, want)

		// Settled: three members, two stateful tasks each, one standby of
		// each task elsewhere, no warm-up left.
		var before, last replicaView
		defer func() {
			if t.Failed() {
				t.Logf("last view: members %v owners %v standbys %v warmups %v", last.members, last.owner, last.standbys, last.warmups)
			}
		}()
		require.Eventually(t, func() bool {
			v, err := readReplicas(t, admin, appID)
			last = v
			if err != nil || len(v.members) != 3 || len(v.owner) != 6 || len(v.warmups) > 0 || !kafkatest.GroupSettled(t, env, appID, 3) {
				return false
			}
			for _, m := range v.members {
				if v.ownedBy(m) != 2 {
					return false
				}
			}
			for id, owner := range v.owner {
				if len(v.standbys[id]) != 1 || v.standbys[id][0] == owner {
					return false
				}
			}
			before = v
			return true
		}, 120*time.Second, 200*time.Millisecond, "the group never settled with one standby per task")
		perMember := map[string]int{}
		for _, ms := range before.standbys {
			perMember[ms[0]]++
		}
		t.Logf("owners %v, standbys %v", before.owner, before.standbys)
		for _, m := range before.members {
			require.Equal(t, 2, perMember[m], "standbys spread evenly: %v", perMember)
		}

		time.Sleep(3 * time.Second) // a few standby rounds
		metrics := func(in *instance) string {
			_, body := get(t, httpAddrs(t, in)[0], "/metrics")
			return string(body)
		}
		require.Contains(t, metrics(b)+metrics(c), `weir_replica_lag{`, "the standbys' lag is a metric")

		var total int64
		for _, n := range want {
			total += n // changelog records written: one per count update
		}
		// What tasks replayed before they ran: restores, not replicas.
		restored := func() int64 {
			sb, sc := b.app.Stats(), c.app.Stats()
			return sb.Restored - sb.Replicated + sc.Restored - sc.Replicated
		}
		followed := b.app.Stats().Replicated + c.app.Stats().Replicated
		restoredBefore := restored()
		victim.kill(t)
		var after replicaView
		require.Eventually(t, func() bool {
			v, err := readReplicas(t, admin, appID)
			if err != nil || len(v.members) != 2 || len(v.owner) != 6 {
				return false
			}
			after = v
			return true
		}, 60*time.Second, 50*time.Millisecond, "the killed owner's tasks were never taken over")
		victimID := "" // the member that left
		for _, m := range before.members {
			if !slices.Contains(after.members, m) {
				victimID = m
			}
		}
		require.NotEmpty(t, victimID)
		for id, owner := range before.owner {
			if owner == victimID {
				require.Equal(t, before.standbys[id][0], after.owner[id], "task %v resumes on its standby", id)
			}
		}

		produceLines(t, env, in, 2000, 30, vocab, want)
		requireExact(t, want, waitForCounts(t, env, out, want))
		atTakeover := restored() - restoredBefore
		t.Logf("count updates: %d; applied by the standbys before the kill: %d; restored by the tasks taken over: %d", total, followed, atTakeover)
		require.Positive(t, followed, "the standbys followed the changelogs")
		// Each task has one standby, which applied its whole changelog:
		// followed is about the changelog's size, and the victim's two
		// tasks a third of it — what restoring them in full would replay.
		require.Less(t, atTakeover, followed/10, "the takeover replayed only a tail")
	})
}

// Scaling out from one instance to two: the stateful tasks stay with the
// first instance while the second restores them as warm-ups, and move
// only once it caught up — the new instance's restore is over before it
// owns any of them.
func TestScaleOutWarmsUpBeforeTasksMove(t *testing.T) {
	kafkatest.Long(t)
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		in, out := kafkatest.Topic(t), kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, in, 6)
		kafkatest.CreateTopic(t, env, out, 6)
		appID := kafkatest.GroupID(t)
		topo := wordCountTopology(t, in, out)
		admin := newAdmin(t, env)
		vocab := make([]string, 300)
		for i := range vocab {
			vocab[i] = fmt.Sprintf("w%03d", i)
		}
		want := map[string]int64{}
		// Three warm-ups at once: the second instance's whole share warms
		// up in one round. An acceptable lag below each task's changelog
		// (hundreds of records here), so that the tasks need their
		// warm-ups: within it they may move at once.
		opts := []weir.Option{weir.WithGuarantee(weir.ExactlyOnce), weir.WithMaxWarmupReplicas(3), weir.WithAcceptableRecoveryLag(50)}
		a := startInstance(t, topo, env, appID, opts...)
		defer func() { _ = a.stop(t) }()
		produceLines(t, env, in, 0, 2000, vocab, want)
		waitForCounts(t, env, out, want)
		var total int64
		for _, n := range want {
			total += n
		}
		v, err := readReplicas(t, admin, appID)
		require.NoError(t, err)
		require.Len(t, v.owner, 6)
		aID := v.members[0]

		b := startInstance(t, topo, env, appID, opts...)
		defer func() { _ = b.stop(t) }()
		warmed := map[kafka.TaskID]bool{}
		var restoredAtMove int64 = -1
		var moved time.Time
		var violations []string
		var last replicaView
		defer func() {
			if t.Failed() {
				t.Logf("last view: owners %v standbys %v warmups %v", last.owner, last.standbys, last.warmups)
			}
		}()
		start := time.Now()
		require.Eventually(t, func() bool {
			v, err := readReplicas(t, admin, appID)
			if err != nil || len(v.members) != 2 {
				return false
			}
			last = v
			restored := b.app.Stats().Restored
			for id, ms := range v.warmups {
				if slices.Contains(ms, aID) {
					violations = append(violations, fmt.Sprintf("the owner warms %v up", id))
				}
				warmed[id] = true
			}
			for id, owner := range v.owner {
				if owner == aID {
					continue
				}
				if !warmed[id] {
					violations = append(violations, fmt.Sprintf("task %v moved to the new instance without a warm-up", id))
				}
				if restoredAtMove < 0 {
					restoredAtMove, moved = restored, time.Now()
				}
			}
			return v.ownedBy(aID) == 3 && len(v.owner) == 6 && len(v.warmups) == 0
		}, 90*time.Second, 50*time.Millisecond, "the tasks never moved to the new instance")
		require.Empty(t, violations)
		t.Logf("warm-ups %v; first task moved %v after the second instance started, with %d records restored",
			warmed, moved.Sub(start).Round(time.Millisecond), restoredAtMove)

		produceLines(t, env, in, 2000, 30, vocab, want)
		requireExact(t, want, waitForCounts(t, env, out, want))
		final := b.app.Stats().Restored
		t.Logf("count updates: %d; the new instance restored %d before it owned a task, %d in all", total, restoredAtMove, final)
		require.Positive(t, restoredAtMove, "the warm-ups restored before the tasks moved")
		require.Less(t, final-restoredAtMove, restoredAtMove/10, "the tasks moved once their warm-ups had caught up")
	})
}

// The replica options' bad values: New rejects each, naming the option.
func TestNewRejectsBadReplicaOptions(t *testing.T) {
	topo := wordCountTopology(t, "in", "out")
	for _, tc := range []struct {
		opt  weir.Option
		want string
	}{
		{weir.WithStandbyReplicas(-1), "WithStandbyReplicas: negative count -1"},
		{weir.WithMaxWarmupReplicas(-1), "WithMaxWarmupReplicas: negative count -1"},
		{weir.WithAcceptableRecoveryLag(-1), "WithAcceptableRecoveryLag: negative lag -1"},
		{weir.WithProbingRebalanceInterval(999 * time.Millisecond), "WithProbingRebalanceInterval: 999ms below the minimum 1s"},
		{weir.WithProbingRebalanceInterval(-time.Minute), "WithProbingRebalanceInterval: -1m0s below the minimum 1s"},
	} {
		_, err := weir.New(topo, append(validBase(), tc.opt)...)
		require.ErrorIs(t, err, weir.ErrConfig)
		require.ErrorContains(t, err, tc.want)
	}
	_, err := weir.New(topo, append(validBase(), weir.WithStandbyReplicas(2), weir.WithMaxWarmupReplicas(0),
		weir.WithAcceptableRecoveryLag(0), weir.WithProbingRebalanceInterval(time.Second))...)
	require.NoError(t, err)
}
