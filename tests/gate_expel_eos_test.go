package tests

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
)

// An exactly-once member is expelled from its group while its epoch's
// commit is parked at the rejoin gate (chaos seeds 731529 and 731530: a
// member stalled past its session timeout): instance A's JoinGroup, sent
// because instance B joined, is held by the broker, A's next epoch
// produces its outputs and its commit waits at the gate, and meanwhile the
// coordinator removes A (a LeaveGroup in its name, as a session timeout
// does). B takes every partition and redoes A's uncommitted input from the
// committed offsets. When A's JoinGroup goes on, it is refused
// (UNKNOWN_MEMBER_ID), A joins again as a new member, and the gate opens:
// the parked commit must carry the membership A lost, and the broker
// fence it (A rewinds because the group moved on) — carried with A's new
// membership it was accepted, and a read_committed reader saw the words A
// counted once more. On franz-go (a sarama member whose membership is
// refused ends its session: its claims never take a new member id).
func TestExactlyOnceCommitParkedByAnExpelledMemberIsFenced(t *testing.T) {
	kafkatest.Long(t)
	env := kafkatest.Kfake(t, kafkatest.KfakeOptions())
	c := env.Cluster()
	in, out := kafkatest.Topic(t), kafkatest.Topic(t)
	kafkatest.CreateTopic(t, env, in, 2)
	kafkatest.CreateTopic(t, env, out, 2)
	appID := kafkatest.GroupID(t)
	topo := wordCountTopology(t, in, out)
	vocab := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	want := map[string]int64{}

	var moved atomic.Int64 // A's rewinds because the group moved on
	onA := weir.WithErrorHandler(func(err error) {
		t.Logf("instance A: %v (rewind %v, group moved %v)", err, errors.Is(err, tasks.ErrRewind), kafka.GroupMoved(err))
		if errors.Is(err, tasks.ErrRewind) && kafka.GroupMoved(err) {
			moved.Add(1)
		}
	})
	// A session timeout of 20 s makes the transaction timeout 10 s (half
	// of it): A's transaction outlives the park, and its commit meets the
	// group's fencing, not the transaction coordinator's (a transaction
	// aborted at its timeout fences the producer). B cannot count A's
	// input before A's transaction ends (it holds the repartition topic's
	// last stable offset), so A goes on as soon as B holds the group.
	opts := []weir.Option{weir.WithGuarantee(weir.ExactlyOnce), weir.WithKafkaClient(weir.KafkaClientFranzGo),
		weir.WithSessionTimeout(20 * time.Second)}
	a := startInstance(t, topo, env, appID, append(opts, onA)...)
	produceLines(t, env, in, 0, 100, vocab, want)
	waitForCounts(t, env, out, want)

	// A is the group's only member: its heartbeat names it.
	memberA := make(chan string, 1)
	c.ControlKey(int16(kmsg.Heartbeat), func(req kmsg.Request) (kmsg.Response, error, bool) {
		if r := req.(*kmsg.HeartbeatRequest); r.Group == appID {
			select {
			case memberA <- r.MemberID:
			default:
			}
		}
		return nil, nil, false
	})
	var idA string
	select {
	case idA = <-memberA:
	case <-time.After(30 * time.Second):
		t.Fatal("instance A sent no heartbeat")
	}

	// A's next JoinGroup (its gate closed) waits until resume is closed.
	held, resume := make(chan struct{}), make(chan struct{})
	var holding atomic.Bool
	c.ControlKey(int16(kmsg.JoinGroup), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if r := req.(*kmsg.JoinGroupRequest); r.Group == appID && r.MemberID == idA && !holding.Swap(true) {
			close(held)
			c.SleepControl(func() { <-resume })
		}
		return nil, nil, false
	})
	// A transactional produce while A's JoinGroup is held is A's (its
	// epoch's repartitioned words): B has no partition until the rebalance
	// completes.
	var produced, watching atomic.Bool
	c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if r := req.(*kmsg.ProduceRequest); watching.Load() && r.TransactionID != nil {
			produced.Store(true)
		}
		return nil, nil, false
	})

	b := startInstance(t, topo, env, appID, opts...)
	defer func() { require.NoError(t, b.stop(t)) }()
	select {
	case <-held:
	case <-time.After(60 * time.Second):
		t.Fatal("instance A did not rejoin when B joined")
	}
	watching.Store(true)
	next := 100
	require.Eventually(t, func() bool {
		produceLines(t, env, in, next, 10, vocab, want)
		next += 10
		return produced.Load()
	}, 30*time.Second, 200*time.Millisecond, "instance A produced no epoch while its JoinGroup was held")
	// The epoch's commit reaches the gate an epoch interval (50 ms) later.
	time.Sleep(time.Second)

	// The coordinator removes A (a LeaveGroup in its name, as at its
	// session timeout: it sends no heartbeat while its JoinGroup is held);
	// B takes every partition, to count A's uncommitted input again.
	admin, err := kgo.NewClient(kgo.SeedBrokers(env.Brokers...))
	require.NoError(t, err)
	defer admin.Close()
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Group = appID
	m := kmsg.NewLeaveGroupRequestMember()
	m.MemberID = idA
	leave.Members = append(leave.Members, m)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := leave.RequestWith(ctx, admin)
	require.NoError(t, err)
	require.Zero(t, resp.ErrorCode, "LeaveGroup in A's name")
	require.Eventually(t, func() bool {
		d := kmsg.NewPtrDescribeGroupsRequest()
		d.Groups = []string{appID}
		resp, err := d.RequestWith(ctx, admin)
		if err != nil || len(resp.Groups) != 1 {
			return false
		}
		g := resp.Groups[0]
		return g.State == "Stable" && len(g.Members) == 1 && g.Members[0].MemberID != idA
	}, 30*time.Second, 50*time.Millisecond, "B did not take the group over")
	require.Zero(t, moved.Load(), "A's parked commit went out before A rejoined")

	// A's JoinGroup goes on: refused, A joins as a new member, its gate
	// opens, and the parked commit must be fenced.
	close(resume)
	deadline := time.Now().Add(90 * time.Second)
	for moved.Load() == 0 {
		requireNoDuplicate(t, countsSeen(t, env, out))
		if time.Now().After(deadline) {
			t.Fatal("instance A's parked commit was not refused")
		}
		time.Sleep(250 * time.Millisecond)
	}
	for range 5 {
		produceLines(t, env, in, next, 20, vocab, want)
		next += 20
		time.Sleep(100 * time.Millisecond)
	}
	requireExact(t, want, waitForCounts(t, env, out, want))
	require.NoError(t, a.stop(t))
}

// requireNoDuplicate fails if any word's counts, read read_committed, are
// not 1, 2, ... so far.
func requireNoDuplicate(t *testing.T, seen map[string][]int64) {
	t.Helper()
	for w, s := range seen {
		for i, c := range s {
			if c != int64(i+1) {
				t.Fatalf("word %s: output %d is %d (the outputs around it: %v): the parked commit was accepted",
					w, i+1, c, s[max(0, i-3):min(len(s), i+4)])
			}
		}
	}
}
