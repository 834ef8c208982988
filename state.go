package weir

import (
	"fmt"
	"sync"
	"time"

	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/metrics"
	"github.com/weirstream/weir/internal/status"
)

// State is an App's state, as Kafka Streams' KafkaStreams.State: what the
// application does now, and whether it serves (see the README's
// operations section).
type State int

// The states of an App.
const (
	// Created: New returned; Run has not been called.
	Created State = iota
	// Starting: Run connects and runs the preflight (topics, transactional
	// features) and, under exactly-once, initializes its producer.
	Starting
	// Rebalancing: the topics are ready; the member joins its group and
	// waits for its partitions.
	Rebalancing
	// Restoring: tasks restore their stores from their changelogs before
	// they process.
	Restoring
	// Running: processing, and the last commit with offsets succeeded.
	Running
	// Retrying: the last epoch or batch did not commit — a transaction
	// aborted, a member removed from its group, an offset commit deferred —
	// and the work is being retried, with backoff; Status.Err is the last
	// error. An application that stays here keeps failing: look at Err.
	Retrying
	// Stopped: Run returned after a graceful stop.
	Stopped
	// Failed: Run returned an error (Status.Err).
	Failed
)

// String names the state: "created", "starting", "rebalancing",
// "restoring", "running", "retrying", "stopped", "failed".
func (s State) String() string {
	if s >= Created && int(s) < len(metrics.States) {
		return metrics.States[s]
	}
	return "unknown"
}

// Status is an App's state with its error and the time it began.
type Status struct {
	State State
	// Err is the last error of Retrying, or Run's error in Failed.
	Err error
	// Since is when the App entered the state.
	Since time.Time
}

// Ready reports whether the App processes normally: Running.
func (s Status) Ready() bool { return s.State == Running }

// Healthy reports whether the App is alive: any state but Failed.
func (s Status) Healthy() bool { return s.State != Failed }

// State returns the App's current status.
func (a *App) State() Status { return a.state.status() }

// stateTracker keeps an App's state: a base state set by Run's steps and
// the runtime's hooks, shown as Restoring while tasks restore in Running.
type stateTracker struct {
	// mu guards the state; lmu, taken under mu and held past it, keeps
	// the listener's calls in the order of the changes.
	mu        sync.Mutex
	lmu       sync.Mutex
	base      State
	retryAt   time.Time // the last change to Retrying
	err       error
	restoring int64
	shown     Status
	listener  func(State, Status)
	metrics   *metrics.Metrics
	// events, if set, records each change of state and each assignment
	// for the status page.
	events *status.Events
	now    func() time.Time
	// commit is the number of the Commit in progress (0: none) and stall
	// its timer (see committing).
	commit     uint64
	stall      *time.Timer
	stallAfter time.Duration
}

// CommitStall is how long a commit may take before the App reports itself
// Retrying: outputs the brokers do not acknowledge (a partition without
// enough in-sync replicas, a broker that does not answer) hold the commit,
// and the producer's retries last longer than that.
const CommitStall = 10 * time.Second

func newStateTracker(listener func(State, Status), m *metrics.Metrics) *stateTracker {
	return &stateTracker{listener: listener, metrics: m, now: time.Now, stallAfter: CommitStall,
		shown: Status{State: Created, Since: time.Now()}}
}

func (st *stateTracker) status() Status {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.shown
}

// set changes the base state; err is kept for Retrying and Failed.
func (st *stateTracker) set(s State, err error) { st.change(s, err, false) }

// end sets the state Run ends in, Failed or not.
func (st *stateTracker) end(s State, err error) { st.change(s, err, true) }

func (st *stateTracker) change(s State, err error, final bool) {
	st.mu.Lock()
	if st.base == Failed && s != Failed && s != Starting && !final {
		st.mu.Unlock() // Failed lasts until the next Run starts
		return
	}
	st.base, st.err = s, err
	if s == Retrying {
		st.retryAt = st.now()
	}
	st.updateLocked()
}

// committing notes a commit that starts, and reports Retrying if it has
// not ended after CommitStall.
func (st *stateTracker) committing() {
	st.mu.Lock()
	st.commit++
	n := st.commit
	if st.stall != nil {
		st.stall.Stop()
	}
	after := st.stallAfter
	st.stall = time.AfterFunc(after, func() {
		st.mu.Lock()
		if st.commit != n {
			st.mu.Unlock()
			return
		}
		st.mu.Unlock()
		st.set(Retrying, fmt.Errorf("weir: a commit has not completed for %v: the brokers have not acknowledged the outputs (a partition without enough in-sync replicas, a broker not answering?); the producer retries", after))
	})
	st.mu.Unlock()
}

// commitEnded notes the end of the commit in progress.
func (st *stateTracker) commitEnded() {
	st.mu.Lock()
	st.commit++
	if st.stall != nil {
		st.stall.Stop()
		st.stall = nil
	}
	st.mu.Unlock()
}

// retryCalm is how long after the last failure a commit with nothing to
// commit ends Retrying: an idle application has nothing else to prove that
// it recovered, and a busy one proves it sooner (Progressed).
const retryCalm = 5 * time.Second

// committed ends Retrying after a commit with nothing to commit, once no
// failure came for retryCalm.
func (st *stateTracker) committed() {
	st.mu.Lock()
	if st.base == Retrying && st.now().Sub(st.retryAt) >= retryCalm {
		st.base, st.err = Running, nil
	}
	st.updateLocked()
}

// setIf changes the base state to s when it is one of from.
func (st *stateTracker) setIf(s State, from ...State) {
	st.mu.Lock()
	for _, f := range from {
		if st.base == f {
			st.base, st.err = s, nil
			break
		}
	}
	st.updateLocked()
}

func (st *stateTracker) setRestoring(n int64) {
	st.mu.Lock()
	st.restoring = n
	st.updateLocked()
}

// updateLocked works out the shown state and reports a change; it
// unlocks st.mu.
func (st *stateTracker) updateLocked() {
	shown := st.base
	if shown == Running && st.restoring > 0 {
		shown = Restoring
	}
	old := st.shown
	if shown == old.State && (st.err == old.Err || (shown != Retrying && shown != Failed)) {
		st.mu.Unlock()
		return
	}
	since := old.Since
	if shown != old.State {
		since = st.now()
	}
	st.shown = Status{State: shown, Err: st.err, Since: since}
	if shown != Retrying && shown != Failed {
		st.shown.Err = nil
	}
	now := st.shown
	listener, m := st.listener, st.metrics
	st.lmu.Lock()
	st.mu.Unlock()
	defer st.lmu.Unlock()
	text := shown.String()
	if now.Err != nil {
		text += ": " + now.Err.Error()
	}
	st.events.Add(st.now(), "state", text)
	if shown != old.State {
		if m != nil {
			m.SetState(shown.String())
		}
		if listener != nil {
			listener(old.State, now)
		}
	}
}

// hooks returns the runtime hooks that drive the state.
func (st *stateTracker) hooks() tasks.Hooks {
	return tasks.Hooks{
		Committing: st.committing,
		Committed: func(_ time.Duration, err error) {
			st.commitEnded()
			if err == nil {
				st.committed()
			}
		},
		Prepared: func() { st.setIf(Rebalancing, Starting) },
		Rebalanced: func(generation int32) {
			st.events.Add(st.now(), "rebalance", fmt.Sprintf("assignment of group generation %d", generation))
			st.setIf(Running, Starting, Rebalancing)
		},
		Restoring:      st.setRestoring,
		Rewound:        func(_ string, err error) { st.set(Retrying, err) },
		CommitDeferred: func(err error) { st.set(Retrying, err) },
		Progressed:     func() { st.setIf(Running, Retrying, Rebalancing, Starting) },
		Failing:        func(err error) { st.set(Failed, err) },
		DiskFull: func(err error) {
			if err != nil {
				st.set(Retrying, err)
			} else {
				st.setIf(Running, Retrying)
			}
		},
	}
}

// joinHooks returns hooks that call a's, then b's.
func joinHooks(a, b tasks.Hooks) tasks.Hooks {
	return tasks.Hooks{
		Committed: func(took time.Duration, err error) {
			if a.Committed != nil {
				a.Committed(took, err)
			}
			if b.Committed != nil {
				b.Committed(took, err)
			}
		},
		Committing: func() {
			if a.Committing != nil {
				a.Committing()
			}
			if b.Committing != nil {
				b.Committing()
			}
		},
		Rebalanced: func(g int32) { call1(a.Rebalanced, g); call1(b.Rebalanced, g) },
		Prepared: func() {
			if a.Prepared != nil {
				a.Prepared()
			}
			if b.Prepared != nil {
				b.Prepared()
			}
		},
		Restoring: func(n int64) { call1(a.Restoring, n); call1(b.Restoring, n) },
		Rewound: func(cause string, err error) {
			if a.Rewound != nil {
				a.Rewound(cause, err)
			}
			if b.Rewound != nil {
				b.Rewound(cause, err)
			}
		},
		CommitDeferred: func(err error) { call1(a.CommitDeferred, err); call1(b.CommitDeferred, err) },
		DiskFull:       func(err error) { call1(a.DiskFull, err); call1(b.DiskFull, err) },
		StateRebuilt: func(what, reason string) {
			if a.StateRebuilt != nil {
				a.StateRebuilt(what, reason)
			}
			if b.StateRebuilt != nil {
				b.StateRebuilt(what, reason)
			}
		},
		Failing: func(err error) { call1(a.Failing, err); call1(b.Failing, err) },
		Restored: func(store string, records int64, took time.Duration) {
			if a.Restored != nil {
				a.Restored(store, records, took)
			}
			if b.Restored != nil {
				b.Restored(store, records, took)
			}
		},
		Phase: func(phase string, took time.Duration) {
			if a.Phase != nil {
				a.Phase(phase, took)
			}
			if b.Phase != nil {
				b.Phase(phase, took)
			}
		},
		Progressed: func() {
			if a.Progressed != nil {
				a.Progressed()
			}
			if b.Progressed != nil {
				b.Progressed()
			}
		},
	}
}

func call1[T any](fn func(T), v T) {
	if fn != nil {
		fn(v)
	}
}
