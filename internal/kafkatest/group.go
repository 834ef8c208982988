package kafkatest

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// GroupSettled reports whether the consumer group is Stable (no rebalance
// under way) with n members, each assigned at least one partition. A test
// that stops a member gracefully waits for it first: a member stopped
// while the group rebalances may not commit its last offsets (the
// generation moved on), and under at-least-once its successor processes
// them again.
func GroupSettled(t testing.TB, env *Env, group string, n int) bool {
	t.Helper()
	cl := client(t, env)
	defer cl.Close()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(ctx(t), cl)
	require.NoError(t, err, "describe group %q", group)
	if len(resp.Groups) != 1 {
		return false
	}
	g := resp.Groups[0]
	if kerr.ErrorForCode(g.ErrorCode) != nil || g.State != "Stable" || len(g.Members) != n {
		return false
	}
	for _, m := range g.Members {
		var a kmsg.ConsumerMemberAssignment
		if err := a.ReadFrom(m.MemberAssignment); err != nil || len(a.Topics) == 0 {
			return false
		}
		parts := 0
		for _, tp := range a.Topics {
			parts += len(tp.Partitions)
		}
		if parts == 0 {
			return false
		}
	}
	return true
}
