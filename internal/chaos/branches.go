package chaos

import (
	"strconv"
	"strings"
	"time"

	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
)

// The extended workload's table branches re-group the running aggregate
// table (store "agg") by a region that moves as the account grows, and
// join it to a small regions table by that region as a foreign key; its
// last stream branch outer-joins the even-id inputs with the odd-id ones
// under a grace short enough that windows close during the run.

// Regions is the number of regions; an account's region is RegionOf its
// running aggregate, so every good input moves it to the next one.
const Regions = 4

// regionNames are the names the regions table gives the regions.
var regionNames = [Regions]string{"north", "east", "south", "west"}

// RegionOf is the region ("region-<Count mod Regions>") of an account whose
// running aggregate is a: the re-grouping's key and the foreign-key join's
// foreign key.
func RegionOf(a Agg) string { return RegionKey(int(a.Count % Regions)) }

// RegionKey is region i's key in the regions table and the region totals.
func RegionKey(i int) string { return "region-" + strconv.Itoa(i) }

// RegionName is the name of region i in the regions table.
func RegionName(i int) string { return regionNames[i] }

// regionIndex returns the i of RegionKey(i), false for any other string.
func regionIndex(key string) (int, bool) {
	s, ok := strings.CutPrefix(key, "region-")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(s)
	if err != nil || i < 0 || i >= Regions || RegionKey(i) != key {
		return 0, false
	}
	return i, true
}

// RegionTotal is the re-grouping's aggregate of one region: the accounts
// in it now and the sum of their aggregates' Sum.
type RegionTotal struct {
	Accounts int64 `json:"accounts"`
	Sum      int64 `json:"sum"`
}

// addAccount and subtractAccount are the region aggregate's adder and
// subtractor: an account entering the region and one leaving it.
func addAccount(_ string, a Agg, t RegionTotal) RegionTotal {
	return RegionTotal{Accounts: t.Accounts + 1, Sum: t.Sum + a.Sum}
}

func subtractAccount(_ string, a Agg, t RegionTotal) RegionTotal {
	return RegionTotal{Accounts: t.Accounts - 1, Sum: t.Sum - a.Sum}
}

// AccountRegion is the foreign-key join's value for an account: the name
// of its region and the aggregate's Count that put it there.
type AccountRegion struct {
	Region string `json:"region"`
	Count  int64  `json:"count"`
}

// OuterGrace is the outer join's grace: an unmatched record waits until
// stream time passes its timestamp + JoinWithin + OuterGrace, then is
// emitted alone; with inputs stamped 1 ms apart, windows close all through
// the run.
const OuterGrace = 2 * time.Second

// OuterValue is the outer join's output value for the even-id input even
// and the odd-id input odd of one account; 0 stands for a missing side
// (ids start at 1), written "-": "12:-" is input 12 unmatched.
func OuterValue(even, odd int64) string {
	side := func(id int64) string {
		if id == 0 {
			return "-"
		}
		return strconv.FormatInt(id, 10)
	}
	return side(even) + ":" + side(odd)
}

// parseOuterValue is OuterValue's inverse.
func parseOuterValue(s string) (even, odd int64, ok bool) {
	a, b, found := strings.Cut(s, ":")
	if !found {
		return 0, 0, false
	}
	side := func(x string) (int64, bool) {
		if x == "-" {
			return 0, true
		}
		id, err := strconv.ParseInt(x, 10, 64)
		return id, err == nil && id > 0
	}
	even, ok1 := side(a)
	odd, ok2 := side(b)
	return even, odd, ok1 && ok2 && (even != 0 || odd != 0)
}

// buildBranches adds the extended workload's re-grouping, foreign-key join
// and outer join (see Build) to b.
func buildBranches(b *topology.Builder, t Topics, aggs topology.Table[string, Agg], evens, odds topology.Stream[string, Txn]) {
	// Every good input moves its account to the next region: the old
	// aggregate leaves its region's total (subtractor), the new one
	// enters the next region's (adder).
	byRegion := topology.GroupTable(aggs, func(_ string, a Agg) (string, Agg, bool) { return RegionOf(a), a, true },
		topology.Named(Regroup))
	topology.AggregateTable(byRegion, func() RegionTotal { return RegionTotal{} }, addAccount, subtractAccount,
		serde.JSON[RegionTotal](), topology.Materialized(RegionStore)).
		ToStream().To(t.RegionTotals)
	names := topology.NewTable(b, t.Regions, serde.String(), serde.String(), topology.Materialized(RegionsTable))
	topology.JoinTablesOnForeignKey(aggs, names, func(_ string, a Agg) string { return RegionOf(a) },
		func(a Agg, name string) AccountRegion { return AccountRegion{Region: name, Count: a.Count} }, topology.Named(FKJoin)).
		WithValueSerde(serde.JSON[AccountRegion]()).
		ToStream().To(t.AccountRegions)
	topology.OuterJoinStreams(evens, odds, func(_ string, e, o Txn, _, _ bool) string { return OuterValue(e.ID, o.ID) },
		topology.JoinTimeDifference(JoinWithin).WithGrace(OuterGrace), topology.Named(OuterJoin)).
		WithSerdes(serde.String(), serde.String()).To(t.Outer)
}
