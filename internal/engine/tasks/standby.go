package tasks

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/statestore"
	"github.com/weirstream/weir/statestore/badgerstore"
)

// Standby and warm-up replicas. The group's leader places them
// (internal/kafka/plan_standby.go): Config.StandbyReplicas copies of each
// stateful task on instances other than its owner, and warm-ups — a task
// the plan would move to an instance not caught up on it stays with its
// owner while that instance restores it. Each assignment names this
// instance's replicas (replicasAssigned); it keeps their Badger rows up
// to date with their changelogs, polling every StandbyInterval. When a
// task moves here — a rebalance, another instance's crash — its restore
// starts from that recent checkpoint and replays only the tail. Only
// committed changelog records are applied under exactly-once, as for a
// restore.
//
// The steps, each naming its function:
//
//  1. join: the member reports its lag of each task whose state it holds
//     (taskLags: 0 for tasks it runs or has just released, the last
//     measured lag for its replicas);
//  2. assignment: replicasAssigned records the member's standbys and
//     warm-ups;
//  3. every StandbyInterval, runStandbys catches each of them up and
//     measures its lag before doing so (the lag metric);
//  4. probe: once every warm-up's lag is at most Config's acceptable
//     recovery lag — or the probing interval has passed — maybeProbe asks
//     the group to rejoin; the leader's next plan moves the caught-up
//     tasks here.
//
// A store partition is either active here (a task runs on it: the task and
// its commits own its rows) or followed, never both at once: Acquire marks
// its partitions active and waits for a catch-up in progress on them.

// StandbyInterval is how often standbys catch up with the changelogs.
const StandbyInterval = time.Second

// Defaults of the warm-up settings (Kafka Streams' own).
const (
	// DefaultProbingInterval is probing.rebalance.interval.ms' default.
	DefaultProbingInterval = 10 * time.Minute
	// MinProbingInterval is the shortest probing interval allowed.
	MinProbingInterval = time.Second
)

type standbys struct {
	mu        sync.Mutex
	cond      *sync.Cond
	active    map[badgerstore.StorePartition]int // tasks holding it
	following map[badgerstore.StorePartition]bool
	// replicas are the store partitions this instance follows, by the
	// last assignment: true for a warm-up, false for a standby.
	replicas map[badgerstore.StorePartition]bool
	// lags is each replica's lag when its last catch-up began; released
	// holds the partitions of tasks released since the last assignment
	// (caught up when released), reported once at the next join.
	lags     map[badgerstore.StorePartition]int64
	released map[badgerstore.StorePartition]bool
	// warmupSince is when the current warm-ups were assigned; probed is
	// set once the probe for them was sent.
	warmupSince time.Time
	probed      bool
	// probe delivers the member's request to rejoin (kafka.ReplicaConfig).
	probe chan struct{}
	// queries counts the interactive queries that the active, restoring
	// and standby copies served or could not (query.go).
	queries queryCounts
}

func newStandbys() *standbys {
	s := &standbys{
		active: map[badgerstore.StorePartition]int{}, following: map[badgerstore.StorePartition]bool{},
		replicas: map[badgerstore.StorePartition]bool{}, lags: map[badgerstore.StorePartition]int64{},
		released: map[badgerstore.StorePartition]bool{}, probe: make(chan struct{}, 1),
	}
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
		delete(s.released, sp)
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
			s.released[sp] = true
		}
	}
}

// follow marks sp as being caught up with, unless it is active or no
// longer a replica here.
func (s *standbys) follow(sp badgerstore.StorePartition) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.replicas[sp]; !ok || s.active[sp] > 0 {
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

// measured records sp's lag when a catch-up began.
func (s *standbys) measured(sp badgerstore.StorePartition, lag int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.replicas[sp]; ok {
		s.lags[sp] = lag
	}
}

// replicaStores returns the logged store partitions of a task.
func (r *Runtime) replicaStores(id kafka.TaskID) []badgerstore.StorePartition {
	plan := r.plan.Load()
	if plan == nil {
		return nil
	}
	sub, ok := plan.Subtopology[id.Topic]
	if !ok || sub >= len(r.cfg.Graph.Subtopologies) {
		return nil
	}
	var out []badgerstore.StorePartition
	for _, spec := range r.cfg.Graph.Subtopologies[sub].Stores {
		if spec.Logged {
			out = append(out, badgerstore.StorePartition{Store: spec.Name, Partition: id.Partition})
		}
	}
	return out
}

// replicasAssigned records the replicas of an assignment (step 2).
func (r *Runtime) replicasAssigned(standby, warmup []kafka.TaskID) {
	replicas := map[badgerstore.StorePartition]bool{}
	for _, id := range standby {
		for _, sp := range r.replicaStores(id) {
			replicas[sp] = false
		}
	}
	for _, id := range warmup {
		for _, sp := range r.replicaStores(id) {
			replicas[sp] = true
		}
	}
	s := r.standby
	s.mu.Lock()
	defer s.mu.Unlock()
	for sp := range s.lags {
		_, was := s.replicas[sp]
		if _, is := replicas[sp]; !is || !was {
			delete(s.lags, sp) // a new replica's lag counts from its assignment on
		}
	}
	s.replicas = replicas
	clear(s.released)
	s.warmupSince, s.probed = time.Time{}, false
	if len(warmup) > 0 {
		s.warmupSince = r.cfg.Clock()
		r.log.Info("weir: warm-up replicas assigned; their tasks move here once caught up", "warmups", len(warmup), "standbys", len(standby))
	}
}

// taskLags returns the member's lag of each stateful task whose state it
// holds (step 1): 0 for a task it runs or released since the last
// assignment, the sum of its stores' lags for a replica measured since.
func (r *Runtime) taskLags() map[kafka.TaskID]int64 {
	s := r.standby
	s.mu.Lock()
	defer s.mu.Unlock()
	return r.sumPerTask(func(sp badgerstore.StorePartition) (n int64, counted, known bool) {
		if s.active[sp] > 0 || s.released[sp] {
			return 0, true, true
		}
		lag, ok := s.lags[sp]
		return lag, true, ok
	})
}

// taskSizes returns the size of each stateful task this member runs: the
// sum of its logged stores' changelog positions in Badger, what a member
// holding none of its state would restore (Kafka Streams' end offset
// sums). A task whose stores have no position yet (restoring) is left out.
func (r *Runtime) taskSizes() map[kafka.TaskID]int64 {
	if r.db == nil {
		return nil
	}
	s := r.standby
	s.mu.Lock()
	defer s.mu.Unlock()
	return r.sumPerTask(func(sp badgerstore.StorePartition) (n int64, counted, known bool) {
		if s.active[sp] == 0 {
			return 0, false, true
		}
		pos, ok, err := r.db.Checkpoint(sp.Store, sp.Partition)
		return pos.Offset, true, ok && err == nil
	})
}

// sumPerTask sums count over the logged store partitions of each stateful
// task of the plan, by task. A task is in the result when count counted at
// least one of its store partitions and knew every one it counted.
func (r *Runtime) sumPerTask(count func(sp badgerstore.StorePartition) (n int64, counted, known bool)) map[kafka.TaskID]int64 {
	plan := r.plan.Load()
	if plan == nil {
		return nil
	}
	out := map[kafka.TaskID]int64{}
	for sub, st := range r.cfg.Graph.Subtopologies {
		if sub >= len(plan.Sources) || len(plan.Sources[sub]) == 0 {
			continue
		}
		topic := slices.Min(plan.Sources[sub])
		for p := int32(0); p < plan.Partitions[sub]; p++ {
			var sum int64
			allKnown, any := true, false
			for _, spec := range st.Stores {
				if !spec.Logged {
					continue
				}
				n, counted, known := count(badgerstore.StorePartition{Store: spec.Name, Partition: p})
				if !counted {
					continue
				}
				any, allKnown, sum = true, allKnown && known, sum+n
			}
			if any && allKnown {
				out[kafka.TaskID{Topic: topic, Partition: p}] = sum
			}
		}
	}
	return out
}

// ReplicaLag is the lag of one store partition this instance keeps as a
// standby or warm-up replica.
type ReplicaLag struct {
	Store     string
	Partition int32
	// Warmup tells a warm-up from a standby.
	Warmup bool
	// Lag is the changelog records the replica was behind when its last
	// catch-up began (every StandbyInterval).
	Lag int64
}

// ReplicaLags returns the lag of every replica measured since the last
// assignment, sorted by store and partition.
func (r *Runtime) ReplicaLags() []ReplicaLag {
	s := r.standby
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]ReplicaLag, 0, len(s.lags))
	for sp, lag := range s.lags {
		if warm, ok := s.replicas[sp]; ok {
			out = append(out, ReplicaLag{Store: sp.Store, Partition: sp.Partition, Warmup: warm, Lag: lag})
		}
	}
	slices.SortFunc(out, func(a, b ReplicaLag) int {
		return cmp.Or(cmp.Compare(a.Store, b.Store), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}

// maybeProbe asks the group for the probing rebalance (step 4) once every
// warm-up is caught up or the probing interval has passed, once per
// assignment.
func (r *Runtime) maybeProbe() {
	s := r.standby
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.warmupSince.IsZero() || s.probed {
		return
	}
	ready := true
	for sp, warm := range s.replicas {
		if lag, ok := s.lags[sp]; warm && (!ok || lag > r.acceptableLag()) {
			ready = false
		}
	}
	waited := r.cfg.Clock().Sub(s.warmupSince)
	if !ready && waited < r.probingInterval() {
		return
	}
	s.probed = true
	r.log.Info("weir: probing rebalance: warm-ups caught up or probing interval passed", "caught_up", ready, "waited", waited)
	select {
	case s.probe <- struct{}{}:
	default:
	}
}

func (r *Runtime) acceptableLag() int64 {
	if r.cfg.AcceptableRecoveryLag > 0 {
		return r.cfg.AcceptableRecoveryLag
	}
	return kafka.DefaultAcceptableRecoveryLag
}

func (r *Runtime) probingInterval() time.Duration {
	return max(cmp.Or(r.cfg.ProbingInterval, DefaultProbingInterval), MinProbingInterval)
}

// replicaConfig is the group's replica configuration for the plan.
func (r *Runtime) replicaConfig() kafka.ReplicaConfig {
	rc := kafka.ReplicaConfig{
		Standbys: r.cfg.StandbyReplicas, MaxWarmups: r.cfg.MaxWarmupReplicas, AcceptableLag: r.acceptableLag(),
		Lags: r.taskLags, Sizes: r.taskSizes, OnAssigned: r.replicasAssigned, Probe: r.standby.probe,
		Departures: r.departures(),
	}
	if rc.MaxWarmups == 0 {
		rc.MaxWarmups = kafka.DefaultMaxWarmupReplicas
	}
	rc.MaxWarmups = max(rc.MaxWarmups, 0) // negative: off
	for sub, st := range r.cfg.Graph.Subtopologies {
		if slices.ContainsFunc(st.Stores, func(spec statestore.Spec) bool { return spec.Logged }) && sub < len(r.plan.Load().Sources) {
			rc.StatefulTopics = append(rc.StatefulTopics, r.plan.Load().Sources[sub]...)
		}
	}
	return rc
}

// runStandbys catches up with every replica assigned here (step 3), every
// StandbyInterval, until ctx ends. Errors are reported and retried.
func (r *Runtime) runStandbys(ctx context.Context) {
	every(ctx, StandbyInterval, func() bool {
		partitions := r.plan.Load().Partitions
		for sub, st := range r.cfg.Graph.Subtopologies {
			for _, spec := range st.Stores {
				if !spec.Logged {
					continue
				}
				for p := int32(0); p < partitions[sub]; p++ {
					if ctx.Err() != nil {
						return false
					}
					sp := badgerstore.StorePartition{Store: spec.Name, Partition: p}
					if !r.standby.follow(sp) {
						continue
					}
					c, err := r.catchUp(ctx, spec, p, false)
					r.standby.done(sp)
					if err != nil && ctx.Err() == nil {
						r.log.Warn("weir: standby catch-up failed; retrying", "store", spec.Name, "partition", p, "err", err)
						continue
					}
					if err == nil {
						r.standby.measured(sp, c.lag)
					}
					if c.applied > 0 || c.skipped > 0 {
						r.log.Debug("weir: standby caught up", "store", spec.Name, "partition", p, "records", c.applied, "skipped_stale", c.skipped)
					}
				}
			}
		}
		r.maybeProbe()
		return true
	})
}
