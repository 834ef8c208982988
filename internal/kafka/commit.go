package kafka

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/IBM/sarama"
)

// committer holds a member's marked offsets and commits them synchronously.
//
// sarama's own Commit reports nothing to its caller: a rejected commit
// reaches the group's Errors channel later, some errors (NOT_COORDINATOR,
// OFFSETS_LOAD_IN_PROGRESS) are only retried at the next commit, and with
// auto-commit off nothing flushes marks when a session ends. weir needs to
// know whether a commit happened, so the committer sends OffsetCommit
// itself through the group's client, with the member id and generation read
// from the live session at every attempt. sarama's offset manager is still
// used for the initial offsets of claims (it fetches them stable under
// read_committed); its marks are never set, so it never commits.
//
// Marks exist only for partitions with a running claim: marking another
// partition is ignored, and a partition's marks are dropped when its claim
// ends, so that a member never commits for a partition it gave away.
//
// A committer is safe for concurrent use; commits are serialised, so
// committed offsets of a partition never go backwards.
type committer struct {
	client     sarama.Client
	groupID    string
	instanceID *string

	mu     sync.Mutex
	marks  map[topicPartition]mark
	active map[topicPartition]int

	commitMu sync.Mutex
}

type mark struct {
	offset int64
	dirty  bool
}

func newCommitter(client sarama.Client, groupID, instanceID string) *committer {
	c := &committer{
		client:  client,
		groupID: groupID,
		marks:   make(map[topicPartition]mark),
		active:  make(map[topicPartition]int),
	}
	if instanceID != "" {
		c.instanceID = &instanceID
	}
	return c
}

func (c *committer) claimStarted(tp topicPartition) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.active[tp]++
}

func (c *committer) claimEnded(tp topicPartition) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.active[tp]--; c.active[tp] <= 0 {
		delete(c.active, tp)
		delete(c.marks, tp)
	}
}

// mark records next as the offset to commit for tp. Lower offsets than the
// one marked are ignored, as are partitions without a running claim.
func (c *committer) mark(tp topicPartition, next int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.active[tp] == 0 || next < 0 {
		return
	}
	if m, ok := c.marks[tp]; ok && next <= m.offset {
		return
	}
	c.marks[tp] = mark{offset: next, dirty: true}
}

func (c *committer) dirty() map[topicPartition]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[topicPartition]int64)
	for tp, m := range c.marks {
		if m.dirty {
			out[tp] = m.offset
		}
	}
	return out
}

// committed clears the dirty flag of tp if its mark is still offset.
func (c *committer) committed(tp topicPartition, offset int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m, ok := c.marks[tp]; ok && m.offset == offset {
		c.marks[tp] = mark{offset: offset}
	}
}

// commit sends every dirty mark and returns once the coordinator accepted
// them all, or with the first error it cannot retry. Transient errors
// (coordinator moved or loading, REBALANCE_IN_PROGRESS while the group
// completes a rebalance, a generation that moved on under the session) are
// retried until ctx is done, for retryBudget at most. Marks made
// while a commit is under way are sent by a retry, or by the next commit.
func (c *committer) commit(ctx context.Context, try commitTry) error {
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	start := time.Now()
	for attempt := 0; ; attempt++ {
		offsets := c.dirty()
		if len(offsets) == 0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("kafka: commit: %w", err)
		}
		retry, err := try(ctx, offsets)
		if !retry {
			return err
		}
		if illegalGeneration(err) && time.Since(start) > generationWait {
			return fmt.Errorf("kafka: commit: the session did not reach the coordinator's generation within %v: %w", generationWait, err)
		}
		if time.Since(start) > retryBudget {
			return fmt.Errorf("kafka: commit: giving up after %d attempts in %v: %w", attempt+1, retryBudget, err)
		}
		if perr := Pause(ctx, Backoff(attempt)); perr != nil {
			if err == nil {
				return fmt.Errorf("kafka: commit: %w", perr)
			}
			return fmt.Errorf("kafka: commit: %w (after %w)", perr, err)
		}
	}
}

// generationWait bounds the retries of a commit refused with
// ILLEGAL_GENERATION while the session has not reached the coordinator's
// generation: the SyncGroup that moves it normally lands within
// milliseconds, and a commit that waits holds the claims the rebalance is
// waiting for.
const generationWait = 2 * time.Second

// commitTry sends one OffsetCommit of offsets. It reports whether a retry
// may succeed, and the error (a *PartitionError for a partition the
// coordinator refused). Each client has its own.
type commitTry func(ctx context.Context, offsets map[topicPartition]int64) (retry bool, err error)

// illegalGeneration reports ILLEGAL_GENERATION, of either client.
func illegalGeneration(err error) bool { return hasCode(err, codeIllegalGeneration) }

// saramaTry is the commitTry of a sarama session.
func (c *committer) saramaTry(sess sarama.ConsumerGroupSession) commitTry {
	return func(_ context.Context, offsets map[topicPartition]int64) (bool, error) {
		return c.trySarama(sess, offsets)
	}
}

// trySarama sends one OffsetCommit through a sarama session.
func (c *committer) trySarama(sess sarama.ConsumerGroupSession, offsets map[topicPartition]int64) (bool, error) {
	memberID, generation := sess.MemberID(), sess.GenerationID()
	req := &sarama.OffsetCommitRequest{
		Version:                 groupRequestVersion(8, 7, 6),
		ConsumerGroup:           c.groupID,
		ConsumerID:              memberID,
		ConsumerGroupGeneration: generation,
		GroupInstanceId:         c.instanceID,
	}
	for tp, off := range offsets {
		req.AddBlockWithLeaderEpoch(tp.topic, tp.partition, off, -1, 0, "")
	}
	coord, err := c.client.Coordinator(c.groupID)
	if err != nil {
		_ = c.client.RefreshCoordinator(c.groupID)
		return true, fmt.Errorf("kafka: commit: coordinator of %q: %w", c.groupID, err)
	}
	resp, err := coord.CommitOffset(req)
	if err != nil {
		_ = c.client.RefreshCoordinator(c.groupID)
		return true, fmt.Errorf("kafka: commit: %w", err)
	}
	answers := make(map[topicPartition]error, len(offsets))
	for t, ps := range resp.Errors {
		for p, kerr := range ps {
			answers[topicPartition{t, p}] = nil
			if kerr != sarama.ErrNoError {
				answers[topicPartition{t, p}] = kerr
			}
		}
	}
	moved := func() bool { return sess.GenerationID() != generation || sess.MemberID() != memberID }
	refresh := func() { _ = c.client.RefreshCoordinator(c.groupID) }
	return c.settle(offsets, answers, sarama.ErrIncompleteResponse, moved, refresh)
}

// settle applies a coordinator's answers to one OffsetCommit of offsets,
// whichever client sent it: answers holds each partition's error (nil
// when accepted), and a partition it lacks was left out of the response
// (missing is then its cause); moved reports whether the member's session moved on
// since the request; coordinatorMoved, if not nil, looks the coordinator
// up again. A partition accepted is marked committed; settle reports
// whether a retry may succeed, and the first error (a *PartitionError), as
// a commitTry does. Each answer is classified by commitVerdictOf.
func (c *committer) settle(offsets map[topicPartition]int64, answers map[topicPartition]error,
	missing error, moved func() bool, coordinatorMoved func()) (retry bool, first error) {
	for tp, off := range offsets {
		err, ok := answers[tp]
		if !ok {
			retry, first = true, cmpErr(first, &PartitionError{tp.topic, tp.partition, missing})
			continue
		}
		switch commitVerdictOf(err) {
		case commitAccepted:
			c.committed(tp, off)
		case commitRetryCoordinator:
			if coordinatorMoved != nil {
				coordinatorMoved()
			}
			retry, first = true, cmpErr(first, &PartitionError{tp.topic, tp.partition, err})
		case commitRetry:
			retry, first = true, cmpErr(first, &PartitionError{tp.topic, tp.partition, err})
		case commitRetryIfMoved:
			retry, first = retry || moved(), cmpErr(first, &PartitionError{tp.topic, tp.partition, err})
		default:
			return false, &PartitionError{tp.topic, tp.partition, err}
		}
	}
	return retry, first
}

// MemberGone reports a commit or heartbeat error that means the member is no longer in
// the group at all (the coordinator removed it, typically after it stalled
// past its session timeout, or another process took its static instance
// id): its partitions belong to other members now and it must rejoin.
// ILLEGAL_GENERATION is not one: a member that rejoined answers it for a
// commit made through an ended session's generation.
func MemberGone(err error) bool {
	return hasCode(err, codeUnknownMemberID, codeFencedInstanceID)
}

// GroupMoved reports an error that says the member's generation is over:
// a rebalance is in progress or done (ILLEGAL_GENERATION,
// REBALANCE_IN_PROGRESS), or the member is gone (MemberGone). Rejoining
// cures it, and at once is best: the rebalance waits for the member.
func GroupMoved(err error) bool {
	return MemberGone(err) || hasCode(err, codeIllegalGeneration, codeRebalanceInProgress)
}

// cmpErr keeps the first non-nil error.
func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// groupRequestVersion picks a group request's version as sarama does for
// protocolVersion: flexible from 2.4, with the group instance id from 2.3,
// else older.
func groupRequestVersion(flexible, instanceID, older int16) int16 {
	switch {
	case protocolVersion.IsAtLeast(sarama.V2_4_0_0):
		return flexible
	case protocolVersion.IsAtLeast(sarama.V2_3_0_0):
		return instanceID
	default:
		return older
	}
}
