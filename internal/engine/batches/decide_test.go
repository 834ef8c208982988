package batches

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/offsets"
)

func TestBatchLimit(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		maxRecords, maxBytes int64
		avgSize              float64
		want                 int64
	}{
		{"no limits", 0, 0, 100, 0},
		{"records only", 20000, 0, 100, 20000},
		{"bytes before any record", 0, 1 << 20, 0, 0},
		{"bytes before any record, records set", 500, 1 << 20, 0, 500},
		{"bytes only", 0, 1000, 100, 10},
		{"bytes lower than records", 50, 1000, 100, 10},
		{"records lower than bytes", 5, 1000, 100, 5},
		{"bytes rounds down", 0, 1000, 300, 3},
		{"bytes below one record still reads one", 0, 10, 100, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, batchLimit(tc.maxRecords, tc.maxBytes, tc.avgSize))
		})
	}
}

func TestCutRanges(t *testing.T) {
	tp := func(topic string, p int32) offsets.TopicPartition {
		return offsets.TopicPartition{Topic: topic, Partition: p}
	}
	b := func(topic string, p int32, start, end int64) backlog {
		return backlog{tp: tp(topic, p), start: start, end: end}
	}
	r := func(topic string, p int32, start, end int64) offsets.Range {
		return offsets.Range{TopicPartition: tp(topic, p), Start: start, End: end}
	}
	for _, tc := range []struct {
		name     string
		backlogs []backlog
		limit    int64
		want     []offsets.Range
	}{
		{"nothing to read", nil, 10, nil},
		{"empty backlogs have no range", []backlog{b("a", 0, 5, 5), b("a", 1, 7, 3)}, 0, nil},
		{"no limit: everything", []backlog{b("a", 1, 0, 1000), b("a", 0, 10, 20)}, 0,
			[]offsets.Range{r("a", 0, 10, 20), r("a", 1, 0, 1000)}},
		{"backlog at the limit: everything", []backlog{b("a", 0, 0, 6), b("a", 1, 0, 4)}, 10,
			[]offsets.Range{r("a", 0, 0, 6), r("a", 1, 0, 4)}},
		{"in proportion", []backlog{b("a", 0, 0, 300), b("a", 1, 100, 200)}, 40,
			[]offsets.Range{r("a", 0, 0, 30), r("a", 1, 100, 110)}},
		{"remainder one offset at a time in partition order", []backlog{b("a", 0, 0, 10), b("a", 1, 0, 10), b("a", 2, 0, 10)}, 10,
			[]offsets.Range{r("a", 0, 0, 4), r("a", 1, 0, 3), r("a", 2, 0, 3)}},
		{"a share rounded to zero gets the remainder first", []backlog{b("a", 0, 0, 1), b("b", 0, 0, 99)}, 10,
			[]offsets.Range{r("a", 0, 0, 1), r("b", 0, 0, 9)}},
		{"no share, no range", []backlog{b("a", 0, 0, 1), b("a", 1, 0, 1), b("a", 2, 0, 1)}, 2,
			[]offsets.Range{r("a", 0, 0, 1), r("a", 1, 0, 1)}},
		{"partition order across topics", []backlog{b("b", 0, 0, 2), b("a", 3, 0, 2), b("a", 1, 0, 2)}, 0,
			[]offsets.Range{r("a", 1, 0, 2), r("a", 3, 0, 2), r("b", 0, 0, 2)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, cutRanges(tc.backlogs, tc.limit))
		})
	}
}

// Over many shapes, a cut batch reads exactly min(limit, backlog) records,
// each range inside its partition's backlog and starting where it starts.
func TestCutRangesAddsUpToTheLimit(t *testing.T) {
	for parts := 1; parts <= 7; parts++ {
		for _, limit := range []int64{1, 2, 3, 7, 10, 99, 1000} {
			var backlogs []backlog
			var total int64
			for p := range parts {
				n := int64(p*p*13%17 + 1)
				backlogs = append(backlogs, backlog{tp: offsets.TopicPartition{Topic: "t", Partition: int32(p)}, start: 100, end: 100 + n})
				total += n
			}
			byTP := map[offsets.TopicPartition]backlog{}
			for _, b := range backlogs {
				byTP[b.tp] = b
			}
			var sum int64
			for _, r := range cutRanges(backlogs, limit) {
				b := byTP[r.TopicPartition]
				require.Equal(t, b.start, r.Start, "%d partitions, limit %d: %v", parts, limit, r)
				require.Greater(t, r.End, r.Start)
				require.LessOrEqual(t, r.End, b.end)
				sum += r.End - r.Start
			}
			require.Equal(t, min(limit, total), sum, fmt.Sprintf("%d partitions, limit %d", parts, limit))
		}
	}
}

func TestDecideRecovery(t *testing.T) {
	a0 := offsets.TopicPartition{Topic: "a", Partition: 0}
	a1 := offsets.TopicPartition{Topic: "a", Partition: 1}
	plan := offsets.Plan{Batch: 7, Ranges: []offsets.Range{
		{TopicPartition: a0, Start: 10, End: 20},
		{TopicPartition: a1, Start: 30, End: 40},
	}}
	for _, tc := range []struct {
		name  string
		plan  offsets.Plan
		next  map[offsets.TopicPartition]int64 // the owned partitions
		want  recovery
		owned int
	}{
		{"all owned, all at start: the batch did not commit", plan, map[offsets.TopicPartition]int64{a0: 10, a1: 30}, replayPlan, 2},
		{"all owned, all at end: the commit record was lost", plan, map[offsets.TopicPartition]int64{a0: 20, a1: 40}, writeLostCommit, 2},
		{"one owned, at its end: committed", plan, map[offsets.TopicPartition]int64{a1: 40}, writeLostCommit, 1},
		{"one owned, at its start: not all ranges here, stale", plan, map[offsets.TopicPartition]int64{a0: 10}, discardPlan, 1},
		{"none owned", plan, nil, discardPlan, 0},
		{"one at start, one at end", plan, map[offsets.TopicPartition]int64{a0: 10, a1: 40}, discardPlan, 2},
		{"past the end (a later commit)", plan, map[offsets.TopicPartition]int64{a0: 25, a1: 40}, discardPlan, 2},
		{"inside the range", plan, map[offsets.TopicPartition]int64{a0: 15, a1: 30}, discardPlan, 2},
		{"before the start", plan, map[offsets.TopicPartition]int64{a0: 5, a1: 30}, discardPlan, 2},
		{"a plan without ranges is replayed (it reads nothing)", offsets.Plan{Batch: 7}, nil, replayPlan, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, owned := decideRecovery(tc.plan, func(tp offsets.TopicPartition) (int64, bool) {
				n, ok := tc.next[tp]
				return n, ok
			})
			require.Equal(t, tc.want, got, "got %v", got)
			require.Equal(t, tc.owned, owned)
		})
	}
}
