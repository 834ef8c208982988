package conformance

import "github.com/weirstream/weir/topology"

// The aggregations: by key, by time window and by session.
func init() {
	register(buildAggregate, "aggregate")
	register(buildWindowed, "tumbling", "hopping", "sliding")
	register(buildSession, "session")
}

func buildAggregate(c *opBuild) {
	g := c.grouped(c.input("in"))
	store := topology.Materialized(c.name("agg"))
	if c.count {
		g.Count(store).ToStream().To(c.name("out"))
	} else {
		g.Reduce(concat, store).ToStream().To(c.name("out"))
	}
}

func buildWindowed(c *opBuild) {
	s := c.s
	c.windowed = true
	var w topology.Windows
	switch s.Op {
	case "tumbling":
		w = topology.TumblingWindows(ms(s.Size))
	case "hopping":
		w = topology.HoppingWindows(ms(s.Size), ms(s.Advance))
	default:
		w = topology.SlidingWindows(ms(s.Size))
	}
	wg := topology.WindowedBy(c.grouped(c.input("in")), w.WithGrace(ms(s.Grace)))
	opts := []topology.Option{topology.Materialized(c.name("win"))}
	if s.Final != "" {
		opts = append(opts, topology.EmitFinal())
	}
	if c.count {
		wg.Count(opts...).ToStream().To(c.name("out"))
	} else {
		wg.Reduce(concat, opts...).ToStream().To(c.name("out"))
	}
}

func buildSession(c *opBuild) {
	s := c.s
	c.windowed = true
	sg := topology.SessionWindowedBy(c.grouped(c.input("in")), topology.SessionWindowsWithGap(ms(s.Gap)).WithGrace(ms(s.Grace)))
	store := topology.Materialized(c.name("sess"))
	if c.count {
		sg.Count(store).ToStream().To(c.name("out"))
	} else {
		sg.Reduce(concat, store).ToStream().To(c.name("out"))
	}
}
