package conformance

import "github.com/weirstream/weir/topology"

// A stream read as a table.
func init() {
	register(buildToTable, "to-table")
}

func buildToTable(c *opBuild) {
	c.count = false
	in := c.input("in")
	if c.s.Rekey {
		in = topology.SelectKey(in, firstChar)
	}
	var opts []topology.Option
	if c.s.Materialize {
		opts = append(opts, topology.Materialized(c.name("table-store")))
	}
	in.ToTable(opts...).ToStream().To(c.name("out"))
}
