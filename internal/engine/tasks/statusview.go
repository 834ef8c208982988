package tasks

import (
	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/statestore/badgerstore"
)

// TaskCounters sums the counters of the tasks this instance runs now
// (processor.MetricDroppedLate and the others processors keep). A task's
// counts leave with it when it closes or moves to another instance, so the
// sums can go down: a reader treats that as a counter reset.
func (r *Runtime) TaskCounters() map[string]int64 {
	sums := map[string]int64{}
	_ = r.tasks.Each(func(t *processor.Task) error {
		for name, n := range t.Counters() {
			sums[name] += n
		}
		return nil
	})
	return sums
}

// StoreSizes returns the rows of every store partition this instance holds
// in Badger (active, standby or left from an earlier assignment) and the
// bytes the whole database holds on disk; nothing for a topology without
// persistent stores. It counts every key: call it for reports, not often.
func (r *Runtime) StoreSizes() ([]badgerstore.StoreStats, int64, error) {
	if r.db == nil {
		return nil, 0, nil
	}
	stats, err := r.db.Stats()
	if err != nil {
		return nil, 0, err
	}
	lsm, vlog := r.db.Size()
	return stats, lsm + vlog, nil
}
