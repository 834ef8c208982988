package kafka

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDeparted(t *testing.T) {
	for _, c := range []struct {
		name      string
		prev, cur []string
		self      string
		want      []string
	}{
		{"the lowest survivor fences", []string{"a-1", "a-2", "a-3"}, []string{"a-1", "a-3"}, "a-1", []string{"a-2"}},
		{"another survivor does not", []string{"a-1", "a-2", "a-3"}, []string{"a-1", "a-3"}, "a-3", nil},
		{"the lowest departed: the next fences", []string{"a-1", "a-2", "a-3"}, []string{"a-2", "a-3"}, "a-2", []string{"a-1"}},
		{"several departed", []string{"a-1", "a-2", "a-3", "a-4"}, []string{"a-3"}, "a-3", []string{"a-1", "a-2", "a-4"}},
		{"nobody left", []string{"a-1", "a-2"}, []string{"a-1", "a-2", "a-3"}, "a-1", nil},
		{"a new member knows no previous generation", nil, []string{"a-1", "a-3"}, "a-3", nil},
		{"a member that missed the previous generation", []string{"a-1", "a-2"}, []string{"a-1", "a-3"}, "a-3", nil},
		{"at-least-once", nil, nil, "", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, Departed(c.prev, c.cur, c.self))
		})
	}
}

// TestTransactionalIDsRoundTrip: a subscription carries the member's
// transactional id, an assignment the generation's; data without them
// decodes as before.
func TestTransactionalIDsRoundTrip(t *testing.T) {
	sub := subscription{generation: 7, memberData: []byte("host:1"), lags: map[TaskID]int64{{"a", 1}: 3}, txnID: "app-x"}
	require.Equal(t, sub, decodeSubscription(encodeSubscription(sub)))
	sub.lags, sub.memberData = nil, nil
	require.Equal(t, sub, decodeSubscription(encodeSubscription(sub)))
	plain := subscription{generation: 3, sizes: map[TaskID]int64{{"a", 0}: 9}}
	require.Equal(t, plain, decodeSubscription(encodeSubscription(plain)))

	ids := txnIDsOf([]string{"app-y", "", "app-x", "app-y"}, 3)
	require.Equal(t, []string{"app-x", "app-y"}, ids)
	a := decodeAssignment(encodeAssignment(nil, []TaskID{{"a", 1}}, nil, ids...))
	require.Equal(t, memberAssignment{standby: []TaskID{{"a", 1}}, txnIDs: ids}, a)
	require.Equal(t, memberAssignment{txnIDs: ids}, decodeAssignment(encodeAssignment(nil, nil, nil, ids...)))
	require.Nil(t, txnIDsOf([]string{""}, 1))
	require.Nil(t, txnIDsOf([]string{"app-x"}, maxPeersBytes), "too large for every assignment")
}
