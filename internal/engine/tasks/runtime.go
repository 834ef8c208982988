package tasks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/sink"
	"github.com/weirstream/weir/statestore/badgerstore"
)

// Config configures a Runtime.
type Config struct {
	// ApplicationID is the consumer group id and the prefix of internal
	// topics; required.
	ApplicationID string
	// Graph is the topology to run; required.
	Graph *processor.Graph
	// Kafka reaches the cluster; required.
	Kafka kafka.Config
	// Logger receives the runtime's logs; required.
	Logger *slog.Logger
	// BadRecords says what happens to records that fail (default Fail).
	BadRecords BadRecordPolicy
	// Clock reads the wall clock for wall-clock punctuators; required.
	Clock func() time.Time
	// SessionTimeout, HeartbeatInterval: the group member timeouts
	// (Kafka's defaults when zero).
	SessionTimeout    time.Duration
	HeartbeatInterval time.Duration
	// InstanceID makes the member static (optional).
	InstanceID string
	// StateDir holds the instance's Badger store database (under
	// "stores"); required.
	StateDir string
	// StagingLimit bounds the bytes one store of one task stages per epoch
	// or batch (DefaultStagingLimit when zero).
	StagingLimit int64
	// MinFreeDisk is the state volume's free space, in bytes, below which
	// the engines stop taking work until it returns (WaitForDisk):
	// DefaultMinFreeDisk when zero, never when negative.
	MinFreeDisk int64
	// FreeSpace, when set, replaces the state volume's free space as
	// statfs reports it (tests).
	FreeSpace func() (uint64, error)
	// CacheMaxBytes, when positive, turns the record caches of the DSL
	// aggregations on, sharing this many bytes (see tasks.go).
	CacheMaxBytes int64
	// StandbyReplicas is the number of standby copies of each stateful
	// task the group keeps (see standby.go); MaxWarmupReplicas bounds the
	// warm-ups (kafka.DefaultMaxWarmupReplicas when zero, none when
	// negative), AcceptableRecoveryLag is the lag a warm-up must reach
	// before its task moves (kafka.DefaultAcceptableRecoveryLag when
	// zero), ProbingInterval the longest a member holding warm-ups waits
	// before it rejoins (DefaultProbingInterval when zero).
	StandbyReplicas       int
	MaxWarmupReplicas     int
	AcceptableRecoveryLag int64
	ProbingInterval       time.Duration
	// Hooks receive commit and rebalance events (optional).
	Hooks Hooks
	// InternalTopics are the replication factor and configs of the topics
	// Prepare creates (repartition, changelog, dead-letter).
	InternalTopics TopicSettings
	// CreateSinks, when set, makes the preflight create missing sink
	// topics with these settings instead of reporting them.
	CreateSinks *SinkTopics
	// SkipSinkTopics: the sinks do not write to Kafka (micro-batch's
	// ForEachBatch), so the preflight does not check their topics.
	SkipSinkTopics bool
	// TransactionalID, under exactly-once, makes the preflight check the
	// transactional features the cluster offers for it.
	TransactionalID string
	// ExternalSinks are the stores the topology's ToSink names write to,
	// by name (external.go).
	ExternalSinks map[string]sink.Sink
}

// TopicSettings are what weir's internal topics are created with besides
// their partition count and cleanup policy.
type TopicSettings struct {
	// ReplicationFactor: -1 or 0 for the broker's default.
	ReplicationFactor int16
	// Config holds topic configs; cleanup.policy is weir's to set.
	Config map[string]string
}

// spec returns the TopicSpec of an internal topic.
func (ts TopicSettings) spec(name string, partitions int32, compacted bool) kafka.TopicSpec {
	spec := kafka.TopicSpec{Name: name, Partitions: partitions, ReplicationFactor: max(ts.ReplicationFactor, 0)}
	if len(ts.Config) > 0 || compacted {
		spec.Config = maps.Clone(ts.Config)
		if spec.Config == nil {
			spec.Config = map[string]string{}
		}
		if compacted {
			spec.Config["cleanup.policy"] = "compact"
		}
	}
	return spec
}

// Runtime holds what an engine needs to run a topology on Kafka: the topic
// plan, the admin client, the producer and the tasks. It is safe for
// concurrent use.
type Runtime struct {
	cfg      Config
	log      *slog.Logger
	admin    *kafka.Admin
	producer *kafka.Producer
	plan     atomic.Pointer[TopicPlan] // set once by Preflight; read by queries meanwhile
	tasks    *Tasks
	stats    Stats
	// sinks, when set, receives the records sinks write (not repartition,
	// changelog or dead-letter records) instead of output.
	sinks func(context.Context, kafka.Record) error
	// committer receives every other record tasks write and makes them
	// durable with the offsets: at-least-once (the producer) unless
	// EnableExactlyOnce made it the transaction (committer.go).
	committer committer
	// readCommitted restores stores from committed changelog records only.
	// Set before Prepare, read by queries too (their server starts first).
	readCommitted atomic.Bool
	// beforeRestoreApply, a test hook (export_test.go), runs before each
	// restore batch's Apply; its error fails the Apply.
	beforeRestoreApply func() error
	// db holds the committed state of every store of every task.
	db *badgerstore.DB
	// layers are the committed epochs' state writes on their way into db
	// (layers.go).
	layers stateLayers
	// standby tells active store partitions from followed ones.
	standby *standbys
	// global holds the global tables and their reader (global.go); nil
	// without global tables.
	global *globalState
	// fencer fences the transactional ids of members that left (fence.go).
	fencer fencer
	// bg joins the runtime's own goroutines (standbys) in Close.
	bg     sync.WaitGroup
	stopBg context.CancelFunc
	// memberData is advertised to the group (SetMemberData).
	memberData []byte
	// lag, restoring and prepared are read by metrics and health checks.
	lag       lags
	restoring atomic.Int64
	prepared  atomic.Bool
}

// Output is where tasks write their records.
type Output interface {
	Send(ctx context.Context, r kafka.Record) error
}

// Stats are the runtime's counters, safe for concurrent use.
type Stats struct {
	RecordsIn  atomic.Int64
	RecordsOut atomic.Int64
	Skipped    atomic.Int64
	DeadLetter atomic.Int64
	Restored   atomic.Int64
	// Replicated counts the records of Restored that standby and warm-up
	// replicas applied.
	Replicated atomic.Int64
	// GlobalRead counts the records of global tables' topics applied (or
	// skipped, dead-lettered, dropped) to the global stores.
	GlobalRead atomic.Int64
}

// New validates cfg and connects the admin client and the producer.
func New(cfg Config) (*Runtime, error) {
	switch {
	case cfg.ApplicationID == "":
		return nil, errors.New("runtime: no application id")
	case cfg.Graph == nil:
		return nil, errors.New("runtime: no topology")
	case cfg.Logger == nil:
		return nil, errors.New("runtime: no logger")
	case cfg.Clock == nil:
		return nil, errors.New("runtime: no clock")
	case cfg.StateDir == "":
		return nil, errors.New("runtime: no state dir")
	}
	if err := cfg.BadRecords.validate(); err != nil {
		return nil, err
	}
	admin, err := kafka.NewAdmin(cfg.Kafka)
	if err != nil {
		return nil, fmt.Errorf("runtime: %w", err)
	}
	producer, err := kafka.NewProducer(cfg.Kafka)
	if err != nil {
		_ = admin.Close()
		return nil, fmt.Errorf("runtime: %w", err)
	}
	r := &Runtime{cfg: cfg, log: cfg.Logger, admin: admin, producer: producer, standby: newStandbys(), stopBg: func() {}}
	r.committer = &atLeastOnce{rt: r, producer: producer}
	r.tasks = newTasks(r)
	if err := r.openStores(); err != nil {
		return nil, errors.Join(err, producer.Close(), admin.Close())
	}
	return r, nil
}

// Prepare runs the preflight (see Preflight), unless it ran, and starts
// the standbys. Every problem the preflight finds is returned at once: the
// engine stops before it joins the group.
func (r *Runtime) Prepare(ctx context.Context) error {
	if err := r.Preflight(ctx); err != nil {
		return err
	}
	if err := r.startGlobals(ctx); err != nil {
		return err
	}
	plan := r.plan.Load()
	r.prepared.Store(true)
	if h := r.cfg.Hooks.Prepared; h != nil {
		h()
	}
	if r.cfg.StandbyReplicas > 0 || r.cfg.MaxWarmupReplicas >= 0 {
		bgCtx, cancel := context.WithCancel(ctx)
		r.stopBg = cancel
		r.bg.Go(func() { r.runStandbys(bgCtx) })
	}
	r.log.Info("weir: topics ready", "application", r.cfg.ApplicationID, "subtopologies", len(plan.Partitions),
		"partitions", plan.Partitions, "internal", len(plan.Internal))
	return nil
}

// Plan returns the topic plan; nil before Prepare.
func (r *Runtime) Plan() *TopicPlan { return r.plan.Load() }

// groupConfig returns the consumer group configuration for the plan: every
// source topic, with the sources of each sub-topology co-partitioned.
// Under exactly-once the member reads committed records only.
func (r *Runtime) groupConfig(onError func(error)) kafka.GroupConfig {
	gc := kafka.GroupConfig{
		Config: r.cfg.Kafka, GroupID: r.cfg.ApplicationID, ReadCommitted: r.readCommitted.Load(),
		SessionTimeout: r.cfg.SessionTimeout, HeartbeatInterval: r.cfg.HeartbeatInterval,
		InstanceID: r.cfg.InstanceID, OnError: onError, MemberData: r.memberData,
		OnAssignment: r.cfg.Hooks.Rebalanced, Replicas: r.replicaConfig(),
	}
	for _, topics := range r.plan.Load().Sources {
		gc.Topics = append(gc.Topics, topics...)
		if len(topics) > 1 {
			gc.CoPartitioned = append(gc.CoPartitioned, append([]string(nil), topics...))
		}
	}
	return gc
}

// InterceptSinks makes the records written by the topology's sinks go to fn
// instead of Kafka (micro-batch's ForEachBatch). Call it before Prepare.
func (r *Runtime) InterceptSinks(fn func(context.Context, kafka.Record) error) { r.sinks = fn }

// SetMemberData sets what this member advertises to the group (the
// address interactive queries forward to). Call it before Prepare.
func (r *Runtime) SetMemberData(b []byte) { r.memberData = b }

// Tasks returns the task registry.
func (r *Runtime) Tasks() *Tasks { return r.tasks }

// Stats returns the runtime's counters.
func (r *Runtime) Stats() *Stats { return &r.stats }

// Logger returns the runtime's logger.
func (r *Runtime) Logger() *slog.Logger { return r.log }

// Now reads the runtime's clock.
func (r *Runtime) Now() time.Time { return r.cfg.Clock() }

// Close closes the producer and the admin client. Tasks must have been
// released.
//
// Records the producer had not delivered when it closed — a stop that
// came while they waited in its retries, which sarama then fails — are
// logged, not returned: every commit flushes the producer before its
// offsets, so they are outputs of work whose offsets were never
// committed, which the next start processes again (a stop during a
// broker outage on the three-broker cluster exited with "message
// received by producer in process of shutting down" otherwise).
func (r *Runtime) Close() error {
	r.stopBg()
	r.bg.Wait()
	r.fencer.close()
	r.stopGlobals()
	r.joinApplier()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	txnErr := r.committer.close(ctx)
	cancel()
	if err := r.producer.Close(); err != nil {
		r.log.Warn("weir: outputs of work not committed were not delivered before the stop; the next start processes that work again", "err", err)
	}
	return errors.Join(txnErr, r.admin.Close(), r.db.Close())
}

// ApplicationID returns the application id.
func (r *Runtime) ApplicationID() string { return r.cfg.ApplicationID }

// ReadRange reads the records of a partition in [from, to) exactly (see
// kafka.Admin.ReadRange), read_committed under exactly-once.
func (r *Runtime) ReadRange(ctx context.Context, topic string, partition int32, from, to int64, fn func(kafka.Record) error) error {
	return r.admin.ReadRange(ctx, topic, partition, from, to, r.readCommitted.Load(), fn)
}
