package weir

import "github.com/weirstream/weir/internal/runtime"

// BadRecordPolicy says what happens to an input record that cannot be
// deserialized or processed (a processor.RecordError); set it with
// WithBadRecordPolicy. Failures that are not about one record — a store,
// a sink, the producer, a transaction — are not bad records: they follow
// the guarantee's own rules whatever the policy.
type BadRecordPolicy int

// The bad-record policies.
const (
	// Fail (the default) stops Run with an error naming the record's
	// topic, partition and offset. The records before it are committed.
	Fail BadRecordPolicy = iota
	// Skip logs the record's position and the error, counts it
	// (Stats.Skipped) and goes on.
	Skip
	// DeadLetter writes the raw record to "<topic>-dlq" — with headers
	// naming the error's kind, message and node and the record's topic,
	// partition and offset — counts it (Stats.DeadLettered) and goes on.
	// Under ExactlyOnce the dead letter is part of the transaction.
	DeadLetter
)

// String names the policy: "fail", "skip" or "dead-letter".
func (p BadRecordPolicy) String() string {
	return p.runtime().String()
}

// runtime is the policy as the runtime applies it; an unknown policy
// (New rejects it) stays unknown.
func (p BadRecordPolicy) runtime() runtime.BadRecordPolicy {
	switch p {
	case Fail:
		return runtime.Fail
	case Skip:
		return runtime.Skip
	case DeadLetter:
		return runtime.DeadLetter
	}
	return runtime.BadRecordPolicy(p)
}
