package conformance

import (
	"strconv"
	"strings"

	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
)

// The aggregations of a table re-grouped by a new key.
func init() {
	register(buildTableGroupBy, "table-groupby")
}

// buildTableGroupBy re-groups table "in" by its value's first character
// (after a table Filter dropping the value "filter", when given) and
// counts, reduces or aggregates the groups ("agg": "count" | "reduce"
// | "aggregate"). A value starting with "-" maps to a null key, one
// starting with "_" to a null value. The reducer and the aggregator write
// "+v" for a value added and "-v" for a value subtracted; the aggregate
// starts from "0".
//
// With "gap", the table is instead the session count of stream "in"
// (gap and grace as given; store "sessions"), re-grouped by the user
// key's first character with the value "<key>:<count>".
func buildTableGroupBy(c *opBuild) {
	var g topology.GroupedTable[string, string]
	if c.s.Gap > 0 {
		sw := topology.SessionWindowsWithGap(ms(c.s.Gap)).WithGrace(ms(c.s.Grace))
		sessions := topology.SessionWindowedBy(c.input("in").GroupByKey(), sw).Count(topology.Materialized(c.name("sessions")))
		g = topology.GroupTable(sessions, func(w topology.Windowed[string], n int64) (string, string, bool) {
			return w.Key[:1], w.Key + ":" + strconv.FormatInt(n, 10), true
		}).WithKeySerde(serde.String()).WithValueSerde(serde.String())
	} else {
		t := c.table("in", "in-store")
		if c.s.Filter != nil {
			drop := *c.s.Filter
			t = t.Filter(func(_, v string) bool { return v != drop })
		}
		g = topology.GroupTable(t, byFirstChar)
	}
	store := topology.Materialized(c.name("agg"))
	add := func(agg, v string) string { return agg + "+" + v }
	sub := func(agg, v string) string { return agg + "-" + v }
	switch c.s.Agg {
	case "reduce":
		g.Reduce(add, sub, store).ToStream().To(c.name("out"))
	case "aggregate":
		topology.AggregateTable(g, func() string { return "0" },
			func(_, v, agg string) string { return add(agg, v) },
			func(_, v, agg string) string { return sub(agg, v) },
			serde.String(), store).ToStream().To(c.name("out"))
	default:
		g.Count(store).ToStream().To(c.name("out"))
	}
}

// byFirstChar is table-groupby's selector: the group is the value's first
// character; "-" is no key, "_" no value (Kafka Streams' nulls).
func byFirstChar(_, v string) (string, string, bool) {
	if v == "" || strings.HasPrefix(v, "-") || strings.HasPrefix(v, "_") {
		return "", "", false
	}
	return v[:1], v, true
}
