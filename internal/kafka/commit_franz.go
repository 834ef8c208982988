package kafka

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// tryCommit is the commitTry of a franz-go member: one OffsetCommit with
// the member id and generation kgo holds now. weir sends it itself rather
// than through kgo's CommitOffsetsSync, which waits for a join in progress
// and reports nothing about retries; the classification is the sarama
// committer's (see committer.trySarama).
func (fr *franzRun) tryCommit(ctx context.Context, offsets map[topicPartition]int64) (bool, error) {
	memberID, generation := fr.cl.GroupMetadata()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group = fr.cfg.GroupID
	req.Generation = generation
	req.MemberID = memberID
	if fr.cfg.InstanceID != "" {
		req.InstanceID = kmsg.StringPtr(fr.cfg.InstanceID)
	}
	for t, ps := range partitionsByTopic(maps.Keys(offsets)) {
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = t
		for _, p := range ps {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition = p
			rp.Offset = offsets[topicPartition{t, p}]
			rp.LeaderEpoch = -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, fr.cl)
	if err != nil {
		return true, fmt.Errorf("kafka: commit: %w", err)
	}
	answers := make(map[topicPartition]error, len(offsets))
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			answers[topicPartition{t.Topic, p.Partition}] = kerr.ErrorForCode(p.ErrorCode)
		}
	}
	moved := func() bool {
		id, gen := fr.cl.GroupMetadata()
		return gen != generation || id != memberID
	}
	// kgo finds a moved coordinator by itself: no lookup to start here.
	return fr.committer.settle(offsets, answers, errIncompleteCommit, moved, nil)
}

// errIncompleteCommit is the cause of a partition a commit response left
// out.
var errIncompleteCommit = errors.New("kafka: commit: the response left the partition out")

// startOffsets returns, for each partition, the offset its claim starts
// at — the group's committed offset, fetched stable (KIP-447: a pending
// transactional commit is waited for), or the log start if there is none
// — and its high watermark. Transient errors are retried until ctx is
// done.
func (fr *franzRun) startOffsets(ctx context.Context, tps []topicPartition) (initial, hwm map[topicPartition]int64, err error) {
	for attempt := 0; ; attempt++ {
		initial, err = fr.committedOffsets(ctx, tps)
		if err == nil {
			var none []topicPartition
			for _, tp := range tps {
				if _, ok := initial[tp]; !ok {
					none = append(none, tp)
				}
			}
			var start map[topicPartition]int64
			if start, err = fr.listOffsets(ctx, none, -2); err == nil {
				for tp, off := range start {
					initial[tp] = off
				}
				if hwm, err = fr.listOffsets(ctx, tps, -1); err == nil {
					return initial, hwm, nil
				}
			}
		}
		if perr := Pause(ctx, Backoff(attempt)); perr != nil {
			return nil, nil, fmt.Errorf("kafka: start offsets: %w (after %w)", perr, err)
		}
	}
}

// committedOffsets fetches the group's committed offsets of tps; a
// partition without one is absent.
func (fr *franzRun) committedOffsets(ctx context.Context, tps []topicPartition) (map[topicPartition]int64, error) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.RequireStable = true
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = fr.cfg.GroupID
	for t, ps := range partitionsByTopic(slices.Values(tps)) {
		rt := kmsg.NewOffsetFetchRequestGroupTopic()
		rt.Topic = t
		rt.Partitions = ps
		g.Topics = append(g.Topics, rt)
	}
	req.Groups = append(req.Groups, g)
	resp, err := req.RequestWith(ctx, fr.cl)
	if err != nil {
		return nil, fmt.Errorf("kafka: fetch committed offsets: %w", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, fmt.Errorf("kafka: fetch committed offsets: %w", err)
	}
	out := make(map[topicPartition]int64, len(tps))
	for _, rg := range resp.Groups {
		if err := kerr.ErrorForCode(rg.ErrorCode); err != nil {
			return nil, fmt.Errorf("kafka: fetch committed offsets: %w", err)
		}
		for _, t := range rg.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					return nil, &PartitionError{Topic: t.Topic, Partition: p.Partition, Err: err}
				}
				if p.Offset >= 0 {
					out[topicPartition{t.Topic, p.Partition}] = p.Offset
				}
			}
		}
	}
	return out, nil
}

// listOffsets returns the offsets at timestamp (-2 log start, -1 high
// watermark) of tps.
func (fr *franzRun) listOffsets(ctx context.Context, tps []topicPartition, timestamp int64) (map[topicPartition]int64, error) {
	out := make(map[topicPartition]int64, len(tps))
	if len(tps) == 0 {
		return out, nil
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	for t, ps := range partitionsByTopic(slices.Values(tps)) {
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = t
		for _, p := range ps {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition = p
			rp.Timestamp = timestamp
			rp.CurrentLeaderEpoch = -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, fr.cl)
	if err != nil {
		return nil, fmt.Errorf("kafka: list offsets: %w", err)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return nil, &PartitionError{Topic: t.Topic, Partition: p.Partition, Err: err}
			}
			out[topicPartition{t.Topic, p.Partition}] = p.Offset
		}
	}
	for _, tp := range tps {
		if _, ok := out[tp]; !ok {
			return nil, &PartitionError{Topic: tp.topic, Partition: tp.partition, Err: errors.New("kafka: list offsets: the response left the partition out")}
		}
	}
	return out, nil
}

// partitionsByTopic groups partitions by topic, as a request names them.
func partitionsByTopic(tps iter.Seq[topicPartition]) map[string][]int32 {
	out := make(map[string][]int32)
	for tp := range tps {
		out[tp.topic] = append(out[tp.topic], tp.partition)
	}
	return out
}
