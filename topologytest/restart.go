package topologytest

import (
	"errors"
	"fmt"

	"github.com/weirstream/weir/processor"
)

// Restart closes d and returns a new driver for the same topology and
// Config, as if the application had stopped after the last record piped
// and started again: each logged store (statestore.Spec.Logged) is
// restored from the changelog records d wrote, and each global table's
// store from the records piped into its topic, before anything else runs.
//
// What Kafka keeps carries over: every topic's records (so Topic still
// returns what d wrote, and a later Restart restores from the whole
// changelog), the input offsets and the read positions of output topics
// (records already read stay read). The wall clock goes on from d's.
// What a task keeps in memory starts again, as in a restarted
// application: the stream time of processors that keep it outside stores
// (suppression) and the counters; a store that is
// not logged starts empty. Readers and writers made with Input and Output
// belong to d; make new ones on the new driver.
func (d *Driver) Restart() (*Driver, error) {
	if d.closed {
		return nil, errors.New("topologytest: restart of a closed driver")
	}
	if err := d.Close(); err != nil {
		return nil, err
	}
	cfg := d.cfg
	cfg.WallClock = d.wall
	return open(d.graph, cfg, d)
}

// restoreFrom takes over prev's topics and positions and restores the
// new driver's stores from them. It runs before the tasks are created:
// the stores it opens from the factory are the ones the tasks then get.
func (d *Driver) restoreFrom(prev *Driver) error {
	for topic, recs := range prev.topics {
		d.topics[topic] = append([]processor.Output(nil), recs...)
	}
	for topic, n := range prev.read {
		d.read[topic] = n
	}
	for topic, off := range prev.offsets {
		d.offsets[topic] = off
	}
	for topic, recs := range prev.glog {
		d.glog[topic] = append([]processor.RawRecord(nil), recs...)
		g, ok := d.globals[topic]
		if !ok {
			continue
		}
		// Records ApplyGlobal refused when they were piped are refused
		// again: the store ends as it was.
		for _, rec := range recs {
			_, _ = g.def.ApplyGlobal(g.store, rec)
		}
	}
	for _, st := range d.graph.Subtopologies {
		for _, spec := range st.Stores {
			if !spec.Logged {
				continue
			}
			s, err := d.stores.Open(spec, 0)
			if err != nil {
				return fmt.Errorf("topologytest: restore %q: %w", spec.Name, err)
			}
			topic := processor.ChangelogTopic(spec.Name).Resolve(d.cfg.ApplicationID)
			for _, c := range d.topics[topic] {
				if err := processor.Restore(s, c.Key, c.Value); err != nil {
					return fmt.Errorf("topologytest: restore %q: %w", spec.Name, err)
				}
			}
		}
	}
	return nil
}
