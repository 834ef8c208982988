package tasks

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/statestore"
)

// QueryView is the read-only part of a Runtime that the query server
// (internal/query) uses: the topic plan, readiness, and the stores' rows
// through the layers that committed. Nothing in it writes, commits or
// moves a task; a *Runtime is one.
type QueryView interface {
	// Plan is the topic plan; nil before Prepare.
	Plan() *TopicPlan
	// Prepared reports that the preflight passed and the topics are ready.
	Prepared() bool
	// Restoring is the number of tasks restoring their stores.
	Restoring() int64
	// Store describes a queryable store.
	Store(name string) (StoreInfo, error)
	// QueryStore reads an active store partition this instance runs.
	QueryStore(name string, partition int32) (statestore.Store, error)
	// QueryCopy reads this instance's copy of a store partition within a
	// lag bound.
	QueryCopy(ctx context.Context, name string, partition int32, maxLag int64) (statestore.Store, Copy, error)
	// AssignedHere reports that this member is assigned the partition.
	AssignedHere(name string, partition int32) bool
	// CountQuery counts a query's reply for the metrics.
	CountQuery(o QueryOutcome)
}

var _ QueryView = (*Runtime)(nil)

// StoreInfo is what interactive queries need to know of a store.
type StoreInfo struct {
	Spec  statestore.Spec
	Codec processor.StoreCodec
	// Subtopology runs the store; Partitions is its partition count (0
	// before Prepare).
	Subtopology int
	Partitions  int32
	// Global marks a global table's store: every instance holds it whole,
	// as one partition (0) that it answers itself (global.go).
	Global bool
}

// Store describes a queryable store.
func (r *Runtime) Store(name string) (StoreInfo, error) {
	g := r.cfg.Graph
	codec, ok := g.StoreCodecs[name]
	if !ok {
		return StoreInfo{}, fmt.Errorf("%w: %q", ErrUnknownStore, name)
	}
	if info, ok := r.globalInfo(name, codec); ok {
		return info, nil
	}
	for _, st := range g.Subtopologies {
		for _, spec := range st.Stores {
			if spec.Name != name {
				continue
			}
			info := StoreInfo{Spec: spec, Codec: codec, Subtopology: st.ID}
			if p := r.plan.Load(); p != nil && st.ID < len(p.Partitions) {
				info.Partitions = p.Partitions[st.ID]
			}
			return info, nil
		}
	}
	return StoreInfo{}, fmt.Errorf("%w: %q", ErrUnknownStore, name)
}

// QueryStore returns a read-only handle on the committed rows of a store
// partition that this instance runs — rows in Badger and the committed
// layers on their way there, never the staged writes of an epoch or batch
// that has not committed. Close it after use.
// A partition this instance does not run, or still restores, gives an
// error wrapping ErrNotOwner: its rows here may be old or partial.
func (r *Runtime) QueryStore(name string, partition int32) (statestore.Store, error) {
	info, err := r.Store(name)
	if err != nil {
		return nil, err
	}
	if info.Global {
		return r.queryGlobal(info, partition)
	}
	if !r.tasks.running(processor.TaskID{Subtopology: info.Subtopology, Partition: partition}) {
		return nil, fmt.Errorf("%w: store %q partition %d", ErrNotOwner, name, partition)
	}
	s, err := r.db.Reader(info.Spec, partition)
	if err != nil {
		return nil, fmt.Errorf("runtime: %w", err)
	}
	return r.committedView(processor.TaskID{Subtopology: info.Subtopology, Partition: partition}, name, s)
}

// The roles of the copy of a store partition a query read (Copy.Role).
const (
	// RoleActive: this instance runs the partition; its rows are every
	// committed epoch's or batch's.
	RoleActive = "active"
	// RoleRestoring: the partition is assigned here and its task restores
	// it from the changelog.
	RoleRestoring = "restoring"
	// RoleStandby: another instance runs the partition; the rows here are
	// a standby's (WithStandbyReplicas) or an earlier owner's.
	RoleStandby = "standby"
)

// Copy describes the copy of a store partition that a query read.
type Copy struct {
	// Role is RoleActive, RoleRestoring or RoleStandby.
	Role string
	// Lag counts the changelog records (commit markers included) the copy
	// had not applied when it was read: the changelog's end (its last
	// stable offset under exactly-once) minus the copy's checkpoint. 0 for
	// an active copy.
	Lag int64
}

// QueryCopy returns a read-only handle on this instance's copy of a
// store partition it does not run — a standby's, a restoring task's, or
// what an earlier task left here — if the copy lags at most maxLag
// changelog records. The rows are committed ones only, as the changelog's
// committed records hold them at the copy's checkpoint (read before the
// rows, so the lag reported is never less than the rows' lag). A copy
// without a checkpoint (restoring from scratch), of an unlogged store, or
// lagging more gives an error wrapping ErrNoCopy that says how much it
// lags.
func (r *Runtime) QueryCopy(ctx context.Context, name string, partition int32, maxLag int64) (statestore.Store, Copy, error) {
	info, err := r.Store(name)
	if err != nil {
		return nil, Copy{}, err
	}
	c := Copy{Role: RoleStandby}
	if r.tasks.assigned(processor.TaskID{Subtopology: info.Subtopology, Partition: partition}) {
		c.Role = RoleRestoring
	}
	if !info.Spec.Logged {
		return nil, c, fmt.Errorf("%w: store %q is not logged", ErrNoCopy, name)
	}
	cp, ok, err := r.db.Checkpoint(name, partition)
	if err != nil {
		return nil, c, fmt.Errorf("runtime: %w", err)
	}
	if !ok {
		return nil, c, fmt.Errorf("%w: the %s copy of store %q partition %d has no checkpoint yet", ErrNoCopy, c.Role, name, partition)
	}
	topic := processor.ChangelogTopic(name).Resolve(r.cfg.ApplicationID)
	ends, err := r.EndOffsets(ctx, topic, []int32{partition})
	if err != nil {
		return nil, c, fmt.Errorf("runtime: changelog end: %w", err)
	}
	c.Lag = ends[partition] - cp.Offset
	switch {
	case c.Lag < 0:
		return nil, c, fmt.Errorf("%w: the %s copy of store %q partition %d is past its changelog's end", ErrNoCopy, c.Role, name, partition)
	case c.Lag > maxLag:
		return nil, c, fmt.Errorf("%w: the %s copy of store %q partition %d lags %d records (maxLag %d)", ErrNoCopy, c.Role, name, partition, c.Lag, maxLag)
	}
	s, err := r.db.Reader(info.Spec, partition)
	if err != nil {
		return nil, c, fmt.Errorf("runtime: %w", err)
	}
	return s, c, nil
}

// AssignedHere reports whether the task of a store's partition is
// assigned to this instance, running or restoring.
func (r *Runtime) AssignedHere(name string, partition int32) bool {
	info, err := r.Store(name)
	return err == nil && r.tasks.assigned(processor.TaskID{Subtopology: info.Subtopology, Partition: partition})
}

// assigned reports whether the task is assigned here (running or not).
func (ts *Tasks) assigned(id processor.TaskID) bool {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	_, ok := ts.m[id]
	return ok
}

// QueryOutcome is one kind of interactive query reply: its result
// ("answered", "not_found", "unavailable", "bad_request", "error") and
// cause (the role that answered, or why none could).
type QueryOutcome struct {
	Result, Cause string
}

// queryCounts counts the replies of the run's interactive queries.
type queryCounts struct {
	mu sync.Mutex
	n  map[QueryOutcome]int64
}

// CountQuery counts one interactive query reply (the query server calls
// it for every request a client sent to this instance).
func (r *Runtime) CountQuery(o QueryOutcome) {
	q := &r.standby.queries
	q.mu.Lock()
	if q.n == nil {
		q.n = map[QueryOutcome]int64{}
	}
	q.n[o]++
	q.mu.Unlock()
}

// QueryCounts returns how many replies of each outcome the run's queries
// got, ordered by result, then cause.
func (r *Runtime) QueryCounts() ([]QueryOutcome, []int64) {
	q := &r.standby.queries
	q.mu.Lock()
	defer q.mu.Unlock()
	os := make([]QueryOutcome, 0, len(q.n))
	for o := range q.n {
		os = append(os, o)
	}
	sort.Slice(os, func(i, j int) bool {
		if os[i].Result != os[j].Result {
			return os[i].Result < os[j].Result
		}
		return os[i].Cause < os[j].Cause
	})
	ns := make([]int64, len(os))
	for i, o := range os {
		ns[i] = q.n[o]
	}
	return os, ns
}

// running reports whether the task runs here, restored.
func (ts *Tasks) running(id processor.TaskID) bool {
	ts.mu.Lock()
	t, ok := ts.m[id]
	ts.mu.Unlock()
	if !ok {
		return false
	}
	select {
	case <-t.ready:
		return t.err == nil
	default:
		return false
	}
}

// GroupMembers describes the members of the application's consumer group
// with the data they advertise (see SetMemberData).
func (r *Runtime) GroupMembers(ctx context.Context) ([]kafka.GroupMember, error) {
	return r.admin.GroupMembers(ctx, r.cfg.ApplicationID)
}
