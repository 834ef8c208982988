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
type owners struct {
	members Members
	subOf   func(topic string) (int, bool)

	mu      sync.Mutex
	m       map[processor.TaskID]Owner
	addrs   map[string]string // member id → advertised address, as reported
	fetched time.Time
}

// refreshEvery bounds how often a miss reads the group from the
// coordinator.
const refreshEvery = 100 * time.Millisecond

// lookup returns the owner of a task: the cached one if the cache was
// read at or after notBefore (the zero time accepts any), else after
// reading the group again. A retry after an owner turned a request away
// passes the time of the failed attempt: concurrent retries share one
// read.
func (o *owners) lookup(ctx context.Context, id processor.TaskID, notBefore time.Time) (Owner, bool, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	fresh := !o.fetched.IsZero() && !o.fetched.Before(notBefore)
	if own, ok := o.m[id]; ok && fresh {
		return own, true, nil
	}
	if fresh && time.Since(o.fetched) < refreshEvery {
		return Owner{}, false, nil
	}
	ms, err := o.members(ctx)
	if err != nil {
		return Owner{}, false, fmt.Errorf("query: group members: %w", err)
	}
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
	o.m, o.addrs, o.fetched = m, addrs, time.Now()
	own, ok := m[id]
	return own, ok, nil
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
