package weir

import (
	"time"

	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/kafka"
)

// replicaOptions are the standby and warm-up settings (docs/guide.md,
// "Standby replicas and warm-ups").
type replicaOptions struct {
	standbys      int
	maxWarmups    int
	maxWarmupsSet bool
	acceptableLag int64
	probing       time.Duration
}

// WithStandbyReplicas keeps n standby copies of each stateful task's
// stores on instances other than the one running it (Kafka Streams'
// num.standby.replicas; default 0). The group's leader places them: spread
// evenly, never two copies on one instance, kept where they are while that
// stays even. A standby keeps its copy caught up with the changelogs
// (every second), so when the task moves to it — a rebalance, its owner's
// crash — the restore replays only the last changes instead of the whole
// changelog, and interactive queries may read it (within a maxLag). With
// fewer other instances than n, each other instance holds one copy. It
// costs the reads of those changelogs and the disk for n more copies of
// every store. New rejects a negative n. weir_replica_lag reports each
// copy's lag.
func WithStandbyReplicas(n int) Option { return func(c *config) { c.replicas.standbys = n } }

// WithMaxWarmupReplicas bounds the warm-up replicas in the group at once
// (Kafka Streams' max.warmup.replicas; default 2). When a rebalance would
// move a stateful task to an instance that is not caught up on it (its lag
// above WithAcceptableRecoveryLag), the task stays with its current owner
// while the new instance restores it as a warm-up; once caught up, the
// instance asks for a rebalance (at the latest after
// WithProbingRebalanceInterval) that moves the task — so adding an
// instance never pauses a partition for a full restore. 0 turns warm-ups
// off: tasks move at once and restore on their new owner. New rejects a
// negative n.
func WithMaxWarmupReplicas(n int) Option {
	return func(c *config) { c.replicas.maxWarmups, c.replicas.maxWarmupsSet = n, true }
}

// WithAcceptableRecoveryLag is the changelog lag, in records, at or below
// which an instance counts as caught up on a task, so that the task may
// move to it (Kafka Streams' acceptable.recovery.lag; default 10,000). New
// rejects a negative lag.
func WithAcceptableRecoveryLag(records int64) Option {
	return func(c *config) { c.replicas.acceptableLag = records }
}

// WithProbingRebalanceInterval is the longest an instance holding
// warm-ups waits before it asks for the follow-up rebalance (Kafka
// Streams' probing.rebalance.interval.ms; default 10 minutes). It asks
// earlier, as soon as every warm-up it holds is caught up — where Kafka
// Streams waits the whole interval. New rejects an interval below 1 s.
func WithProbingRebalanceInterval(d time.Duration) Option {
	return func(c *config) { c.replicas.probing = d }
}

// validateReplicas reports the replica options' problems.
func (c *config) validateReplicas(bad func(string, ...any)) {
	r := c.replicas
	if r.standbys < 0 {
		bad("WithStandbyReplicas: negative count %d", r.standbys)
	}
	if r.maxWarmups < 0 {
		bad("WithMaxWarmupReplicas: negative count %d", r.maxWarmups)
	}
	if r.acceptableLag < 0 {
		bad("WithAcceptableRecoveryLag: negative lag %d", r.acceptableLag)
	}
	if r.probing != 0 && r.probing < tasks.MinProbingInterval {
		bad("WithProbingRebalanceInterval: %v below the minimum %v", r.probing, tasks.MinProbingInterval)
	}
}

// apply sets the runtime's replica settings.
func (r replicaOptions) apply(cfg *tasks.Config) {
	cfg.StandbyReplicas = r.standbys
	cfg.MaxWarmupReplicas = kafka.DefaultMaxWarmupReplicas
	if r.maxWarmupsSet {
		cfg.MaxWarmupReplicas = r.maxWarmups
		if r.maxWarmups == 0 {
			cfg.MaxWarmupReplicas = -1
		}
	}
	cfg.AcceptableRecoveryLag = r.acceptableLag
	cfg.ProbingInterval = r.probing
}
