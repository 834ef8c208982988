package conformance

import "github.com/weirstream/weir/topology"

// Suppress: the table of "in" — or, with "size", the tumbling-window count
// of "in" by key, with "gap" the session count — suppressed until "limit"
// ms passed ("final": "suppress": until the window closes), in a buffer of
// at most "maxRecords" records and "maxBytes" bytes that emits early when
// full.
func init() {
	register(buildSuppress, "suppress")
}

func buildSuppress(c *opBuild) {
	s := c.s
	buf := topology.Unbounded()
	switch {
	case s.MaxRecords > 0 && s.MaxBytes > 0:
		buf = topology.BufferMaxRecords(s.MaxRecords).WithMaxBytes(s.MaxBytes)
	case s.MaxRecords > 0:
		buf = topology.BufferMaxRecords(s.MaxRecords)
	case s.MaxBytes > 0:
		buf = topology.BufferMaxBytes(s.MaxBytes)
	}
	sup := topology.UntilTimeLimit(ms(s.Limit), buf)
	if s.Final == "suppress" {
		sup = topology.UntilWindowCloses(buf)
	}
	store := topology.Materialized(c.name("sup"))
	switch {
	case s.Gap > 0:
		c.windowed = true
		sw := topology.SessionWindowsWithGap(ms(s.Gap)).WithGrace(ms(s.Grace))
		topology.SessionWindowedBy(c.grouped(c.input("in")), sw).Count(topology.Materialized(c.name("sess"))).
			Suppress(sup, store).ToStream().To(c.name("out"))
	case s.Size > 0:
		c.windowed = true
		w := topology.TumblingWindows(ms(s.Size)).WithGrace(ms(s.Grace))
		topology.WindowedBy(c.grouped(c.input("in")), w).Count(topology.Materialized(c.name("win"))).
			Suppress(sup, store).ToStream().To(c.name("out"))
	default:
		c.count = false
		c.table("in", "in-store").Suppress(sup, store).ToStream().To(c.name("out"))
	}
}
