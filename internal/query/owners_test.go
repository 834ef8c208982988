package query

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/processor"
)

// Apache Kafka 4 describes a rebalancing group's members with their
// current assignment but without their subscriptions: the owners stay
// known, and so do their addresses, from an earlier read.
func TestOwnersKeepAddressesThroughARebalance(t *testing.T) {
	stable := []kafka.GroupMember{{ID: "m1", Data: []byte("10.0.0.1:80"), Reported: true, Assigned: map[string][]int32{"in": {0}}}}
	rebalancing := []kafka.GroupMember{{ID: "m1", Assigned: map[string][]int32{"in": {0}}}}
	reads := [][]kafka.GroupMember{stable, rebalancing}
	o := &owners{
		members: func(context.Context) ([]kafka.GroupMember, error) {
			ms := reads[0]
			if len(reads) > 1 {
				reads = reads[1:]
			}
			return ms, nil
		},
		subOf: func(string) (int, bool) { return 0, true },
	}
	id := processor.TaskID{Partition: 0}
	own, ok, _, err := o.lookup(context.Background(), id, time.Time{})
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "10.0.0.1:80", own.Addr)
	own, ok, _, err = o.lookup(context.Background(), id, time.Now()) // read again
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "10.0.0.1:80", own.Addr, "the address survives a read without subscriptions")
	require.False(t, own.unreported)
}

// An owner whose subscription no read reported has an unknown address; one
// whose reported subscription has none advertises none.
func TestOwnersTellUnknownFromEmptyAddresses(t *testing.T) {
	o := &owners{
		members: func(context.Context) ([]kafka.GroupMember, error) {
			return []kafka.GroupMember{
				{ID: "new", Assigned: map[string][]int32{"in": {0}}},
				{ID: "bare", Reported: true, Assigned: map[string][]int32{"in": {1}}},
			}, nil
		},
		subOf: func(string) (int, bool) { return 0, true },
	}
	own, ok, _, err := o.lookup(context.Background(), processor.TaskID{Partition: 0}, time.Time{})
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, own.unreported)
	own, ok, _, err = o.lookup(context.Background(), processor.TaskID{Partition: 1}, time.Time{})
	require.NoError(t, err)
	require.True(t, ok)
	require.False(t, own.unreported)
	require.Empty(t, own.Addr)
	_, ok, _, err = o.lookup(context.Background(), processor.TaskID{Partition: 2}, time.Time{})
	require.NoError(t, err)
	require.False(t, ok, "no owner")
}

// A member described without assignment (kfake, mid-rebalance) keeps the
// tasks it ran; a member that left does not.
func TestOwnersKeepTasksOfMembersDescribedWithoutAssignment(t *testing.T) {
	reads := [][]kafka.GroupMember{
		{
			{ID: "m1", Data: []byte("a:1"), Reported: true, Assigned: map[string][]int32{"in": {0}}},
			{ID: "m2", Data: []byte("a:2"), Reported: true, Assigned: map[string][]int32{"in": {1}}},
		},
		{{ID: "m1"}}, // rebalancing: m2 left
	}
	o := &owners{
		members: func(context.Context) ([]kafka.GroupMember, error) {
			ms := reads[0]
			if len(reads) > 1 {
				reads = reads[1:]
			}
			return ms, nil
		},
		subOf: func(string) (int, bool) { return 0, true },
	}
	_, ok, _, err := o.lookup(context.Background(), processor.TaskID{Partition: 0}, time.Time{})
	require.NoError(t, err)
	require.True(t, ok)
	own, ok, _, err := o.lookup(context.Background(), processor.TaskID{Partition: 0}, time.Now())
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, Owner{Member: "m1", Addr: "a:1"}, own)
	_, ok, _, err = o.lookup(context.Background(), processor.TaskID{Partition: 1}, time.Now())
	require.NoError(t, err)
	require.False(t, ok, "m2 left: partition 1 has no owner")
}

// An owner that joined in a rebalance the group has not left since (no
// read reported its subscription) has the address the assignments carry:
// the leader writes every member's into each of them.
func TestOwnersTakeAddressesFromAssignments(t *testing.T) {
	o := &owners{
		members: func(context.Context) ([]kafka.GroupMember, error) {
			peers := map[string][]byte{"old": []byte("10.0.0.1:80"), "new": []byte("10.0.0.2:80"), "bare": nil}
			return []kafka.GroupMember{
				{ID: "old", Assigned: map[string][]int32{"in": {0}}, Peers: peers},
				{ID: "new", Assigned: map[string][]int32{"in": {1}}, Peers: peers},
				{ID: "bare", Assigned: map[string][]int32{"in": {2}}},
				{ID: "unknown", Assigned: map[string][]int32{"in": {3}}},
			}, nil
		},
		subOf: func(string) (int, bool) { return 0, true },
	}
	for p, want := range []Owner{{Member: "old", Addr: "10.0.0.1:80"}, {Member: "new", Addr: "10.0.0.2:80"}, {Member: "bare"}, {Member: "unknown", unreported: true}} {
		own, ok, _, err := o.lookup(context.Background(), processor.TaskID{Partition: int32(p)}, time.Time{})
		require.NoError(t, err)
		require.True(t, ok)
		require.Equal(t, want, own, "partition %d", p)
	}
}
