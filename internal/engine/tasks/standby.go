package tasks

import (
	"context"
	"sync"
	"time"

	"github.com/weirstream/weir/statestore/badgerstore"
)

// Standby replicas: with Config.Standbys, an instance keeps the Badger rows
// of every logged store partition it does not run up to date with its
// changelog, polling every StandbyInterval. When a task moves here — a
// rebalance, another instance's crash — its restore starts from that
// recent checkpoint and replays only the tail. Only committed changelog
// records are applied under exactly-once, as for a restore.
//
// A store partition is either active here (a task runs on it: the task and
// its commits own its rows) or followed, never both at once: Acquire marks
// its partitions active and waits for a catch-up in progress on them.

// StandbyInterval is how often standbys catch up with the changelogs.
const StandbyInterval = time.Second

type standbys struct {
	mu        sync.Mutex
	cond      *sync.Cond
	active    map[badgerstore.StorePartition]int // tasks holding it
	following map[badgerstore.StorePartition]bool
	// queries counts the interactive queries that the active, restoring
	// and standby copies served or could not (query.go).
	queries queryCounts
}

func newStandbys() *standbys {
	s := &standbys{active: map[badgerstore.StorePartition]int{}, following: map[badgerstore.StorePartition]bool{}}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// activate marks the partitions active and waits until no standby catch-up
// runs on them.
func (s *standbys) activate(sps []badgerstore.StorePartition) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sp := range sps {
		s.active[sp]++
	}
	for _, sp := range sps {
		for s.following[sp] {
			s.cond.Wait()
		}
	}
}

// deactivate hands the partitions back to the standbys.
func (s *standbys) deactivate(sps []badgerstore.StorePartition) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sp := range sps {
		if s.active[sp]--; s.active[sp] <= 0 {
			delete(s.active, sp)
		}
	}
}

// follow marks sp as being caught up with, unless it is active.
func (s *standbys) follow(sp badgerstore.StorePartition) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active[sp] > 0 {
		return false
	}
	s.following[sp] = true
	return true
}

func (s *standbys) done(sp badgerstore.StorePartition) {
	s.mu.Lock()
	delete(s.following, sp)
	s.cond.Broadcast()
	s.mu.Unlock()
}

// runStandbys catches up with every logged store partition not active here,
// every StandbyInterval, until ctx ends. Errors are reported and retried.
func (r *Runtime) runStandbys(ctx context.Context) {
	tick := time.NewTicker(StandbyInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		partitions := r.plan.Load().Partitions
		for sub, st := range r.cfg.Graph.Subtopologies {
			for _, spec := range st.Stores {
				if !spec.Logged {
					continue
				}
				for p := int32(0); p < partitions[sub]; p++ {
					if ctx.Err() != nil {
						return
					}
					sp := badgerstore.StorePartition{Store: spec.Name, Partition: p}
					if !r.standby.follow(sp) {
						continue
					}
					c, err := r.catchUp(ctx, spec, p, false)
					r.standby.done(sp)
					if err != nil && ctx.Err() == nil {
						r.log.Warn("weir: standby catch-up failed; retrying", "store", spec.Name, "partition", p, "err", err)
					} else if c.applied > 0 || c.skipped > 0 {
						r.log.Debug("weir: standby caught up", "store", spec.Name, "partition", p, "records", c.applied, "skipped_stale", c.skipped)
					}
				}
			}
		}
	}
}
