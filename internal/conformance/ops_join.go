package conformance

import "github.com/weirstream/weir/topology"

// The joins: stream–table, table–table and stream–stream.
func init() {
	register(buildStreamTable, "stream-table", "stream-table-left")
	register(buildTableTable, "table-table", "table-table-left", "table-table-outer")
	register(buildStreamStream, "stream-stream")
}

func buildStreamTable(c *opBuild) {
	c.count = false
	left := c.input("left")
	if c.s.Rekey {
		left = topology.SelectKey(left, firstChar)
	}
	right := c.table("right", "right-store")
	if c.s.Op == "stream-table" {
		topology.Join(left, right, func(_, v, vt string) string { return v + "+" + vt }).To(c.name("out"))
		return
	}
	topology.LeftJoin(left, right, func(_, v, vt string, found bool) string {
		if !found {
			vt = "null"
		}
		return v + "+" + vt
	}).To(c.name("out"))
}

func buildTableTable(c *opBuild) {
	c.count = false
	left := c.table("left", "left-store")
	right := c.table("right", "right-store")
	var opts []topology.Option
	if c.s.Materialize {
		opts = append(opts, topology.Materialized(c.name("join-store")))
	}
	var out topology.Table[string, string]
	switch c.s.Op {
	case "table-table":
		out = topology.JoinTables(left, right, func(_, v1, v2 string) string { return v1 + "+" + v2 }, opts...)
	case "table-table-left":
		out = topology.LeftJoinTables(left, right, func(_, v1, v2 string, found bool) string {
			return v1 + "+" + orNull(v2, found)
		}, opts...)
	default:
		out = topology.OuterJoinTables(left, right, func(_, v1 string, found1 bool, v2 string, found2 bool) string {
			return orNull(v1, found1) + "+" + orNull(v2, found2)
		}, opts...)
	}
	out.ToStream().To(c.name("out"))
}

// orNull prints a joiner's missing value as Java's string concatenation
// prints null.
func orNull(v string, found bool) string {
	if !found {
		return "null"
	}
	return v
}

func buildStreamStream(c *opBuild) {
	s := c.s
	c.count = false
	jw := topology.JoinTimeDifference(ms(s.Before)).WithGrace(ms(s.Grace))
	if s.After != nil {
		jw = jw.WithAfter(ms(*s.After))
	}
	topology.JoinStreams(c.input("left"), c.input("right"), func(_, v1, v2 string) string { return v1 + "+" + v2 }, jw).To(c.name("out"))
}
