package batches

import (
	"context"
	"fmt"

	"github.com/weirstream/weir/microbatch"
	"github.com/weirstream/weir/offsets"
	"github.com/weirstream/weir/processor"
)

// finished reports whether a bounded trigger is done, once a plan came up
// empty.
//
// Once is done unless a repartition partition it owns holds records past
// its stable end (pendingInternal).
//
// AvailableNow is done when the whole group is (groupDone), not only this
// member: an instance that ended as soon as its own partitions were empty
// would leave behind the repartition records another instance's last
// batch writes to them after that — the partitions go to nobody, or to an
// instance that has ended too — and the table would come out short.
func (e *Engine) finished(ctx context.Context, srcs map[offsets.TopicPartition]*source) (bool, error) {
	if e.cfg.Trigger == microbatch.AvailableNow() {
		return e.groupDone(ctx)
	}
	pending, err := e.pendingInternal(ctx, srcs)
	return !pending, err
}

// pendingInternal reports whether a source topic of the application's own
// (a repartition topic) holds records past its stable end: the last
// batch's, whose transaction markers Kafka writes after the commit
// returned, or another member's batch still running.
func (e *Engine) pendingInternal(ctx context.Context, srcs map[offsets.TopicPartition]*source) (bool, error) {
	byTopic := map[string][]int32{}
	for tp := range srcs {
		if processor.IsInternalTopic(e.appID, tp.Topic) {
			byTopic[tp.Topic] = append(byTopic[tp.Topic], tp.Partition)
		}
	}
	for topic, parts := range byTopic {
		if _, pending, err := e.rt.ReadableEnds(ctx, topic, parts); err != nil || pending {
			return pending, err
		}
	}
	return false, nil
}

// readGroupTargets records the end of every partition of the external
// source topics, once, when an AvailableNow run starts: what the group
// must have committed before any of its members ends (groupDone).
func (e *Engine) readGroupTargets(ctx context.Context) error {
	if e.groupTargets != nil || e.cfg.Trigger != microbatch.AvailableNow() {
		return nil
	}
	targets := map[string]map[int32]int64{}
	for topic, parts := range e.allPartitions() {
		if processor.IsInternalTopic(e.appID, topic) {
			continue
		}
		ends, err := e.rt.EndOffsets(ctx, topic, parts)
		if err != nil {
			return fmt.Errorf("microbatch: AvailableNow: ends of %q: %w", topic, err)
		}
		targets[topic] = ends
	}
	e.groupTargets = targets
	return nil
}

// groupDone reports whether the application's group has consumed what an
// AvailableNow run must, on every partition, this member's or not: each
// external source up to its end when the run started, and each repartition
// topic up to its end, with nothing past its stable end (the last batch's
// records until Kafka writes its markers, or a batch still running
// elsewhere). A partition nobody owns for a moment (its instance ended
// and the group is rebalancing) keeps every member waiting until an owner
// has processed it.
func (e *Engine) groupDone(ctx context.Context) (bool, error) {
	for topic, parts := range e.allPartitions() {
		ends := e.groupTargets[topic]
		if processor.IsInternalTopic(e.appID, topic) {
			var unstable bool
			var err error
			if ends, unstable, err = e.rt.ReadableEnds(ctx, topic, parts); err != nil || unstable {
				return false, err
			}
		}
		committed, err := e.rt.GroupCommitted(ctx, topic, parts)
		if err != nil {
			return false, err
		}
		var starts map[int32]int64
		for _, p := range parts {
			if committed[p] >= ends[p] {
				continue
			}
			if committed[p] < 0 { // never committed: done if there was nothing to read
				if starts == nil {
					if starts, err = e.rt.StartOffsets(ctx, topic, parts); err != nil {
						return false, err
					}
				}
				if ends[p] <= starts[p] {
					continue
				}
			}
			return false, nil
		}
	}
	return true, nil
}

// allPartitions returns every partition of every source topic of the
// application, by topic.
func (e *Engine) allPartitions() map[string][]int32 {
	plan := e.rt.Plan()
	out := make(map[string][]int32, len(plan.Subtopology))
	for topic, sub := range plan.Subtopology {
		parts := make([]int32, plan.Partitions[sub])
		for i := range parts {
			parts[i] = int32(i)
		}
		out[topic] = parts
	}
	return out
}
