package kafka

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/IBM/sarama"
)

// Handler processes the partitions assigned to a group member.
type Handler interface {
	// Claim is called for each topic partition assigned to the member, on
	// a goroutine of its own, while the partition stays assigned: it
	// should read Records until the channel is closed (the partition was
	// revoked, or the group is stopping), finish or abort its work, commit
	// what it wants committed, and return.
	//
	// ctx is not cancelled when Records closes — there is still time to
	// commit — but only when the claim must be abandoned: Rebalance
	// timeout after Records closed, when the broker and the client give up
	// on the member. Returning before Records is closed ends the member's
	// session: every claim is revoked and claims of the member's
	// partitions start again at the committed offsets (on sarama the
	// member rejoins; on franz-go it keeps its membership). A non-nil
	// error stops [Group.Run], which returns it.
	Claim(ctx context.Context, c Claim) error
}

// HandlerFunc adapts a function to [Handler].
type HandlerFunc func(ctx context.Context, c Claim) error

// Claim calls f.
func (f HandlerFunc) Claim(ctx context.Context, c Claim) error { return f(ctx, c) }

// Claim is one topic partition assigned to the member, with the
// member-level operations of the current session. Its methods are safe for
// concurrent use.
type Claim interface {
	// Topic is the claimed topic.
	Topic() string
	// Partition is the claimed partition.
	Partition() int32
	// InitialOffset is where consumption starts: the group's committed
	// offset, or the partition's log start if the group has none.
	InitialOffset() int64
	// HighWaterMarkOffset is the high watermark last seen by the fetcher.
	HighWaterMarkOffset() int64
	// Records delivers the partition's records in offset order; it is
	// closed when the claim is revoked or the group stops.
	Records() <-chan Record
	Session
}

// Session holds the operations that belong to the member rather than to
// one partition. The member id and generation are read live: under the
// cooperative protocol a rebalance changes the generation while claims
// keep running, so read them at every use.
type Session interface {
	// MarkOffset records next (the offset of the next record to read,
	// that is last processed + 1) as the offset to commit for the
	// partition. Lower offsets than the one already marked are ignored, as
	// are partitions this member has no running claim for. Marks of a
	// partition are dropped when its claim returns: commit before.
	MarkOffset(topic string, partition int32, next int64)
	// Commit synchronously commits every marked offset of the member and
	// returns once the coordinator accepted them, or the error (a
	// *PartitionError for a partition the coordinator rejected).
	Commit(ctx context.Context) error
	// GenerationID is the group generation the member is in now.
	GenerationID() int32
	// MemberID is the member's id in the group now.
	MemberID() string
	// GroupMetadata identifies the member for a transactional offset
	// commit (KIP-447), read now.
	GroupMetadata() GroupMetadata
}

// GroupMetadata identifies a group member for TxnOffsetCommit, so that the
// broker fences a zombie member's commits (KIP-447). It is what
// sarama.ConsumerGroupMetadata carries, in weir's own type.
type GroupMetadata struct {
	// GroupID is the consumer group.
	GroupID string
	// GenerationID is the generation the member is in.
	GenerationID int32
	// MemberID is the member's id in the group.
	MemberID string
	// InstanceID is the static membership id, "" if none.
	InstanceID string
}

// SaramaSession returns the live sarama session behind a Claim made by
// this package, for the transactional producer (internal/txn), which may
// import sarama, e.g. for sarama.NewConsumerGroupMetadataFromSession.
// Prefer [Session.GroupMetadata]. The bool is false for any other Claim
// (a test fake, say).
func SaramaSession(c Claim) (sarama.ConsumerGroupSession, bool) {
	cl, ok := c.(*claim)
	if !ok {
		return nil, false
	}
	return cl.sess, true
}

// claim implements Claim over a sarama claim and session.
type claim struct {
	claimBase
	sc   sarama.ConsumerGroupClaim
	sess sarama.ConsumerGroupSession
	run  *runState
}

var _ Claim = (*claim)(nil)

// HighWaterMarkOffset implements Claim.
func (c *claim) HighWaterMarkOffset() int64 { return c.sc.HighWaterMarkOffset() }

// GenerationID implements Session, reading the live session.
func (c *claim) GenerationID() int32 { return c.sess.GenerationID() }

// MemberID implements Session, reading the live session.
func (c *claim) MemberID() string { return c.sess.MemberID() }

// Commit implements Session.
func (c *claim) Commit(ctx context.Context) error {
	return c.run.committer.commit(ctx, c.run.committer.saramaTry(c.sess))
}

// GroupMetadata implements Session.
func (c *claim) GroupMetadata() GroupMetadata {
	return c.m.groupMetadata(c.sess.MemberID(), c.sess.GenerationID())
}

// groupHandler adapts a Handler to sarama.ConsumerGroupHandler for one Run.
type groupHandler struct {
	run *runState
}

var _ sarama.ConsumerGroupHandler = (*groupHandler)(nil)

// Setup implements sarama.ConsumerGroupHandler. Under the cooperative
// protocol it runs once per session, not once per rebalance.
func (gh *groupHandler) Setup(sess sarama.ConsumerGroupSession) error {
	gh.run.sessions.Add(1)
	gh.run.log.Debug("kafka: group session set up", "group", gh.run.cfg.GroupID,
		"member", sess.MemberID(), "generation", sess.GenerationID(), "claims", sess.Claims())
	return nil
}

// Cleanup implements sarama.ConsumerGroupHandler.
func (gh *groupHandler) Cleanup(sess sarama.ConsumerGroupSession) error {
	gh.run.sessions.Add(-1)
	gh.run.log.Debug("kafka: group session cleaned up", "group", gh.run.cfg.GroupID,
		"member", sess.MemberID(), "generation", sess.GenerationID())
	return nil
}

// ConsumeClaim implements sarama.ConsumerGroupHandler: it runs the
// Handler's Claim with a Records channel fed from sarama's Messages.
func (gh *groupHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, sc sarama.ConsumerGroupClaim) error {
	tp := topicPartition{sc.Topic(), sc.Partition()}
	initial, err := gh.initialOffset(sess, sc)
	if err != nil {
		gh.run.report(&PartitionError{Topic: tp.topic, Partition: tp.partition, Err: err})
		return nil // ends the session; the member rejoins and retries
	}
	gh.run.committer.claimStarted(tp)
	defer gh.run.committer.claimEnded(tp)

	ctx, cancel := context.WithCancel(gh.run.hardCtx)
	defer cancel()
	c := &claim{claimBase: newClaimBase(gh.run.member, tp, initial), sc: sc, sess: sess, run: gh.run}
	stop := make(chan struct{})
	var pump sync.WaitGroup
	pump.Go(func() { gh.pump(sc, c.records, stop, cancel) })

	err = gh.run.call(ctx, c)
	close(stop)
	pump.Wait()
	if err != nil {
		gh.run.fail(&PartitionError{Topic: tp.topic, Partition: tp.partition, Err: err})
	}
	return nil
}

// pump copies sarama's messages to records and closes records when
// Messages closes; then, if the handler has not returned within the
// rebalance timeout, it cancels the claim's context.
func (gh *groupHandler) pump(sc sarama.ConsumerGroupClaim, records chan<- Record, stop <-chan struct{}, cancel context.CancelFunc) {
	// Each step tries its channel alone first: a select over two channels
	// locks both, for every record, while records flow.
	msgs := sc.Messages()
	for open := true; open; {
		var msg *sarama.ConsumerMessage
		select {
		case msg, open = <-msgs:
		default:
			select {
			case msg, open = <-msgs:
			case <-stop: // the handler returned first
				return
			}
		}
		if !open {
			break
		}
		if !deliver(records, recordFromMessage(msg), stop) {
			return
		}
	}
	close(records)
	t := time.NewTimer(gh.run.cfg.RebalanceTimeout)
	defer t.Stop()
	select {
	case <-stop:
	case <-t.C:
		cancel()
	}
}

// initialOffset resolves sarama's initial offset, which is the
// OffsetOldest sentinel when the group has no committed offset.
func (gh *groupHandler) initialOffset(sess sarama.ConsumerGroupSession, sc sarama.ConsumerGroupClaim) (int64, error) {
	off := sc.InitialOffset()
	if off >= 0 {
		return off, nil
	}
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		if off, err = gh.run.client.GetOffset(sc.Topic(), sc.Partition(), sc.InitialOffset()); err == nil {
			return off, nil
		}
		if perr := Pause(sess.Context(), Backoff(attempt)); perr != nil {
			return 0, fmt.Errorf("kafka: resolve initial offset: %w", perr)
		}
	}
	return 0, fmt.Errorf("kafka: resolve initial offset: %w", err)
}
