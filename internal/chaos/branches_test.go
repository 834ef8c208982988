package chaos

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/kafka"
)

// The extended workload builds: every branch's serdes and stores given.
func TestBuildExtended(t *testing.T) {
	_, err := Build(Topics{In: "in", Copy: "copy", Agg: "agg", Win: "win", Pairs: "pairs", Sessions: "sessions",
		Regions: "regions", RegionTotals: "region-totals", AccountRegions: "account-regions", Outer: "outer"})
	require.NoError(t, err)
}

func TestOuterValue(t *testing.T) {
	for _, c := range []struct {
		even, odd int64
		s         string
	}{{12, 13, "12:13"}, {12, 0, "12:-"}, {0, 13, "-:13"}} {
		require.Equal(t, c.s, OuterValue(c.even, c.odd))
		e, o, ok := parseOuterValue(c.s)
		require.True(t, ok)
		require.Equal(t, [2]int64{c.even, c.odd}, [2]int64{e, o})
	}
	for _, s := range []string{"-:-", "12", "x:1", "0:1", ""} {
		_, _, ok := parseOuterValue(s)
		require.False(t, ok, s)
	}
	i, ok := regionIndex(RegionKey(3))
	require.True(t, ok)
	require.Equal(t, 3, i)
	for _, s := range []string{"region-4", "region-01", "region-", "acct-0001"} {
		_, ok := regionIndex(s)
		require.False(t, ok, s)
	}
}

func rec(key string, value any) kafka.Record {
	var b []byte
	switch v := value.(type) {
	case nil:
	case string:
		b = []byte(v)
	default:
		b, _ = json.Marshal(v)
	}
	return kafka.Record{Key: []byte(key), Value: b}
}

// branchOutputs returns what a correct run writes to the three branches'
// topics: each region's total after each account's last move, each
// account's region at every count, and the outer join of an in-order run
// (every pair once, every other good input once alone).
func branchOutputs(e *expectation) (totals, regions, outer []kafka.Record) {
	for i, want := range e.branch.regions {
		totals = append(totals, rec(RegionKey(i), RegionTotal{Accounts: want.Accounts + 1, Sum: want.Sum}), rec(RegionKey(i), want))
	}
	for _, key := range slices.Sorted(maps.Keys(e.folds)) {
		for _, f := range e.folds[key] {
			regions = append(regions, rec(key, AccountRegion{Region: RegionName(int(f.Count % Regions)), Count: f.Count}))
		}
	}
	paired := map[int64]bool{}
	for _, pair := range slices.Sorted(maps.Keys(e.pairs)) {
		outer = append(outer, rec(e.pairs[pair], pair))
		even, odd, _ := parseOuterValue(pair)
		paired[even], paired[odd] = true, true
	}
	for _, in := range e.inputs {
		if in.Kind == Good && !paired[in.ID] {
			if in.ID%2 == 0 {
				outer = append(outer, rec(in.Key, OuterValue(in.ID, 0)))
			} else {
				outer = append(outer, rec(in.Key, OuterValue(0, in.ID)))
			}
		}
	}
	return totals, regions, outer
}

// The checks pass a correct run's outputs and find each kind of wrong one.
func TestBranchChecks(t *testing.T) {
	e, err := newExpectation(Generate(5, 20_000), nil)
	require.NoError(t, err)
	totals, regions, outer := branchOutputs(e)
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

	// Region totals: a last total off by one account is pending under
	// exactly-once, not checked under at-least-once; a negative count is
	// a mismatch.
	wrong := append(slices.Clone(totals), rec(RegionKey(2), RegionTotal{Accounts: e.branch.regions[2].Accounts + 1, Sum: e.branch.regions[2].Sum}))
	require.Equal(t, 1, check(true, totalsCheck, wrong).pending)
	require.Equal(t, report{}, check(false, totalsCheck, wrong))
	require.Equal(t, 1, check(true, totalsCheck, append(slices.Clone(totals[:1]), rec(RegionKey(0), RegionTotal{Accounts: -1}))).mismatches)

	// Account regions: a region the account did not have at that count
	// is a mismatch; a last result short of the final fold, or a delete
	// last, is pending.
	first := string(regions[0].Key)
	bad := append(slices.Clone(regions), rec(first, AccountRegion{Region: RegionName(0), Count: 1}))
	r := check(true, regionsCheck, bad)
	require.Equal(t, 1, r.mismatches, r.problems)
	require.Equal(t, 1, r.pending, r.problems) // the bad one is now the last too
	r = check(false, regionsCheck, bad)
	require.Equal(t, 1, r.mismatches, r.problems)
	require.Zero(t, r.pending, r.problems) // the final one was written before
	require.Equal(t, 1, check(true, regionsCheck, regions[:len(regions)-1]).pending)
	require.Equal(t, 1, check(false, regionsCheck, regions[:len(regions)-1]).pending)
	require.Equal(t, 1, check(true, regionsCheck, append(slices.Clone(regions), rec(string(regions[len(regions)-1].Key), nil))).pending)
	// Under at-least-once a late duplicate of an earlier result (a
	// replaced member's) may follow the final one.
	late := append(slices.Clone(regions), regions[len(regions)-2])
	require.Equal(t, 1, check(true, regionsCheck, late).pending)
	require.Equal(t, report{}, check(false, regionsCheck, late))

	// Outer join: a pair out of the window, a pair of another account, a
	// lone input of the wrong side are mismatches; a pair or a lone record
	// twice is a duplicate; a lone record missing whose window closed is
	// lost, one still open is not.
	require.Equal(t, 1, check(true, outerCheck, append(slices.Clone(outer), rec(string(outer[0].Key), OuterValue(2, 2003)))).mismatches)
	require.Equal(t, 1, check(true, outerCheck, append(slices.Clone(outer), rec("acct-9999", string(outer[0].Value)))).mismatches)
	var lone kafka.Record
	for _, o := range outer {
		if strings.HasSuffix(string(o.Value), ":-") {
			lone = o
			break
		}
	}
	even, _, _ := parseOuterValue(string(lone.Value))
	require.Equal(t, 1, check(true, outerCheck, append(slices.Clone(outer), rec(string(lone.Key), OuterValue(0, even)))).mismatches)
	r = check(true, outerCheck, append(slices.Clone(outer), outer[0], lone))
	require.Equal(t, 2, r.duplicates)
	require.Len(t, r.problems, 2)
	require.Equal(t, 2, check(false, outerCheck, append(slices.Clone(outer), outer[0], lone)).duplicates)
	without := slices.DeleteFunc(slices.Clone(outer), func(o kafka.Record) bool { return string(o.Value) == string(lone.Value) })
	require.Equal(t, 1, check(true, outerCheck, without).lost)
	lastLone := outer[len(outer)-1] // the last good input unpaired: its window is open at the end
	require.Equal(t, 0, check(true, outerCheck, outer[:len(outer)-1]).lost, string(lastLone.Value))
}
