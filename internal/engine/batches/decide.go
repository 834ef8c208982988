package batches

import (
	"slices"

	"github.com/weirstream/weir/offsets"
)

// The micro-batch engine's two decisions, apart from the broker calls and
// the WAL writes they lead to (batch.go), so that they are tested directly
// (decide_test.go): how the next batch's ranges are cut, and what becomes
// of a plan a previous run left without its commit record.

// backlog is what one partition has to read: [start, end).
type backlog struct {
	tp         offsets.TopicPartition
	start, end int64
}

// batchLimit returns the most records the next batch reads:
// maxRecords (MaxRecordsPerBatch), lowered to what maxBytes
// (MaxBytesPerBatch) allows at avgSize, the average record size seen so
// far — at least 1. Zero is no limit; maxBytes plays no part before a
// record has been seen (avgSize 0).
func batchLimit(maxRecords, maxBytes int64, avgSize float64) int64 {
	limit := maxRecords
	if maxBytes > 0 && avgSize > 0 {
		byBytes := max(1, int64(float64(maxBytes)/avgSize))
		if limit == 0 || byBytes < limit {
			limit = byBytes
		}
	}
	return limit
}

// cutRanges cuts the batch's ranges from the partitions' backlogs: the
// whole of each when they add up to at most limit (or limit is 0);
// otherwise limit shared in proportion to the backlogs, the rounding
// remainder handed out one offset at a time in partition order, so that
// the ranges add up to limit exactly. The ranges are in partition order;
// a partition with nothing to read, or no share, has none. It sorts
// backlogs.
func cutRanges(backlogs []backlog, limit int64) []offsets.Range {
	backlogs = slices.DeleteFunc(backlogs, func(b backlog) bool { return b.end <= b.start })
	slices.SortFunc(backlogs, func(a, b backlog) int { return a.tp.Compare(b.tp) })
	var total int64
	shares := make([]int64, len(backlogs))
	for i, b := range backlogs {
		shares[i] = b.end - b.start
		total += shares[i]
	}
	if limit > 0 && total > limit {
		left := limit
		for i, b := range backlogs {
			shares[i] = limit * (b.end - b.start) / total
			left -= shares[i]
		}
		for i := 0; left > 0; i = (i + 1) % len(backlogs) {
			if shares[i] < backlogs[i].end-backlogs[i].start {
				shares[i]++
				left--
			}
		}
	}
	var ranges []offsets.Range
	for i, b := range backlogs {
		if shares[i] > 0 {
			ranges = append(ranges, offsets.Range{TopicPartition: b.tp, Start: b.start, End: b.start + shares[i]})
		}
	}
	return ranges
}

// recovery is what becomes of a plan that a previous run wrote and left
// without its commit record (see the microbatch package doc).
type recovery int

const (
	// replayPlan: this instance owns every range and each is at its start
	// (the batch did not commit) — run the batch again with the same ranges
	// and batch id.
	replayPlan recovery = iota
	// writeLostCommit: every range this instance owns, at least one, is at
	// its end (the batch committed; its commit record was lost) — write it.
	writeLostCommit
	// discardPlan: anything else (ranges owned elsewhere now, or positions
	// that match neither end) — the plan is stale: drop it and plan anew.
	discardPlan
)

func (r recovery) String() string {
	switch r {
	case replayPlan:
		return "replay"
	case writeLostCommit:
		return "write lost commit"
	case discardPlan:
		return "discard"
	}
	return "unknown"
}

// decideRecovery decides what becomes of the pending plan. next returns
// the committed next offset of a partition this instance owns, and false
// for one it does not. It also returns how many of the plan's ranges this
// instance owns.
func decideRecovery(plan offsets.Plan, next func(offsets.TopicPartition) (int64, bool)) (recovery, int) {
	atEnd, atStart, owned := 0, 0, 0
	for _, r := range plan.Ranges {
		n, ok := next(r.TopicPartition)
		if !ok {
			continue
		}
		owned++
		switch n {
		case r.End:
			atEnd++
		case r.Start:
			atStart++
		}
	}
	switch {
	case owned == len(plan.Ranges) && atStart == owned:
		return replayPlan, owned
	case owned > 0 && atEnd == owned:
		return writeLostCommit, owned
	default:
		return discardPlan, owned
	}
}
