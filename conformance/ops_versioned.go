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
}

// versionedTable returns the string table of topic, versioned with the
// script's history retention, in store.
func (c *opBuild) versionedTable(topic, store string) topology.Table[string, string] {
	str := serde.String()
	return topology.NewTable(c.b, c.name(topic), str, str,
		topology.Materialized(c.name(store)), topology.Versioned(ms(c.s.History)))
}

func buildVersionedTable(c *opBuild) {
	c.count = false
	c.versionedTable("in", "table-store").ToStream().To(c.name("out"))
}

func buildVersionedJoin(c *opBuild) {
	c.count = false
	left := c.input("left")
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
