package query

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/processor"
)

// Owner is the group member that runs a task, and the HTTP address it
// advertised.
type Owner struct {
	Member string `json:"member"`
	Addr   string `json:"addr"`
	// unreported: the coordinator did not report the member's
	// subscription (the group is rebalancing) and no earlier read did, so
	// its address is unknown — not empty.
	unreported bool
}

// Members reads the group's members; kafka.Admin.GroupMembers does.
type Members func(ctx context.Context) ([]kafka.GroupMember, error)

// owners maps tasks to the members that run them. The map comes from the
// group coordinator (DescribeGroups: every member's subscription carries its
// advertised address, and its current assignment), so any instance — and
// any client of the cluster — can build it without trusting a leader's
// copy; it is cached and read again on a miss (at most once per
// refreshEvery) or when an owner turned a request away.
//
// While the group rebalances, Apache Kafka describes the members with the
// assignment they still run but without their subscriptions. A member's
// address does not change while it is a member, so owners remembers the
// address of every member from the reads that reported it, and uses it
// when a later read does not (such owners would look address-less);
// a member no read reported is looked up in the addresses the
// assignments carry (kafka.GroupMember.Peers: the leader writes every
// member's into each assignment), so an owner that joined in a rebalance
// the group has not left since has a known address too.
// kfake describes them without assignment either: a member still listed
// keeps the tasks it ran until a read reports its new assignment.
//
// When the group cannot be read — its coordinator's broker died, and
// until the cluster moves the group to another broker every describe
// fails — the map of the last read that succeeded serves, with its age
// (staleMap): the owners were alive when the coordinator died, and most
// still run their tasks. A stale map may name an owner that has since
// given a task up; an owner answers only what it runs (a forwarded
// request for anything else is turned away with 421, and the router asks
// the other instances once), so a stale map can cost an answer, never make
// one wrong.
type owners struct {
	members Members
	subOf   func(topic string) (int, bool)

	mu      sync.Mutex
	m       map[processor.TaskID]Owner
	addrs   map[string]string // member id → advertised address, as reported
	fetched time.Time         // when the read m comes from started
	// reading is the read in flight, if any: lookups wait for it rather
	// than start another.
	reading *groupRead
	// readErr is the error of the last read, nil if it succeeded; ended
	// is when that read ended.
	readErr error
	ended   time.Time
}

// groupRead is one read of the group; done is closed when it has ended
// and its result is applied.
type groupRead struct {
	done    chan struct{}
	started time.Time
}

// staleMap describes an owner map that is not current: the last read of
// the group failed with Err, and the map is the one a read that started
// Age ago returned.
type staleMap struct {
	Age time.Duration
	Err error
}

// refreshEvery bounds how often a miss reads the group from the
// coordinator, and how often reads are tried while they fail.
const refreshEvery = 100 * time.Millisecond

// readWait bounds how long a lookup waits for a read of the group when a
// map from an earlier read can serve instead (a stalled coordinator's
// broker holds a describe for the client's network timeout). readTimeout
// bounds a read's context.
const (
	readWait    = time.Second
	readTimeout = 30 * time.Second
)

// errReadSlow is the staleMap error of a lookup that did not wait for a
// slow read.
var errReadSlow = fmt.Errorf("query: group members: the group coordinator has not answered within %v", readWait)

// lookup returns the owner of a task: the cached one if the cache was
// read at or after notBefore (the zero time accepts any), else after
// reading the group again. A retry after an owner turned a request away
// passes the time of the failed attempt: concurrent retries share one
// read. If the group cannot be read (or not within readWait), the map of
// the last read that succeeded serves and stale says how old it is and
// why; with no such map, lookup returns the read's error.
func (o *owners) lookup(ctx context.Context, id processor.TaskID, notBefore time.Time) (own Owner, ok bool, stale *staleMap, err error) {
	o.mu.Lock()
	fresh := !o.fetched.IsZero() && !o.fetched.Before(notBefore)
	own, ok = o.m[id]
	switch {
	case ok && fresh:
		defer o.mu.Unlock()
		return own, true, o.staleness(), nil
	case fresh && time.Since(o.ended) < refreshEvery:
		defer o.mu.Unlock()
		return Owner{}, false, o.staleness(), nil
	case o.readErr != nil && !o.fetched.IsZero() && time.Since(o.ended) < refreshEvery:
		// Reads fail: not another one before refreshEvery has passed.
		defer o.mu.Unlock()
		return own, ok, o.staleness(), nil
	}
	rd := o.reading
	if rd == nil {
		rd = &groupRead{done: make(chan struct{}), started: time.Now()}
		o.reading = rd
		go o.read(rd)
	}
	haveMap := !o.fetched.IsZero()
	o.mu.Unlock()

	var slow <-chan time.Time
	if haveMap {
		t := time.NewTimer(readWait)
		defer t.Stop()
		slow = t.C
	}
	done := true
	select {
	case <-rd.done:
	case <-slow:
		done = false
	case <-ctx.Done():
		done = false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.fetched.IsZero() {
		if done && o.readErr != nil {
			return Owner{}, false, nil, o.readErr
		}
		return Owner{}, false, nil, fmt.Errorf("query: group members: %w", ctx.Err())
	}
	own, ok = o.m[id]
	stale = o.staleness()
	if !done && stale == nil && o.fetched.Before(rd.started) {
		stale = &staleMap{Age: time.Since(o.fetched), Err: errReadSlow}
	}
	return own, ok, stale, nil
}

// staleness describes the map if the last read failed, nil if it
// succeeded.
func (o *owners) staleness() *staleMap {
	if o.readErr == nil {
		return nil
	}
	return &staleMap{Age: time.Since(o.fetched), Err: o.readErr}
}

// read reads the group for rd and applies the result.
func (o *owners) read(rd *groupRead) {
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	ms, err := o.members(ctx)
	cancel()
	o.mu.Lock()
	defer o.mu.Unlock()
	defer close(rd.done)
	o.reading, o.ended = nil, time.Now()
	if err != nil {
		o.readErr = fmt.Errorf("query: group members: %w", err)
		return
	}
	o.apply(ms, rd.started)
}

// apply makes ms, read from started on, the map.
func (o *owners) apply(ms []kafka.GroupMember, started time.Time) {
	addrs := make(map[string]string, len(ms))
	peers := map[string][]byte{} // the members' data their assignments carry
	for _, mem := range ms {
		for id, data := range mem.Peers {
			peers[id] = data
		}
	}
	m := map[processor.TaskID]Owner{}
	for _, mem := range ms {
		addr, known := string(mem.Data), mem.Reported
		if !known {
			addr, known = o.addrs[mem.ID]
		}
		if !known {
			var data []byte
			data, known = peers[mem.ID]
			addr = string(data)
		}
		if known {
			addrs[mem.ID] = addr
		}
		for topic, parts := range mem.Assigned {
			sub, ok := o.subOf(topic)
			if !ok {
				continue
			}
			for _, p := range parts {
				m[processor.TaskID{Subtopology: sub, Partition: p}] = Owner{Member: mem.ID, Addr: addr, unreported: !known}
			}
		}
	}
	// A member described without assignment (kfake, mid-rebalance) keeps
	// the tasks it ran: under the cooperative protocol it runs them until
	// a new assignment revokes them, and if it no longer does it turns
	// the forwarded request away (421).
	for _, mem := range ms {
		if len(mem.Assigned) > 0 || mem.Reported {
			continue
		}
		for tid, own := range o.m {
			if _, taken := m[tid]; !taken && own.Member == mem.ID {
				if addr, known := addrs[mem.ID]; known {
					own.Addr, own.unreported = addr, false
				}
				m[tid] = own
			}
		}
	}
	o.m, o.addrs, o.fetched, o.readErr = m, addrs, started, nil
}

// sharing returns another member that the last read listed with own's
// address: own was replaced by an instance restarted at the same address
// (a member's address does not change while it is a member).
func (o *owners) sharing(own Owner) (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for id, a := range o.addrs {
		if a == own.Addr && id != own.Member && a != "" {
			return id, true
		}
	}
	return "", false
}

// addresses returns the distinct addresses of the members the last read
// listed, as far as known.
func (o *owners) addresses() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, a := range o.addrs {
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out
}
