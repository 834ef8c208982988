package weir

// What becomes of records that leave the topology other than through its
// Kafka sinks: bad input records (the bad-record policy) and the records
// of external sinks (WithSink).

import (
	"errors"
	"fmt"

	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/sink"
	"github.com/weirstream/weir/topology"
)

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
func (p BadRecordPolicy) runtime() tasks.BadRecordPolicy {
	switch p {
	case Fail:
		return tasks.Fail
	case Skip:
		return tasks.Skip
	case DeadLetter:
		return tasks.DeadLetter
	}
	return tasks.BadRecordPolicy(p)
}

// WithSink registers s as the external sink the topology's ToSink(name)
// writes to: a database table, say, written per task and per epoch or
// batch in the sink's own transactions, before Kafka's commit, with the
// task's input position as the write's id (package sink states the
// protocol; package sink/postgres is the PostgreSQL sink). Under
// ExactlyOnce every output reaches the store exactly once, across
// crashes, partition moves and zombie instances; under AtLeastOnce the
// sink still writes each input's outputs once, but what the topology
// computes may count replayed input twice (see docs/guarantees.md).
//
// Every name the topology's ToSink uses needs one, and every registered
// name must be used: New reports both. Record caches (WithCacheMaxBytes)
// do not work with external sinks. Continuous mode commits every epoch
// under its barrier when the topology has external sinks (no commit
// behind the next epoch's processing).
func WithSink(name string, s sink.Sink) Option {
	return func(c *config) {
		if c.sinks == nil {
			c.sinks = map[string]sink.Sink{}
		}
		c.sinks[name] = s
	}
}

// validateSinks checks the external sinks against the topology's ToSink
// names.
func (c *config) validateSinks(topo *topology.Topology) error {
	var bad []error
	used := map[string]bool{}
	if topo != nil {
		for _, name := range topo.ExternalSinks() {
			used[name] = true
			if c.sinks[name] == nil {
				bad = append(bad, fmt.Errorf("%w: ToSink(%q): no sink registered under that name (WithSink)", ErrConfig, name))
			}
		}
	}
	for name, s := range c.sinks {
		switch {
		case s == nil:
			bad = append(bad, fmt.Errorf("%w: WithSink(%q): nil sink", ErrConfig, name))
		case !used[name]:
			bad = append(bad, fmt.Errorf("%w: WithSink(%q): the topology writes no sink of that name (ToSink)", ErrConfig, name))
		}
	}
	if len(c.sinks) > 0 && c.cacheMaxBytes > 0 {
		bad = append(bad, fmt.Errorf("%w: WithCacheMaxBytes: record caches do not work with external sinks (WithSink): their flush has no input position", ErrConfig))
	}
	if len(c.sinks) > 0 && c.mode == MicroBatch && c.microBatch.ForEachBatch != nil {
		bad = append(bad, fmt.Errorf("%w: WithSink: micro-batch ForEachBatch takes every sink's records; use one or the other", ErrConfig))
	}
	if len(bad) == 0 {
		return nil
	}
	return errors.Join(bad...)
}

// warnSinks logs the external sinks written by a sub-topology that reads
// several topics: a replay may interleave its partitions differently, and
// a row may then lag behind its inputs until its key's next update
// (docs/guarantees.md, "Exactly-once into an external store").
func (a *App) warnSinks() {
	g := a.topo.Graph()
	for i := range g.Subtopologies {
		st := &g.Subtopologies[i]
		names := st.ExternalSinks()
		if len(names) == 0 || len(st.SourceTopics()) < 2 {
			continue
		}
		a.cfg.logger.Warn("weir: an external sink is written by a sub-topology that reads several topics; after a replay a row may lag behind its inputs until its next update",
			"sinks", names, "subtopology", st.ID, "topics", len(st.SourceTopics()))
	}
}
