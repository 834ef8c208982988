package kfake_test

// Raw-protocol tests of the patches weir carries (see PATCHES.md). Each
// speaks the Kafka protocol directly, one kgo client per group member
// (closing a client is a killed process: its connections drop), and
// checks what Apache Kafka does: each runs on kfake and, when
// KAFKA_BROKERS names a cluster, on it too (kafkatest.Run), so the
// patched behaviour is shown to be Kafka's.

import (
	"context"
	"errors"
	"fmt"

	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/weirstream/weir/internal/kafkatest"
)

// rawMember is one group member speaking the protocol by hand.
type rawMember struct {
	t       *testing.T
	group   string
	cl      *kgo.Client
	id      string
	gen     int32
	session time.Duration
	rebal   time.Duration
}

func newRawMember(t *testing.T, env *kafkatest.Env, group string, session, rebalance time.Duration) *rawMember {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(env.Brokers...), kgo.RequestRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &rawMember{t: t, group: group, cl: cl, session: session, rebal: rebalance}
}

func (m *rawMember) joinRequest() *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group = m.group
	req.MemberID = m.id
	req.SessionTimeoutMillis = int32(m.session / time.Millisecond)
	req.RebalanceTimeoutMillis = int32(m.rebal / time.Millisecond)
	req.ProtocolType = "consumer"
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name = "range"
	p.Metadata = []byte{0, 0, 0, 0, 0, 0, 0, 0}
	req.Protocols = append(req.Protocols, p)
	return req
}

// join sends one JoinGroup and returns its response or error, within d.
func (m *rawMember) join(d time.Duration) (*kmsg.JoinGroupResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var kresp kmsg.Response
	var err error
	for {
		// A real broker answers COORDINATOR_NOT_AVAILABLE (or loading)
		// until its group coordinator is up: a fresh broker's
		// __consumer_offsets is still being created.
		kresp, err = m.cl.Request(ctx, m.joinRequest())
		if !errors.Is(err, kerr.CoordinatorNotAvailable) && !errors.Is(err, kerr.CoordinatorLoadInProgress) &&
			!errors.Is(err, kerr.NotCoordinator) || ctx.Err() != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		return nil, err
	}
	resp := kresp.(*kmsg.JoinGroupResponse)
	if resp.ErrorCode == kerr.MemberIDRequired.Code {
		m.id = resp.MemberID
	}
	return resp, nil
}

// joinFully joins as a new member: MEMBER_ID_REQUIRED, then the real join.
func (m *rawMember) joinFully(d time.Duration) *kmsg.JoinGroupResponse {
	m.t.Helper()
	if _, err := m.join(d); err != nil {
		m.t.Fatalf("first join: %v", err)
	}
	resp, err := m.join(d)
	if err != nil {
		m.t.Fatalf("join: %v", err)
	}
	m.joined(resp)
	return resp
}

func (m *rawMember) joined(resp *kmsg.JoinGroupResponse) {
	m.t.Helper()
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		m.t.Fatalf("join of %s: %v", m.id, err)
	}
	m.id, m.gen = resp.MemberID, resp.Generation
}

// sync sends SyncGroup; a leader assigns nothing to everyone it names.
func (m *rawMember) sync(members ...string) {
	m.t.Helper()
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group, req.MemberID, req.Generation = m.group, m.id, m.gen
	req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	for _, id := range members {
		a := kmsg.NewSyncGroupRequestGroupAssignment()
		a.MemberID = id
		req.GroupAssignment = append(req.GroupAssignment, a)
	}
	kresp, err := m.cl.Request(context.Background(), req)
	if err != nil {
		m.t.Fatalf("sync: %v", err)
	}
	if err := kerr.ErrorForCode(kresp.(*kmsg.SyncGroupResponse).ErrorCode); err != nil {
		m.t.Fatalf("sync of %s: %v", m.id, err)
	}
}

func (m *rawMember) heartbeat() error {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.MemberID, req.Generation = m.group, m.id, m.gen
	kresp, err := m.cl.Request(context.Background(), req)
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(kresp.(*kmsg.HeartbeatResponse).ErrorCode)
}

func memberIDs(resp *kmsg.JoinGroupResponse) []string {
	var ids []string
	for _, m := range resp.Members {
		ids = append(ids, m.MemberID)
	}
	return ids
}

func describeMembers(t *testing.T, cl *kgo.Client, group string) (string, []string) {
	t.Helper()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{group}
	kresp, err := cl.Request(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	g := kresp.(*kmsg.DescribeGroupsResponse).Groups[0]
	var ids []string
	for _, m := range g.Members {
		ids = append(ids, m.MemberID)
	}
	return g.State, ids
}

// A member waiting in JoinGroup is kept alive however long the rebalance
// takes (Kafka's GroupCoordinator.shouldKeepMemberAlive: a member awaiting
// join is not expired by its session timeout) and is answered when the
// rebalance completes. Unpatched kfake expired it after its session
// timeout and never answered its JoinGroup: the client waited out its
// request timeout, and a group whose members' joins all outlasted their
// session timeouts never formed.
func TestPatchMemberAwaitingJoinIsKeptAlive(t *testing.T) {
	t.Parallel() // waits out session and rebalance timeouts: beside the others
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		group := kafkatest.GroupID(t)
		a := newRawMember(t, env, group, time.Second, 10*time.Second)
		b := newRawMember(t, env, group, 2*time.Second, 10*time.Second)

		// a alone, then b joins and a rejoins: generation 2 with both.
		a.sync(memberIDs(a.joinFully(5 * time.Second))...)
		if _, err := b.join(5 * time.Second); err != nil { // MEMBER_ID_REQUIRED
			t.Fatal(err)
		}
		bDone := make(chan *kmsg.JoinGroupResponse, 1)
		go func() {
			resp, err := b.join(5 * time.Second)
			if err != nil {
				t.Error(err)
			}
			bDone <- resp
		}()
		time.Sleep(100 * time.Millisecond)
		resp, err := a.join(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		a.joined(resp)
		b.joined(<-bDone)
		if len(resp.Members) != 2 {
			t.Fatalf("generation %d has %d members, want 2", resp.Generation, len(resp.Members))
		}
		a.sync(memberIDs(resp)...)
		b.sync()

		// b goes silent (its session is 2 s); a rejoins at once (its own
		// session is 1 s) and waits for b. Kafka expires b after 2 s and
		// answers a, alone, in the next generation.
		start := time.Now()
		resp, err = a.join(8 * time.Second)
		if err != nil {
			t.Fatalf("a's JoinGroup was not answered (%v after sending it): %v", time.Since(start).Round(time.Millisecond), err)
		}
		a.joined(resp)
		if got := memberIDs(resp); len(got) != 1 || got[0] != a.id {
			t.Fatalf("generation %d members %v, want only %s", resp.Generation, got, a.id)
		}
	})
}

// A member whose JoinGroup response cannot be delivered (its process died
// while it waited) still gets a session timeout and is removed when it
// expires, as Kafka schedules the next heartbeat expiration of every
// member when the join completes. Unpatched kfake skipped that when the
// reply failed; a member never answered before (a new one) then had no
// timer at all and stayed in the stable group for good, holding its
// partitions.
func TestPatchDeadJoinerExpires(t *testing.T) {
	t.Parallel() // waits out session and rebalance timeouts: beside the others
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		// Whether kfake sees the dead connection when it answers is a race (a
		// reply may still fit in the connection's buffer, and then the member
		// does get a timer): one round shows the bug half the time, six
		// rounds 63 times in 64.
		for round := 0; round < 6; round++ {
			t.Run(fmt.Sprint(round), func(t *testing.T) {
				group := kafkatest.GroupID(t)
				a := newRawMember(t, env, group, time.Second, 3*time.Second)
				a.sync(memberIDs(a.joinFully(5 * time.Second))...)

				// d joins as a new member and dies while waiting for a.
				d := newRawMember(t, env, group, time.Second, 3*time.Second)
				if _, err := d.join(5 * time.Second); err != nil { // MEMBER_ID_REQUIRED
					t.Fatal(err)
				}
				go d.join(5 * time.Second) //nolint:errcheck // it dies waiting
				time.Sleep(100 * time.Millisecond)
				d.cl.Close()
				time.Sleep(100 * time.Millisecond)

				// a rejoins: the rebalance completes with a and d, whose
				// answer goes nowhere; a assigns to both and stays alive,
				// rejoining whenever the group rebalances. Kafka expires d
				// one session timeout later and a ends up alone.
				resp, err := a.join(5 * time.Second)
				if err != nil {
					t.Fatal(err)
				}
				a.joined(resp)
				if len(resp.Members) != 2 {
					t.Fatalf("generation %d has %d members, want 2", resp.Generation, len(resp.Members))
				}
				a.sync(memberIDs(resp)...)
				const wait = 6 * time.Second
				for deadline := time.Now().Add(wait); time.Now().Before(deadline); {
					time.Sleep(100 * time.Millisecond)
					switch err := a.heartbeat(); err {
					case nil:
						if state, ids := describeMembers(t, a.cl, a.group); state == "Stable" && len(ids) == 1 && ids[0] == a.id {
							return
						}
					case kerr.RebalanceInProgress:
						resp, err := a.join(5 * time.Second)
						if err != nil {
							t.Fatal(err)
						}
						a.joined(resp)
						a.sync(memberIDs(resp)...)
					default:
						t.Fatal(err)
					}
				}
				state, ids := describeMembers(t, a.cl, a.group)
				t.Fatalf("%v after the dead joiner %s was answered the group is %s with members %v", wait, d.id, state, ids)
			})
		}
	})
}

// A read_committed fetch whose response the request's MaxBytes cuts short
// still lists the aborted transactions of the batches it returns. Unpatched
// kfake stopped at the cut before looking them up, so a consumer that asks
// for as many bytes in all as for the partition (sarama's fetches, weir's
// range reader) received an aborted transaction's records as committed
// ones whenever its range held more than one response.
func TestPatchFullFetchListsAbortedTransactions(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		topic := kafkatest.Topic(t)
		ctx := context.Background()
		admin, err := kgo.NewClient(kgo.SeedBrokers(env.Brokers...))
		if err != nil {
			t.Fatal(err)
		}
		defer admin.Close()
		create := kmsg.NewPtrCreateTopicsRequest()
		ct := kmsg.NewCreateTopicsRequestTopic()
		ct.Topic, ct.NumPartitions, ct.ReplicationFactor = topic, 1, 1
		create.Topics = append(create.Topics, ct)
		if _, err := create.RequestWith(ctx, admin); err != nil {
			t.Fatal(err)
		}

		// An aborted transaction of 20 batches of 1 KiB, then a committed one.
		txn, err := kgo.NewClient(kgo.SeedBrokers(env.Brokers...), kgo.TransactionalID(topic),
			kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0), kgo.MaxBufferedRecords(1))
		if err != nil {
			t.Fatal(err)
		}
		defer txn.Close()
		value := make([]byte, 1024)
		for _, commit := range []bool{false, true} {
			if err := txn.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 20; i++ {
				if err := txn.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			if err := txn.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
				t.Fatal(err)
			}
		}

		// Fetch v11 (as sarama does for Kafka 2.5) from offset 0, MaxBytes
		// equal to the partition's bound: a response of a few batches.
		cl, err := kgo.NewClient(kgo.SeedBrokers(env.Brokers...), kgo.MaxVersions(kversion.V2_5_0()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		for _, maxBytes := range []int32{4 << 10, 1 << 20} {
			req := kmsg.NewPtrFetchRequest()
			req.ReplicaID, req.MaxWaitMillis, req.MinBytes = -1, 100, 1
			req.MaxBytes, req.IsolationLevel, req.SessionEpoch = maxBytes, 1, -1
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = 0, maxBytes, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			sp := resp.Topics[0].Partitions[0]
			if err := kerr.ErrorForCode(sp.ErrorCode); err != nil {
				t.Fatal(err)
			}
			if len(sp.RecordBatches) == 0 {
				t.Fatalf("MaxBytes %d: no record batch", maxBytes)
			}
			if len(sp.AbortedTransactions) != 1 || sp.AbortedTransactions[0].FirstOffset != 0 {
				t.Errorf("MaxBytes %d: %d bytes of batches from offset 0 with aborted transactions %+v, want the one at offset 0",
					maxBytes, len(sp.RecordBatches), sp.AbortedTransactions)
			}
		}
	})
}

// leave sends LeaveGroup for m.
func (m *rawMember) leave() {
	m.t.Helper()
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group = m.group
	lm := kmsg.NewLeaveGroupRequestMember()
	lm.MemberID = m.id
	req.Members = append(req.Members, lm)
	if _, err := m.cl.Request(context.Background(), req); err != nil {
		m.t.Fatal(err)
	}
}

// A member that leaves while it waits in SyncGroup does not keep the next
// rebalance waiting: the remaining member's join completes at once. (Kafka
// completes a join when every member it knows has joined.) Unpatched kfake
// counted the leaver's removal against the members waiting in JoinGroup,
// so the join waited out the whole rebalance timeout.
func TestPatchLeaveDuringSyncDoesNotHoldTheNextJoin(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		group := kafkatest.GroupID(t)
		a := newRawMember(t, env, group, 10*time.Second, 8*time.Second)
		b := newRawMember(t, env, group, 10*time.Second, 8*time.Second)
		a.sync(memberIDs(a.joinFully(5 * time.Second))...)
		if _, err := b.join(5 * time.Second); err != nil { // MEMBER_ID_REQUIRED
			t.Fatal(err)
		}
		bJoined := make(chan *kmsg.JoinGroupResponse, 1)
		go func() {
			resp, err := b.join(5 * time.Second)
			if err != nil {
				t.Error(err)
			}
			bJoined <- resp
		}()
		time.Sleep(100 * time.Millisecond)
		resp, err := a.join(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		a.joined(resp)
		b.joined(<-bJoined)

		// b syncs first and waits for the leader's assignment; then it leaves.
		go func() {
			req := kmsg.NewPtrSyncGroupRequest()
			req.Group, req.MemberID, req.Generation = b.group, b.id, b.gen
			req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
			_, _ = b.cl.Request(context.Background(), req) // answered with an error or never
		}()
		time.Sleep(200 * time.Millisecond)
		b.leave()

		start := time.Now()
		resp, err = a.join(8 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		a.joined(resp)
		if took := time.Since(start); took > 3*time.Second {
			t.Fatalf("a's join, a the only member left, was answered after %v (the rebalance timeout is 8s)", took.Round(time.Millisecond))
		}
	})
}

// Joins during a rebalance do not move its deadline: a member that keeps
// heartbeating but never rejoins is removed, and the others answered, one
// rebalance timeout after the rebalance began (Kafka's DelayedJoin).
// Unpatched kfake restarted the deadline at every join, so instances
// restarting faster than the rebalance timeout kept the group from ever
// forming.
func TestPatchJoinsDoNotMoveTheJoinDeadline(t *testing.T) {
	t.Parallel() // waits out session and rebalance timeouts: beside the others
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		group := kafkatest.GroupID(t)
		const rebalance = 3 * time.Second
		a := newRawMember(t, env, group, 10*time.Second, rebalance)
		b := newRawMember(t, env, group, 10*time.Second, rebalance)
		a.sync(memberIDs(a.joinFully(5 * time.Second))...)
		if _, err := b.join(5 * time.Second); err != nil {
			t.Fatal(err)
		}
		bJoined := make(chan *kmsg.JoinGroupResponse, 1)
		go func() {
			resp, _ := b.join(5 * time.Second)
			bJoined <- resp
		}()
		time.Sleep(100 * time.Millisecond)
		resp, err := a.join(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		a.joined(resp)
		b.joined(<-bJoined)
		a.sync(memberIDs(resp)...)
		b.sync()

		// a rejoins: a rebalance begins. b heartbeats on but never rejoins;
		// new members join every second meanwhile.
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(200 * time.Millisecond):
					_ = b.heartbeat()
				}
			}
		}()
		start := time.Now()
		aJoined := make(chan error, 1)
		var took time.Duration
		go func() {
			resp, err := a.join(4 * rebalance)
			took = time.Since(start)
			if err == nil {
				a.joined(resp)
			}
			aJoined <- err
		}()
		for i := 0; i < 4; i++ {
			time.Sleep(time.Second)
			n := newRawMember(t, env, group, 10*time.Second, rebalance)
			if _, err := n.join(5 * time.Second); err != nil { // MEMBER_ID_REQUIRED
				t.Fatal(err)
			}
			go n.join(4 * rebalance) //nolint:errcheck // answered with the others
		}
		if err := <-aJoined; err != nil {
			t.Fatal(err)
		}
		if took > rebalance+time.Second {
			t.Fatalf("the rebalance begun by a's join completed after %v, its timeout is %v", took.Round(time.Millisecond), rebalance)
		}
	})
}
