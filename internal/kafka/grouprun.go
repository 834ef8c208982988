package kafka

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"
)

// member is what one [Group.Run] shares with its claims whichever client
// carries it (runState on sarama, franzRun on franz-go): the
// configuration, the handler, the committer of marked offsets, and the
// errors — those Run does not return go to OnError in order, the first
// fatal one is Run's result and stops the group.
type member struct {
	cfg       GroupConfig
	log       *slog.Logger
	h         Handler
	committer *committer
	hardCtx   context.Context // parent of claim contexts; not cancelled by Run's ctx
	stop      context.CancelCauseFunc
	errs      *errorQueue

	errMu    sync.Mutex
	firstErr error
}

// newMember returns the member of one Run under ctx; stop cancels the
// Run's consuming context, committer carries its commits.
func newMember(ctx context.Context, cfg GroupConfig, h Handler, committer *committer, stop context.CancelCauseFunc) *member {
	return &member{
		cfg:       cfg,
		log:       cfg.logger(),
		h:         h,
		committer: committer,
		hardCtx:   context.WithoutCancel(ctx),
		stop:      stop,
		errs:      newErrorQueue(cfg.OnError, cfg.logger()),
	}
}

// report hands err to OnError.
func (m *member) report(err error) { m.errs.push(err) }

// fail records the error Run returns and stops the group.
func (m *member) fail(err error) {
	m.errMu.Lock()
	first := m.firstErr == nil
	if first {
		m.firstErr = err
	}
	m.errMu.Unlock()
	if !first {
		m.report(err) // Run returns only one; the others are not lost
	}
	m.stop(err)
}

// result is the error Run returns: the first fail's, or nil.
func (m *member) result() error {
	m.errMu.Lock()
	defer m.errMu.Unlock()
	return m.firstErr
}

// call runs the handler on c, turning a panic into an error so that Run
// still joins every goroutine and reports what happened.
func (m *member) call(ctx context.Context, c Claim) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("kafka: handler panic: %v\n%s", r, debug.Stack())
		}
	}()
	return m.h.Claim(ctx, c)
}

// groupMetadata identifies the member as memberID in generation.
func (m *member) groupMetadata(memberID string, generation int32) GroupMetadata {
	return GroupMetadata{
		GroupID:      m.cfg.GroupID,
		GenerationID: generation,
		MemberID:     memberID,
		InstanceID:   m.cfg.InstanceID,
	}
}

// claimBase is the part of a [Claim] that is the same on either client:
// the partition, where it starts, its Records, and the marks it leaves
// with the member's committer.
type claimBase struct {
	m         *member
	topic     string
	partition int32
	initial   int64
	records   chan Record
}

func newClaimBase(m *member, tp topicPartition, initial int64) claimBase {
	return claimBase{m: m, topic: tp.topic, partition: tp.partition, initial: initial,
		records: make(chan Record, claimBuffer)}
}

// Topic implements Claim.
func (c *claimBase) Topic() string { return c.topic }

// Partition implements Claim.
func (c *claimBase) Partition() int32 { return c.partition }

// InitialOffset implements Claim.
func (c *claimBase) InitialOffset() int64 { return c.initial }

// Records implements Claim.
func (c *claimBase) Records() <-chan Record { return c.records }

// MarkOffset implements Session.
func (c *claimBase) MarkOffset(topic string, partition int32, next int64) {
	c.m.committer.mark(topicPartition{topic, partition}, next)
}

// claimBuffer is how many records a claim's Records holds ahead of the
// handler. Both clients buffer fetched records already, so this changes
// no semantics — records a handler never took are read again from the
// committed offsets by the next claim — but it saves a goroutine hand-off
// (park and wake) per record: the handler takes records in runs.
const claimBuffer = 256

// offer sends v on ch, blocking while ch is full until done or stop is
// closed: then it returns done's cause (ctxErr) or stopped, and v is not
// sent. The single-channel send comes first: a select over several
// channels locks them all, for every value, while values flow.
func offer[T any](ch chan<- T, v T, done <-chan struct{}, ctxErr func() error, stop <-chan struct{}, stopped error) error {
	select {
	case ch <- v:
		return nil
	default:
	}
	select {
	case ch <- v:
		return nil
	case <-done:
		return ctxErr()
	case <-stop:
		return stopped
	}
}

// deliver hands r to a claim's records, or reports false when halt closed
// first (the claim is ending).
func deliver(records chan<- Record, r Record, halt <-chan struct{}) bool {
	return offer(records, r, nil, nil, halt, errHalted) == nil
}

// awaitTopics waits until every topic exists and checks that
// co-partitioned topics have the same partition count; ask asks the
// cluster (attempt counts from 0) for partition counts, leaving out the
// topics it does not know. A topic created a moment ago (by Prepare, this
// member's or another's) reaches each broker's metadata at that broker's
// own pace: an unknown topic is asked again for unknownTopicWait. A
// cluster that does not answer is asked again for retryBudget: a member
// starting while a broker of the cluster is down must not fail.
func awaitTopics(ctx context.Context, topics []string, sets [][]string, ask func(attempt int) (map[string]int, error)) error {
	start := time.Now()
	for attempt := 0; ; attempt++ {
		counts, err := ask(attempt)
		var missing string
		if err == nil {
			for _, t := range topics {
				if counts[t] == 0 {
					missing = t
					break
				}
			}
			if missing == "" {
				return checkCoPartitioned(counts, sets)
			}
			if time.Since(start) > unknownTopicWait {
				return fmt.Errorf("%w: %q", ErrUnknownTopic, missing)
			}
		} else if time.Since(start) > retryBudget {
			return fmt.Errorf("kafka: metadata of %v: %d attempts in %v: %w", topics, attempt+1, retryBudget, err)
		}
		if perr := Pause(ctx, Backoff(attempt)); perr != nil {
			if err == nil {
				err = fmt.Errorf("%w: %q", ErrUnknownTopic, missing)
			}
			return fmt.Errorf("kafka: metadata of %v: %w (after %w)", topics, perr, err)
		}
	}
}

// unknownTopicWait bounds awaitTopics' wait for a topic that the brokers
// asked do not know. A variable for the tests.
var unknownTopicWait = 10 * time.Second

// checkCoPartitioned verifies that the topics of each set have the same
// partition count.
func checkCoPartitioned(counts map[string]int, sets [][]string) error {
	for _, set := range sets {
		for _, t := range set[min(1, len(set)):] {
			if counts[t] != counts[set[0]] {
				return fmt.Errorf("%w: co-partitioned topics %q (%d partitions) and %q (%d partitions)",
					ErrPartitionMismatch, set[0], counts[set[0]], t, counts[t])
			}
		}
	}
	return nil
}
