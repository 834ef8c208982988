package conformance

import (
	"strings"

	"github.com/weirstream/weir/topology"
)

// The foreign-key table–table joins: table "left", whose values name the
// foreign key before a colon ("x:payload" → "x"), joined with table
// "right"; versioned tables with the script's "history".
func init() {
	register(buildFKJoin, "fk-join", "fk-join-left")
}

// foreignKey is the scripts' foreign-key extractor: the value up to its
// first colon (all of it when there is none).
func foreignKey(_, v string) string {
	fk, _, _ := strings.Cut(v, ":")
	return fk
}

func buildFKJoin(c *opBuild) {
	c.count = false
	var left, right topology.Table[string, string]
	if c.s.History != 0 { // versioned tables
		left, right = c.versionedTable("left", "left-store"), c.versionedTable("right", "right-store")
	} else {
		left, right = c.table("left", "left-store"), c.table("right", "right-store")
	}
	var opts []topology.Option
	if c.s.Materialize {
		opts = append(opts, topology.Materialized(c.name("fk-join-store")))
	}
	var joined topology.Table[string, string]
	if c.s.Op == "fk-join" {
		joined = topology.JoinTablesOnForeignKey(left, right, foreignKey,
			func(v, vo string) string { return v + "+" + vo }, opts...)
	} else {
		joined = topology.LeftJoinTablesOnForeignKey(left, right, foreignKey,
			func(v, vo string, found bool) string {
				if !found {
					vo = "null"
				}
				return v + "+" + vo
			}, opts...)
	}
	joined.ToStream().To(c.name("out"))
}
