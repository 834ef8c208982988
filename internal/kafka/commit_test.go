package kafka

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir/embedded"
)

// laggingSession is a group session whose generation lags the
// coordinator's: it answers old for its first calls, then new — as
// sarama's session does while the member rejoins under the cooperative
// protocol, keeping its claims (the coordinator moves to the new
// generation at the JoinGroup, the session at the SyncGroup).
type laggingSession struct {
	sarama.ConsumerGroupSession
	member   string
	old, new int32
	lagCalls int
	calls    int
}

func (s *laggingSession) MemberID() string { return s.member }

func (s *laggingSession) GenerationID() int32 {
	s.calls++
	if s.calls <= s.lagCalls {
		return s.old
	}
	return s.new
}

// joinGroup joins (or, with member set, rejoins) group as its only member
// and completes the SyncGroup: the group's generation then moves on.
func joinGroup(t *testing.T, cl *kgo.Client, group, member string) (string, int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for {
		join := kmsg.NewPtrJoinGroupRequest()
		join.Group, join.MemberID, join.ProtocolType = group, member, "consumer"
		join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 30000, 30000
		p := kmsg.NewJoinGroupRequestProtocol()
		meta := kmsg.NewConsumerMemberMetadata()
		meta.Topics = []string{"in"}
		p.Name, p.Metadata = "range", meta.AppendTo(nil)
		join.Protocols = append(join.Protocols, p)
		resp, err := join.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ErrorCode == kerr.MemberIDRequired.Code {
			member = resp.MemberID
			continue
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			t.Fatalf("join group: %v", err)
		}
		sync := kmsg.NewPtrSyncGroupRequest()
		sync.Group, sync.MemberID, sync.Generation = group, resp.MemberID, resp.Generation
		sync.ProtocolType, sync.Protocol = kmsg.StringPtr("consumer"), resp.Protocol
		a := kmsg.NewSyncGroupRequestGroupAssignment()
		a.MemberID = resp.MemberID
		sync.GroupAssignment = append(sync.GroupAssignment, a)
		sresp, err := sync.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if err := kerr.ErrorForCode(sresp.ErrorCode); err != nil {
			t.Fatalf("sync group: %v", err)
		}
		return resp.MemberID, resp.Generation
	}
}

// A commit the coordinator refuses with ILLEGAL_GENERATION while the
// session still shows the old generation is retried with the session's
// new one once it moves (the member is rejoining, not out of the group),
// for generationWait at most. A commit that gave up at once would, under
// micro-batch at-least-once, leave the batch's offsets uncommitted when its
// partitions move to another instance at that rebalance, and the other
// instance would process the batch again.
func TestCommitRetriesAGenerationTheSessionHasNotReachedYet(t *testing.T) {
	t.Parallel() // mostly waits (group joins, timeouts): beside the other tests that do
	b, err := embedded.Start(t.Context(), embedded.Options{Topics: map[string]int32{"in": 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const group = "lagging"
	member, old := joinGroup(t, cl, group, "")
	member2, gen := joinGroup(t, cl, group, member)
	if member2 != member || gen <= old {
		t.Fatalf("rejoin: member %s generation %d, then member %s generation %d: want the same member, a later generation", member, old, member2, gen)
	}

	c := newCommitter(checkTopicsClient(t, b.Addrs()), group, "")
	tp := topicPartition{"in", 0}
	c.claimStarted(tp)
	c.mark(tp, 42)
	sess := &laggingSession{member: member, old: old, new: gen, lagCalls: 2}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := c.commit(ctx, c.saramaTry(sess)); err != nil {
		t.Fatalf("commit while the session lags the coordinator's generation: %v", err)
	}

	// A session that never catches up gives up after generationWait, as
	// before: the offsets wait for the next commit.
	c.mark(tp, 43)
	stuck := &laggingSession{member: member, old: old, new: gen, lagCalls: 1 << 30}
	start := time.Now()
	if err := c.commit(ctx, c.saramaTry(stuck)); !errors.Is(err, sarama.ErrIllegalGeneration) {
		t.Fatalf("commit through a session stuck a generation behind: %v, want ILLEGAL_GENERATION", err)
	}
	if took := time.Since(start); took < generationWait || took > generationWait+2*time.Second {
		t.Fatalf("commit through a stuck session gave up after %v, want about %v", took, generationWait)
	}

	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Group = group
	ft := kmsg.NewOffsetFetchRequestTopic()
	ft.Topic, ft.Partitions = "in", []int32{0}
	fetch.Topics = append(fetch.Topics, ft)
	resp, err := fetch.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Topics[0].Partitions[0].Offset; got != 42 {
		t.Fatalf("committed offset %d, want 42", got)
	}
}
