package conformance

import (
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
)

// The global-table joins: stream "left" joined to global table "right" by
// the value's first character (an empty value maps to no key, Kafka
// Streams' null mapped key).
func init() {
	register(buildGlobalJoin, "global-join", "global-join-left")
}

func buildGlobalJoin(c *opBuild) {
	c.count = false
	left := c.input("left")
	str := serde.String()
	right := topology.NewGlobalTable(c.b, c.name("right"), str, str, topology.Materialized(c.name("right-store")))
	mapper := func(_, v string) (string, bool) {
		if v == "" {
			return "", false
		}
		return v[:1], true
	}
	if c.s.Op == "global-join" {
		topology.JoinGlobal(left, right, mapper, func(_, v, vg string) string { return v + "+" + vg }).To(c.name("out"))
		return
	}
	topology.LeftJoinGlobal(left, right, mapper, func(_, v, vg string, found bool) string {
		if !found {
			vg = "null"
		}
		return v + "+" + vg
	}).To(c.name("out"))
}
