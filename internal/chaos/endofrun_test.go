package chaos

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/internal/kafka"
)

// Each end-of-run record is a reserved account's, in its own partition of
// the input and of "by-key": the runner's producer (kgo's default
// partitioner) and weir's repartition (kafka.PartitionForKey) put every
// key, an account's or a reserved one's, in the same partition — what
// keeps the end-of-run record after every input of its partition.
func TestEndOfRunPartitions(t *testing.T) {
	eor := EndOfRun(20_000)
	require.Len(t, eor, Partitions)
	part := kgo.StickyKeyPartitioner(nil).ForTopic("in")
	keys := []string{}
	for k := range Keys {
		keys = append(keys, KeyName(k))
		require.False(t, isEndOfRun(KeyName(k)))
	}
	for p, in := range eor {
		require.True(t, isEndOfRun(in.Key), in.Key)
		require.Equal(t, Good, in.Kind)
		require.Equal(t, stamp(20_000).Add(EndOfRunDelay).UnixMilli()+int64(p), stamp(in.ID).UnixMilli())
		got, err := kafka.PartitionForKey([]byte(in.Key), Partitions)
		require.NoError(t, err)
		require.Equal(t, int32(p), got, in.Key)
		keys = append(keys, in.Key)
	}
	for _, key := range keys {
		want, err := kafka.PartitionForKey([]byte(key), Partitions)
		require.NoError(t, err)
		require.Equal(t, int(want), part.Partition(&kgo.Record{Key: []byte(key)}, Partitions), key)
	}
	require.True(t, isEndOfRun(WindowKey(eor[0].Key, eor[0].ID)))
}

// With the end-of-run records no good input is exempt from the outer
// join's check (without them, about 2 × 8 s of the last inputs per
// partition are: 40% of 20,000 records); the reserved accounts' outputs
// are skipped, and the region totals count them.
func TestEndOfRunChecks(t *testing.T) {
	for _, n := range []int{20_000, 50_000} {
		without, err := newExpectation(Generate(1, n), nil)
		require.NoError(t, err)
		with, err := newExpectation(Generate(1, n), EndOfRun(n))
		require.NoError(t, err)
		require.Zero(t, with.outerExempted(), n)
		require.Greater(t, without.outerExempted(), n/10, n)
		t.Logf("%d records: %d good inputs exempt without the end-of-run records, %d with", n, without.outerExempted(), with.outerExempted())
	}

	e, err := newExpectation(Generate(5, 20_000), EndOfRun(20_000))
	require.NoError(t, err)
	totals, regions, outer := branchOutputs(e)
	// The reserved accounts' outputs of a correct run: each one's region
	// at count 1, and, emitted alone or not at all, its record.
	for _, in := range e.endOfRun {
		regions = append(regions, rec(in.Key, AccountRegion{Region: RegionName(1), Count: 1}))
		outer = append(outer, rec(in.Key, OuterValue(in.ID, 0)))
	}
	// The totals count them: region 1 holds 8 more accounts.
	require.Equal(t, int64(Partitions), e.branch.regions[1].Accounts-regionsWithout(t).Accounts)
	check := func(ordered bool, f func(*verifier) func([]kafka.Record, *report), recs []kafka.Record) report {
		var r report
		f(&verifier{exp: e, ordered: ordered})(recs, &r)
		return r
	}
	totalsCheck := func(v *verifier) func([]kafka.Record, *report) { return v.checkRegionTotals }
	regionsCheck := func(v *verifier) func([]kafka.Record, *report) { return v.checkAccountRegions }
	outerCheck := func(v *verifier) func([]kafka.Record, *report) { return v.checkOuter }
	for _, ordered := range []bool{false, true} {
		require.Equal(t, report{}, check(ordered, totalsCheck, totals))
		require.Equal(t, report{}, check(ordered, regionsCheck, regions))
		require.Equal(t, report{}, check(ordered, outerCheck, outer))
	}
	// A total that leaves the reserved accounts out is not final.
	short := append(slices.Clone(totals), rec(RegionKey(1), regionsWithout(t)))
	require.Equal(t, 1, check(true, totalsCheck, short).pending)

	// Every unpaired good input's lone record is now required, the last
	// one's included.
	var lone []kafka.Record
	for _, o := range outer {
		if even, odd, _ := parseOuterValue(string(o.Value)); (even == 0 || odd == 0) && !isEndOfRun(string(o.Key)) {
			lone = append(lone, o)
		}
	}
	last := lone[len(lone)-1] // the last unpaired good input: exempt without the end-of-run records
	even, odd, _ := parseOuterValue(string(last.Value))
	before, err := newExpectation(Generate(5, 20_000), nil)
	require.NoError(t, err)
	require.True(t, before.outerMayWait(e.inputs[max(even, odd)-1]))
	require.False(t, e.outerMayWait(e.inputs[max(even, odd)-1]))
	dropped := slices.DeleteFunc(slices.Clone(outer), func(o kafka.Record) bool { return string(o.Value) == string(last.Value) })
	r := check(true, outerCheck, dropped)
	require.Equal(t, 1, r.lost, r.problems)
	require.True(t, strings.Contains(r.problems[0], "in no outer join output"), r.problems)
	dropped = slices.DeleteFunc(slices.Clone(outer), func(o kafka.Record) bool {
		even, odd, _ := parseOuterValue(string(o.Value))
		return (even == 0 || odd == 0) && !isEndOfRun(string(o.Key))
	})
	require.Equal(t, len(lone), check(false, outerCheck, dropped).lost)
}

// regionsWithout returns region 1's total over the accounts of seed 5's
// 20,000 inputs alone.
func regionsWithout(t *testing.T) RegionTotal {
	e, err := newExpectation(Generate(5, 20_000), nil)
	require.NoError(t, err)
	return e.branch.regions[1]
}
