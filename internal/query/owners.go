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
}

// Members reads the group's members; kafka.Admin.GroupMembers does.
type Members func(ctx context.Context) ([]kafka.GroupMember, error)

// owners maps tasks to the members that run them. The map comes from the
// group coordinator (DescribeGroups: every member's subscription carries its
// advertised address, and its current assignment), so any instance — and
// any client of the cluster — can build it without trusting a leader's
// copy; it is cached and read again on a miss or when an owner says it no
// longer runs the task, at most once per refreshEvery.
type owners struct {
	members Members
	subOf   func(topic string) (int, bool)

	mu      sync.Mutex
	m       map[processor.TaskID]Owner
	fetched time.Time
}

// refreshEvery bounds how often the owner map is read from the
// coordinator.
const refreshEvery = 100 * time.Millisecond

// lookup returns the owner of a task; refresh forces a new read of the
// group (after the cached owner turned the request away).
func (o *owners) lookup(ctx context.Context, id processor.TaskID, refresh bool) (Owner, bool, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if own, ok := o.m[id]; ok && !refresh {
		return own, true, nil
	}
	if !o.fetched.IsZero() && time.Since(o.fetched) < refreshEvery {
		own, ok := o.m[id]
		return own, ok, nil
	}
	ms, err := o.members(ctx)
	if err != nil {
		return Owner{}, false, fmt.Errorf("query: group members: %w", err)
	}
	m := map[processor.TaskID]Owner{}
	for _, mem := range ms {
		for topic, parts := range mem.Assigned {
			sub, ok := o.subOf(topic)
			if !ok {
				continue
			}
			for _, p := range parts {
				m[processor.TaskID{Subtopology: sub, Partition: p}] = Owner{Member: mem.ID, Addr: string(mem.Data)}
			}
		}
	}
	o.m, o.fetched = m, time.Now()
	own, ok := m[id]
	return own, ok, nil
}
