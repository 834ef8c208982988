package conformance

import (
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
)

// Versioned tables and the stream–table joins against them, as of the
// stream record's time and with a grace period.
func init() {
	register(buildVersionedTable, "versioned-table")
	register(buildVersionedJoin, "stream-table-versioned", "stream-table-grace")
	register(buildVersionedTableTable, "table-table-versioned", "table-table-versioned-left", "table-table-versioned-outer")
}

// buildVersionedTableTable joins two versioned tables: inner, left or
// outer by the op.
func buildVersionedTableTable(c *opBuild) {
	c.count = false
	left := c.versionedTable("left", "left-store")
	right := c.versionedTable("right", "right-store")
	var out topology.Table[string, string]
	switch c.s.Op {
	case "table-table-versioned":
		out = topology.JoinTables(left, right, func(_, v1, v2 string) string { return v1 + "+" + v2 })
	case "table-table-versioned-left":
		out = topology.LeftJoinTables(left, right, func(_, v1, v2 string, found bool) string {
			return v1 + "+" + orNull(v2, found)
		})
	default:
		out = topology.OuterJoinTables(left, right, func(_, v1 string, found1 bool, v2 string, found2 bool) string {
			return orNull(v1, found1) + "+" + orNull(v2, found2)
		})
	}
	out.ToStream().To(c.name("out"))
}

// versionedTable returns the string table of topic, versioned with the
// script's history retention, in store.
func (c *opBuild) versionedTable(topic, store string) topology.Table[string, string] {
	str := serde.String()
	return topology.NewTable(c.b, c.name(topic), str, str,
		topology.Materialized(c.name(store)), topology.Versioned(ms(c.s.History)))
}

// buildVersionedTable reads the versioned table and writes its updates;
// with "filter", through a Filter that drops that value (materialized in
// a store of its own with "materialize").
func buildVersionedTable(c *opBuild) {
	c.count = false
	t := c.versionedTable("in", "table-store")
	if c.s.Filter != nil {
		drop := *c.s.Filter
		var opts []topology.Option
		if c.s.Materialize {
			opts = append(opts, topology.Materialized(c.name("filtered")))
		}
		t = t.Filter(func(_, v string) bool { return v != drop }, opts...)
	}
	t.ToStream().To(c.name("out"))
}

func buildVersionedJoin(c *opBuild) {
	c.count = false
	left := c.input("left")
	if c.s.Rekey {
		left = topology.SelectKey(left, firstChar)
	}
	right := c.versionedTable("right", "right-store")
	var opts []topology.Option
	if c.s.Op == "stream-table-grace" {
		opts = append(opts, topology.WithGrace(ms(c.s.Grace)))
	}
	if !c.s.Left {
		topology.Join(left, right, func(_, v, vt string) string { return v + "+" + vt }, opts...).To(c.name("out"))
		return
	}
	topology.LeftJoin(left, right, func(_, v, vt string, found bool) string {
		if !found {
			vt = "null"
		}
		return v + "+" + vt
	}, opts...).To(c.name("out"))
}
