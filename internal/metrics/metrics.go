// Package metrics holds an App's Prometheus metrics: one registry per App
// (never the global default, so several Apps in one process do not
// collide), fed by the runtime of the App's current run.
//
// Usage:
//
//	m := metrics.New("wordcount", "continuous", "exactly-once")
//	rt, err := tasks.New(tasks.Config{..., Hooks: m.Hooks()})
//	m.SetSource(rt) // counters, lag and restore progress are read at scrape time
//	http.Handle("/metrics", m.Handler())
//
// Counters read the current run's counters: a new Run starts them at zero
// again, which Prometheus treats as a counter reset.
package metrics

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/offsets"
	"github.com/weirstream/weir/processor"
)

// Source is what the metrics read at scrape time: the runtime of the
// current run.
type Source interface {
	Stats() *tasks.Stats
	Lags() map[offsets.TopicPartition]int64
	Restoring() int64
	TaskCounters() map[string]int64
}

// Metrics is an App's registry and the metrics in it. It is safe for
// concurrent use.
type Metrics struct {
	reg        *prometheus.Registry
	src        atomic.Pointer[Source]
	commits    *prometheus.HistogramVec
	phases     *prometheus.HistogramVec
	rebalances prometheus.Counter
	aborted    *prometheus.CounterVec
	rewinds    *prometheus.CounterVec
	deferred   prometheus.Counter
	state      *prometheus.GaugeVec
	rebuilt    *prometheus.CounterVec
	restores   *prometheus.HistogramVec
	restoreRPS *prometheus.GaugeVec
}

// States are the values of the state label of weir_state, in the order the
// App's states are numbered.
var States = []string{"created", "starting", "rebalancing", "restoring", "running", "retrying", "stopped", "failed"}

// New returns the metrics of one App, labelled with its application id,
// mode and guarantee.
func New(application, mode, guarantee string) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	labels := prometheus.Labels{"application": application, "mode": mode, "guarantee": guarantee}
	m.commits = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "weir", Name: "commit_duration_seconds",
		Help:        "Latency of epoch (continuous) or batch (micro-batch) commits: flush and offset commit, or the transaction, and applying staged state.",
		ConstLabels: labels,
		Buckets:     []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"result"})
	for _, result := range []string{"committed", "failed"} {
		m.commits.WithLabelValues(result) // on /metrics before the first commit
	}
	m.phases = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "weir", Name: "epoch_phase_seconds",
		Help: "Duration of each phase of an epoch end (continuous) or batch commit (micro-batch): paused (processing stood still), " +
			"barrier_wait, punctuate, membership_check, changelog_flush, producer_flush, offset_commit, txn_commit, state_apply, state_apply_behind (continuous: a committed epoch's state written into Badger while processing goes on), epoch_log.",
		ConstLabels: labels,
		Buckets:     []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"phase"})
	m.rebalances = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "weir", Name: "rebalances_total", ConstLabels: labels,
		Help: "Assignments this member received from the consumer group (one per rebalance it took part in).",
	})
	m.aborted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "weir", Name: "aborted_epochs_total", ConstLabels: labels,
		Help: "Exactly-once epochs (continuous) or batches (micro-batch) whose transaction was aborted, or its producer re-initialized, by cause (abortable, fenced, indefinite, other).",
	}, []string{"cause"})
	m.rewinds = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "weir", Name: "rewinds_total", ConstLabels: labels,
		Help: "Times every task went back to the committed offsets, its state restored from the committed changelog, by cause: an aborted transaction's (see weir_aborted_epochs_total), or member_gone (at-least-once: removed from the group before its commit).",
	}, []string{"cause"})
	m.deferred = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "weir", Name: "deferred_commits_total", ConstLabels: labels,
		Help: "At-least-once offset commits that failed after the outputs were acknowledged; the next commit carried them.",
	})
	m.rebuilt = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "weir", Name: "state_rebuilt_total", ConstLabels: labels,
		Help: "Damaged state directories set aside and rebuilt, by what (stores: from the changelogs; wal: the micro-batch write-ahead log, from the committed offsets) and reason (checksum, truncated, manifest, missing, foreign, panic, marked, unreadable).",
	}, []string{"what", "reason"})
	m.restores = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "weir", Name: "restore_duration_seconds", ConstLabels: labels,
		Help: "How long tasks took to restore a store partition from its changelog before running on it (one observation per store partition " +
			"restored; standby and warm-up catch-ups are not restores). weir_restored_records_total counts the records.",
		Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 25, 60, 150, 300, 600},
	}, []string{"store"})
	m.restoreRPS = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "weir", Name: "restore_records_per_second", ConstLabels: labels,
		Help: "Changelog records a second the last restore of each store (one partition, by a task before it ran) applied: its records over its duration.",
	}, []string{"store"})
	m.state = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "weir", Name: "state", ConstLabels: labels,
		Help: "The application's state: 1 for the current one (created, starting, rebalancing, restoring, running, retrying, stopped, failed), 0 for the others.",
	}, []string{"state"})
	for _, st := range States {
		m.state.WithLabelValues(st).Set(0)
	}
	m.state.WithLabelValues("created").Set(1)
	counter := func(name, help string, read func(*tasks.Stats) int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "weir", Name: name, Help: help, ConstLabels: labels},
			func() float64 {
				if s := m.source(); s != nil {
					return float64(read(s.Stats()))
				}
				return 0
			})
	}
	m.reg.MustRegister(
		m.commits, m.phases, m.rebalances, m.aborted, m.rewinds, m.deferred, m.state, m.rebuilt, m.restores, m.restoreRPS,
		counter("records_in_total", "Input records handed to tasks.", func(s *tasks.Stats) int64 { return s.RecordsIn.Load() }),
		counter("records_out_total", "Records written: outputs, repartition and changelog records.", func(s *tasks.Stats) int64 { return s.RecordsOut.Load() }),
		counter("dead_lettered_total", "Bad records written to dead-letter topics.", func(s *tasks.Stats) int64 { return s.DeadLetter.Load() }),
		counter("skipped_total", "Bad records skipped.", func(s *tasks.Stats) int64 { return s.Skipped.Load() }),
		counter("restored_records_total", "Changelog records replayed into stores (restores and standbys).", func(s *tasks.Stats) int64 { return s.Restored.Load() }),
		counter("replicated_records_total", "Changelog records standby and warm-up replicas applied (included in restored_records_total).", func(s *tasks.Stats) int64 { return s.Replicated.Load() }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "weir", Name: "restoring_tasks", ConstLabels: labels,
			Help: "Tasks restoring their stores from their changelogs."}, func() float64 {
			if s := m.source(); s != nil {
				return float64(s.Restoring())
			}
			return 0
		}),
		&lagCollector{m: m, desc: prometheus.NewDesc("weir_partition_lag",
			"Records behind the end of each consumed partition: high watermark minus the next offset to process.",
			[]string{"topic", "partition"}, labels)},
		&replicaLagCollector{m: m, desc: prometheus.NewDesc("weir_replica_lag",
			"Changelog records each standby or warm-up replica of a store partition kept here was behind when its last catch-up began (every second).",
			[]string{"store", "partition", "role"}, labels)},
		collectors.NewGoCollector(),
	)
	m.reg.MustRegister(&droppedCollector{m: m, desc: prometheus.NewDesc("weir_dropped_records_total",
		"Records the operators dropped, by reason: late (after their window closed), null (a null key or value an aggregation or join cannot take), expired, stale (a foreign-key join's outdated response); summed over the tasks this instance runs now, so a task that moves away takes its counts along.",
		[]string{"reason"}, labels)})
	m.reg.MustRegister(&queryCollector{m: m, desc: prometheus.NewDesc("weir_query_requests_total",
		"Interactive queries clients sent to this instance, by result (answered, not_found, unavailable, bad_request, error) and cause (the copy that answered: active, standby, restoring; or why none could: no_owner, address_unknown, no_address, restoring, unreachable, moving, group_read_failed, starting).",
		[]string{"result", "cause"}, labels)})
	return m
}

func (m *Metrics) source() Source {
	if p := m.src.Load(); p != nil {
		return *p
	}
	return nil
}

// SetSource makes the metrics read s (the runtime of a new run).
func (m *Metrics) SetSource(s Source) { m.src.Store(&s) }

// Registry returns the App's registry, to add metrics to or to gather.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Hooks returns the runtime hooks that feed the commit latency and
// rebalance metrics.
func (m *Metrics) Hooks() tasks.Hooks {
	return tasks.Hooks{
		Committed: func(took time.Duration, err error) {
			result := "committed"
			if err != nil {
				result = "failed"
			}
			m.commits.WithLabelValues(result).Observe(took.Seconds())
		},
		Phase:      func(phase string, took time.Duration) { m.phases.WithLabelValues(phase).Observe(took.Seconds()) },
		Rebalanced: func(int32) { m.rebalances.Inc() },
		Rewound: func(cause string, _ error) {
			m.rewinds.WithLabelValues(cause).Inc()
			if cause != "member_gone" { // the rest end a transaction
				m.aborted.WithLabelValues(cause).Inc()
			}
		},
		CommitDeferred: func(error) { m.deferred.Inc() },
		StateRebuilt:   m.StateRebuilt,
		Restored:       m.Restored,
	}
}

// Restored observes a task's restore of a store partition: records
// applied in took.
func (m *Metrics) Restored(store string, records int64, took time.Duration) {
	m.restores.WithLabelValues(store).Observe(took.Seconds())
	if took > 0 {
		m.restoreRPS.WithLabelValues(store).Set(float64(records) / took.Seconds())
	}
}

// StateRebuilt counts a damaged state directory set aside and rebuilt.
func (m *Metrics) StateRebuilt(what, reason string) { m.rebuilt.WithLabelValues(what, reason).Inc() }

// SetState makes state the one weir_state reports.
func (m *Metrics) SetState(state string) {
	for _, st := range States {
		v := 0.0
		if st == state {
			v = 1
		}
		m.state.WithLabelValues(st).Set(v)
	}
}

// lagCollector reports the lag of every partition the run consumes.
type lagCollector struct {
	m    *Metrics
	desc *prometheus.Desc
}

func (c *lagCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *lagCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.m.source()
	if s == nil {
		return
	}
	for tp, lag := range s.Lags() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(lag), tp.Topic, strconv.Itoa(int(tp.Partition)))
	}
}

// replicaLagSource is a Source that keeps standby and warm-up replicas
// (the runtime does).
type replicaLagSource interface {
	ReplicaLags() []tasks.ReplicaLag
}

// replicaLagCollector reports the lag of every replica the run keeps.
type replicaLagCollector struct {
	m    *Metrics
	desc *prometheus.Desc
}

func (c *replicaLagCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *replicaLagCollector) Collect(ch chan<- prometheus.Metric) {
	s, ok := c.m.source().(replicaLagSource)
	if !ok {
		return
	}
	for _, l := range s.ReplicaLags() {
		role := "standby"
		if l.Warmup {
			role = "warmup"
		}
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(l.Lag), l.Store, strconv.Itoa(int(l.Partition)), role)
	}
}

// queryCollector reports the run's interactive query replies.
type queryCollector struct {
	m    *Metrics
	desc *prometheus.Desc
}

func (c *queryCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *queryCollector) Collect(ch chan<- prometheus.Metric) {
	s, ok := c.m.source().(interface {
		QueryCounts() ([]tasks.QueryOutcome, []int64)
	})
	if !ok {
		return
	}
	outcomes, counts := s.QueryCounts()
	for i, o := range outcomes {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(counts[i]), o.Result, o.Cause)
	}
}

// droppedCollector reports the records the operators dropped, from the
// counters of the tasks this instance runs.
type droppedCollector struct {
	m    *Metrics
	desc *prometheus.Desc
}

// droppedReasons maps the processors' counters to the reason label; every
// reason is reported, zero included.
var droppedReasons = []struct{ counter, reason string }{
	{processor.MetricDroppedLate, "late"},
	{processor.MetricDroppedNull, "null"},
	{processor.MetricDroppedExpired, "expired"},
	{processor.MetricDroppedStale, "stale"},
}

func (c *droppedCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *droppedCollector) Collect(ch chan<- prometheus.Metric) {
	var counts map[string]int64
	if s := c.m.source(); s != nil {
		counts = s.TaskCounters()
	}
	for _, r := range droppedReasons {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(counts[r.counter]), r.reason)
	}
}
