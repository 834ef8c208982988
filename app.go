package weir

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir/continuous"
	"github.com/weirstream/weir/exactlyonce"
	"github.com/weirstream/weir/internal/engine/batches"
	"github.com/weirstream/weir/internal/engine/epochs"
	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/metrics"
	"github.com/weirstream/weir/internal/query"
	"github.com/weirstream/weir/internal/statedir"
	"github.com/weirstream/weir/internal/status"
	"github.com/weirstream/weir/microbatch"
	"github.com/weirstream/weir/offsets"
	"github.com/weirstream/weir/topology"
)

// App runs a topology on Kafka. Create it with New and call Run; an App is
// safe for concurrent use, but runs at most once at a time.
type App struct {
	topo    *topology.Topology
	cfg     config
	running atomic.Bool
	stats   atomic.Pointer[tasks.Stats]
	// metrics outlive runs; progress keeps the last reports for /progress.
	metrics  *metrics.Metrics
	progress *query.Ring
	state    *stateTracker
	httpAddr atomic.Pointer[string]
	// events are the last state changes and assignments, for the status
	// page; started is when the current or last run began.
	events  *status.Events
	started atomic.Int64
}

// New validates the options and returns an App. It does not connect: Run
// does. The error reports every invalid option at once (errors.Join), each
// problem wrapping ErrConfig and naming its option and the bound it
// breaks; see each option for its default and bounds.
func New(topo *topology.Topology, opts ...Option) (*App, error) {
	cfg := newConfig()
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	cfg.ensureDefaults()
	err := errors.Join(cfg.validate(), cfg.validateSinks(topo))
	if topo == nil {
		err = errors.Join(fmt.Errorf("%w: nil topology", ErrConfig), err)
	}
	if err != nil {
		return nil, err
	}
	m := metrics.New(cfg.applicationID, cfg.mode.String(), cfg.guarantee.String())
	a := &App{
		topo: topo, cfg: cfg,
		metrics:  m,
		progress: query.NewRing(cfg.progressReports),
		state:    newStateTracker(cfg.stateListener, m),
		events:   status.NewEvents(statusEvents),
	}
	a.state.events = a.events
	return a, nil
}

func (c *config) kafkaConfig() kafka.Config {
	kc := kafka.Config{Brokers: c.brokers, ClientID: c.clientID, TLS: c.tls, Logger: c.logger, Tuning: c.kafkaTuning, Client: c.kafkaClient}
	if c.sasl != nil {
		kc.SASL = &kafka.SASL{Mechanism: c.sasl.mechanism, User: c.sasl.user, Password: c.sasl.password}
	}
	return kc
}

// Run connects, runs the preflight (see Check) and creates the internal
// topics, joins the consumer group and processes until ctx is done — a
// graceful stop that commits what was processed, and a nil error — or a
// fatal error. It returns only after every goroutine it started has ended.
// State tells where it is.
//
// Errors, each naming its topic, partition or record where there is one
// (match them with errors.Is):
//   - ErrRunning: Run is already running.
//   - At start, every problem of the preflight at once (errors.Join):
//     ErrMissingTopic, ErrCoPartitioning, ErrInternalTopic,
//     ErrNotAuthorized, ErrTransactionsUnavailable.
//   - While running: ErrOutputFatal for an output no retry delivers (a
//     topic deleted, a write not authorized, a record the topic
//     rejects), under both guarantees; under the Fail policy, a bad record's
//     *processor.RecordError (match it with errors.As): its kind, topic,
//     partition and offset, wrapping the serde's or the processor's error;
//     statestore.ErrStagingFull; a consumer-group error no rejoin cures
//     (authorization, a fenced static member, an invalid session
//     timeout).
func (a *App) Run(ctx context.Context) error {
	if !a.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer a.running.Store(false)
	a.started.Store(time.Now().UnixMilli())
	a.state.set(Starting, nil)
	err := a.run(ctx)
	if err != nil {
		a.state.end(Failed, err)
	} else {
		a.state.end(Stopped, nil)
	}
	return err
}

// run is Run once it runs alone.
func (a *App) run(ctx context.Context) error {
	if err := os.MkdirAll(a.cfg.stateDir, 0o755); err != nil {
		return fmt.Errorf("weir: state dir: %w", err)
	}
	var txnID string
	if a.cfg.guarantee == ExactlyOnce {
		id, err := exactlyonce.LoadOrCreateInstanceID(a.cfg.stateDir)
		if err != nil {
			return fmt.Errorf("weir: %w", err)
		}
		txnID = a.cfg.applicationID + "-" + id
	}
	rtCfg := tasks.Config{
		ApplicationID: a.cfg.applicationID, Graph: a.topo.Graph(), Kafka: a.cfg.kafkaConfig(),
		Logger: a.cfg.logger, BadRecords: a.cfg.badRecords.runtime(), Clock: a.cfg.clock,
		SessionTimeout: a.cfg.sessionTimeout, HeartbeatInterval: a.cfg.heartbeatInterval,
		InstanceID: a.cfg.instanceID, StateDir: a.cfg.stateDir, StagingLimit: a.cfg.stagingLimit, MinFreeDisk: a.cfg.minFreeDisk,
		CacheMaxBytes: a.cfg.cacheMaxBytes, Hooks: joinHooks(a.metrics.Hooks(), a.state.hooks()),
		InternalTopics:  tasks.TopicSettings{ReplicationFactor: a.cfg.replication, Config: a.cfg.topicConfig},
		CreateSinks:     a.cfg.createSinks,
		SkipSinkTopics:  a.cfg.mode == MicroBatch && a.cfg.microBatch.ForEachBatch != nil,
		TransactionalID: txnID,
		ExternalSinks:   a.cfg.sinks,
	}
	a.cfg.replicas.apply(&rtCfg)
	rt, err := tasks.New(rtCfg)
	if err != nil {
		return fmt.Errorf("weir: %w", err)
	}
	a.stats.Store(rt.Stats())
	a.metrics.SetSource(rt)
	stopHTTP, err := a.serveHTTP(rt)
	if err != nil {
		return errors.Join(fmt.Errorf("weir: %w", err), rt.Close())
	}
	a.cfg.logger.Info("weir: starting", "application", a.cfg.applicationID, "mode", a.cfg.mode.String(),
		"guarantee", a.cfg.guarantee.String())
	a.warnSinks() // outputs.go
	runErr := a.runEngine(ctx, rt, txnID)
	if runErr != nil {
		// Failed while /healthz still answers: the shutdown may take a
		// while (leaving the group, closing the producer).
		a.state.set(Failed, runErr)
	}
	stopHTTP()
	closeErr := rt.Close()
	if runErr != nil {
		return errors.Join(fmt.Errorf("weir: %w", runErr), closeErr)
	}
	if closeErr != nil {
		return fmt.Errorf("weir: %w", closeErr)
	}
	return nil
}

// runEngine runs the engine of the configured mode and guarantee.
func (a *App) runEngine(ctx context.Context, rt *tasks.Runtime, txnID string) error {
	// The preflight runs before anything joins the group or opens a
	// transaction: a topology the cluster cannot run stops here, with
	// every problem named at once.
	if err := rt.Preflight(ctx); err != nil {
		if tasks.Stopped(ctx, err) {
			return nil
		}
		return err
	}
	if txnID != "" {
		if err := rt.EnableExactlyOnce(ctx, txnID); err != nil {
			if tasks.Stopped(ctx, err) {
				return nil // stopped while starting: nothing was processed
			}
			return err
		}
	}
	wlog, err := a.openWAL(ctx)
	if err != nil {
		return err
	}
	defer wlog.Close()
	wal, err := wlog.Namespace(a.cfg.applicationID)
	if err != nil {
		return err
	}
	if a.cfg.mode == Continuous {
		e, err := epochs.New(rt, epochs.Config{
			EpochInterval: a.cfg.epochInterval, OnError: a.cfg.onError, EpochLog: wal,
			OnProgress: func(p continuous.Progress) { a.progress.Add(p) },
		})
		if err != nil {
			return err
		}
		return e.Run(ctx)
	}
	mc := a.cfg.microBatch
	if mc.OnError == nil {
		mc.OnError = a.cfg.onError
	}
	userProgress := mc.OnProgress
	mc.OnProgress = func(p microbatch.Progress) {
		a.progress.Add(p)
		if userProgress != nil {
			userProgress(p)
		}
	}
	e, err := batches.New(rt, wal, mc)
	if err != nil {
		return err
	}
	return e.Run(ctx)
}

// Stats is a snapshot of an App's counters.
type Stats struct {
	// RecordsIn counts input records handed to tasks.
	RecordsIn int64
	// RecordsOut counts records written: outputs, repartition and
	// changelog records.
	RecordsOut int64
	// Skipped and DeadLettered count bad records by fate.
	Skipped      int64
	DeadLettered int64
	// Restored counts changelog records replayed into stores.
	Restored int64
	// Replicated counts those of them that standby and warm-up replicas
	// applied (WithStandbyReplicas, WithMaxWarmupReplicas): Restored minus
	// Replicated is what tasks replayed before they ran.
	Replicated int64
	// GlobalRead counts the records of the global tables' topics read into
	// their stores, at restore and since (bad and dropped ones too).
	GlobalRead int64
}

// Stats returns the counters of the current or last run.
func (a *App) Stats() Stats {
	s := a.stats.Load()
	if s == nil {
		return Stats{}
	}
	return Stats{
		RecordsIn: s.RecordsIn.Load(), RecordsOut: s.RecordsOut.Load(),
		Skipped: s.Skipped.Load(), DeadLettered: s.DeadLetter.Load(), Restored: s.Restored.Load(),
		Replicated: s.Replicated.Load(), GlobalRead: s.GlobalRead.Load(),
	}
}

// openWAL opens the instance's offsets log (the micro-batch write-ahead
// log and the continuous epoch log). A log Badger cannot open or read is
// set aside (statedir.SetAside, the newest statedir.Keep copies kept) and
// a new one opened: Kafka's committed offsets are the truth it is rebuilt
// from (see offsets' package documentation, "A lost log"). In micro-batch
// mode the new log starts its batch ids above any the lost one can have
// given (seedBatchIDs), so a ForEachBatch sink keyed by batch id never sees
// an id again for other records.
func (a *App) openWAL(ctx context.Context) (*offsets.Log, error) {
	dir := filepath.Join(a.cfg.stateDir, "offsets")
	opts := offsets.Options{Logger: a.cfg.logger}
	wlog, err := offsets.Open(dir, opts)
	var d *statedir.Damage
	if err != nil && errors.As(err, &d) {
		aside, serr := statedir.SetAside(dir, time.Now(), statedir.Keep)
		if serr != nil {
			return nil, errors.Join(err, serr)
		}
		a.cfg.logger.Warn("weir: write-ahead log damaged; set aside, rebuilding it from the committed offsets",
			"dir", dir, "file", d.File, "cause", d.Reason, "err", d.Err, "set_aside_as", filepath.Base(aside), "kept", statedir.Keep)
		a.metrics.StateRebuilt(tasks.WALRebuilt, d.Reason)
		if wlog, err = offsets.Open(dir, opts); err == nil && a.cfg.mode == MicroBatch {
			if err = seedBatchIDs(ctx, wlog, a.cfg.applicationID, time.Now()); err != nil {
				_ = wlog.Close()
			}
		}
	}
	if err == nil {
		return wlog, nil
	}
	if statedir.Locked(err) {
		return nil, fmt.Errorf("write-ahead log in %s is in use by another process (a second instance on this machine needs its own WithStateDir): %w", a.cfg.stateDir, err)
	}
	return nil, fmt.Errorf("write-ahead log in %s: %w", a.cfg.stateDir, err)
}

// seedBatchIDs writes, into a rebuilt log, an empty committed batch
// numbered with the Unix millisecond time: the engine numbers the next
// batch after it, above every id the lost log gave (one batch per
// millisecond since 1970 is more than any run makes).
func seedBatchIDs(ctx context.Context, wlog *offsets.Log, ns string, now time.Time) error {
	wal, err := wlog.Namespace(ns)
	if err != nil {
		return err
	}
	id := now.UnixMilli()
	if err := wal.WritePlan(ctx, offsets.Plan{Batch: id, Timestamp: now, Trigger: "wal-rebuilt"}); err != nil {
		return err
	}
	return wal.WriteCommit(ctx, offsets.Commit{Batch: id, Timestamp: now})
}
