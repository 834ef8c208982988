package status

import (
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Sample is what the page charts, read from the App's metrics at one
// moment. Counters are totals since the run began: the page draws the
// difference between two samples over their time apart (a rate).
type Sample struct {
	// Time is milliseconds since the Unix epoch.
	Time int64 `json:"t"`
	// In and Out count records handed to tasks and records written.
	In  float64 `json:"in"`
	Out float64 `json:"out"`
	// DeadLettered, Skipped and Late count bad records and records
	// dropped for arriving after their window closed.
	DeadLettered float64 `json:"deadLettered"`
	Skipped      float64 `json:"skipped"`
	Late         float64 `json:"late"`
	// Commits and Failed count the epochs or batches committed and the
	// commits that failed; Aborts and Rewinds the transactions aborted and
	// the times the tasks went back to the committed offsets.
	Commits float64 `json:"commits"`
	Failed  float64 `json:"failed"`
	Aborts  float64 `json:"aborts"`
	Rewinds float64 `json:"rewinds"`
	// Rebalances counts the assignments received.
	Rebalances float64 `json:"rebalances"`
	// Restored counts changelog records replayed into stores.
	Restored float64 `json:"restored"`
	// Phases holds, per phase of the epoch end or batch commit, the total
	// seconds spent in it and the number of times it ran.
	Phases map[string][2]float64 `json:"phases"`
	// Lag is the lag of each consumed partition, "topic/partition".
	Lag map[string]float64 `json:"lag"`
	// StandbyLag is the changelog lag of each standby store partition,
	// "store/partition", where the App reports it.
	StandbyLag map[string]float64 `json:"standbyLag,omitempty"`
}

// Series keeps the samples of the last window, oldest first. It is safe
// for concurrent use.
type Series struct {
	mu      sync.Mutex
	samples []Sample
	window  time.Duration
}

// NewSeries returns a Series that keeps window's worth of samples.
func NewSeries(window time.Duration) *Series { return &Series{window: window} }

// Add appends s and drops the samples older than the window before it.
func (ss *Series) Add(s Sample) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.samples = append(ss.samples, s)
	cut := s.Time - ss.window.Milliseconds()
	i := sort.Search(len(ss.samples), func(i int) bool { return ss.samples[i].Time >= cut })
	if i > 0 {
		ss.samples = append(ss.samples[:0], ss.samples[i:]...)
	}
}

// Samples returns a copy of the samples, oldest first.
func (ss *Series) Samples() []Sample {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return append([]Sample(nil), ss.samples...)
}

// Read takes a sample from g's metrics (weir's own, internal/metrics):
// metrics it does not find stay zero, so a registry without them gives an
// empty but valid sample.
func Read(g prometheus.Gatherer, now time.Time) (Sample, error) {
	s := Sample{Time: now.UnixMilli(), Phases: map[string][2]float64{}, Lag: map[string]float64{}}
	families, err := g.Gather()
	if err != nil && len(families) == 0 {
		return s, err
	}
	// The counters summed over their labels.
	sums := map[string]*float64{
		"weir_records_in_total": &s.In, "weir_records_out_total": &s.Out,
		"weir_dead_lettered_total": &s.DeadLettered, "weir_skipped_total": &s.Skipped,
		"weir_aborted_epochs_total": &s.Aborts, "weir_rewinds_total": &s.Rewinds,
		"weir_rebalances_total": &s.Rebalances, "weir_restored_records_total": &s.Restored,
	}
	for _, f := range families {
		name := f.GetName()
		for _, m := range f.GetMetric() {
			v := value(m)
			if sum, ok := sums[name]; ok {
				*sum += v
				continue
			}
			switch name {
			case "weir_dropped_records_total":
				if label(m, "reason") == "late" {
					s.Late += v
				}
			case "weir_commit_duration_seconds":
				n := float64(m.GetHistogram().GetSampleCount())
				if label(m, "result") == "failed" {
					s.Failed += n
				} else {
					s.Commits += n
				}
			case "weir_epoch_phase_seconds":
				h := m.GetHistogram()
				p := s.Phases[label(m, "phase")]
				s.Phases[label(m, "phase")] = [2]float64{p[0] + h.GetSampleSum(), p[1] + float64(h.GetSampleCount())}
			case "weir_partition_lag":
				s.Lag[label(m, "topic")+"/"+label(m, "partition")] = v
			case "weir_replica_lag": // standbys and warm-ups, by role
				if s.StandbyLag == nil {
					s.StandbyLag = map[string]float64{}
				}
				key := label(m, "store") + "/" + label(m, "partition")
				if role := label(m, "role"); role != "" && role != "standby" {
					key += " (" + role + ")"
				}
				s.StandbyLag[key] = v
			}
		}
	}
	return s, nil
}

// value is a counter's, gauge's or untyped metric's value.
func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	return 0
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
