package conformance

import "github.com/weirstream/weir/topology"

// The left and outer stream–stream joins.
func init() {
	register(buildStreamStreamOuter, "stream-stream-left", "stream-stream-outer")
}

// buildStreamStreamOuter joins streams "left" and "right" as
// stream-stream does, keeping unmatched records of the left side
// (stream-stream-left) or of both (stream-stream-outer); a missing side
// prints as Java prints a null string, "null".
func buildStreamStreamOuter(c *opBuild) {
	s := c.s
	c.count = false
	jw := topology.JoinTimeDifference(ms(s.Before)).WithGrace(ms(s.Grace))
	if s.After != nil {
		jw = jw.WithAfter(ms(*s.After))
	}
	orNull := func(v string, ok bool) string {
		if !ok {
			return "null"
		}
		return v
	}
	left, right := c.input("left"), c.input("right")
	if s.Op == "stream-stream-left" {
		topology.LeftJoinStreams(left, right, func(_, v1, v2 string, found bool) string {
			return v1 + "+" + orNull(v2, found)
		}, jw).To(c.name("out"))
		return
	}
	topology.OuterJoinStreams(left, right, func(_, v1, v2 string, ok1, ok2 bool) string {
		return orNull(v1, ok1) + "+" + orNull(v2, ok2)
	}, jw).To(c.name("out"))
}
