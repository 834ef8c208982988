package conformance

import (
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
)

// Cogroup: the streams "left" and "right", grouped by key ("rekey" re-keys
// "left" only), aggregated into one string per key by Cogroup — not
// windowed, or in time windows ("size", "advance"; "window": "sliding")
// or session windows ("gap"), with "grace".
func init() {
	register(buildCogroup, "cogroup")
}

// The cogroup's adders: "L:v;" for a left record, "R:v;" for a right one.
// Kafka Streams hands a time- or session-windowed adder a null value,
// which Java prints "null"; weir hands it "", which no script has.
func cogroupAdder(side string) func(_, v, agg string) string {
	return func(_, v, agg string) string {
		if v == "" {
			v = "null"
		}
		return agg + side + ":" + v + ";"
	}
}

func buildCogroup(c *opBuild) {
	s := c.s
	c.count = false
	str := serde.String()
	c.windowed = s.Size > 0 || s.Gap > 0
	cg := topology.Cogroup(c.grouped(c.input("left")), cogroupAdder("L"))
	cg = topology.CogroupWith(cg, c.input("right").GroupByKey(), cogroupAdder("R"))
	init := func() string { return "" }
	store := topology.Materialized(c.name("cog"))
	var t topology.Table[topology.Windowed[string], string]
	switch {
	case s.Gap > 0:
		sw := topology.SessionWindowsWithGap(ms(s.Gap)).WithGrace(ms(s.Grace))
		t = cg.SessionWindowedBy(sw).Aggregate(init, func(_, a, b string) string { return a + b }, str, store)
	case s.Size > 0:
		w := topology.TumblingWindows(ms(s.Size))
		switch {
		case s.Window == "sliding":
			w = topology.SlidingWindows(ms(s.Size))
		case s.Advance > 0:
			w = topology.HoppingWindows(ms(s.Size), ms(s.Advance))
		}
		t = cg.WindowedBy(w.WithGrace(ms(s.Grace))).Aggregate(init, str, store)
	default:
		cg.Aggregate(init, str, store).ToStream().To(c.name("out"))
		return
	}
	t.ToStream().To(c.name("out"))
}
