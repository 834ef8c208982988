package conformance

import (
	"strings"

	"github.com/weirstream/weir/topology"
)

// The stateless operators and the table operators that keep the key.
func init() {
	register(buildStateless, "stateless")
	register(buildMerge, "merge")
	register(buildTableOp, "table-filter", "table-mapvalues")
}

func buildStateless(c *opBuild) {
	c.count = false
	words := topology.FlatMapValues(c.input("in"), func(v string) []string { return strings.Split(v, ",") })
	topology.MapValues(words, strings.ToUpper).To(c.name("out"))
}

func buildMerge(c *opBuild) {
	c.count = false
	c.input("left").Merge(c.input("right")).To(c.name("out"))
}

func buildTableOp(c *opBuild) {
	s := c.s
	c.count = false
	t := c.table("in", "in-store")
	if s.Op == "table-filter" {
		drop := ""
		if s.Filter != nil {
			drop = *s.Filter
		}
		var opts []topology.Option
		if s.Materialize {
			opts = append(opts, topology.Materialized(c.name("filtered")))
		}
		t = t.Filter(func(_, v string) bool { return v != drop }, opts...)
	} else {
		t = topology.MapTableValues(t, func(_, v string) string { return v + "!" })
	}
	t.ToStream().To(c.name("out"))
}
