package query

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/kafka"
)

// routeServer is a server with no runtime whose group reads come from
// members, for elsewhere: this instance runs no partition.
func routeServer(members Members) *server {
	return &server{
		cfg:    Config{Self: "127.0.0.1:9", Client: &http.Client{Timeout: 2 * time.Second}},
		owners: &owners{members: members, subOf: func(string) (int, bool) { return 0, true }},
	}
}

// deadAddr is an address nothing listens on.
func deadAddr(t *testing.T) string {
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.Listener.Addr().String()
	srv.Close()
	return addr
}

// answering serves every query with a 200 naming role, and counts them;
// as an instance does, a copy that is not the owner's ("standby") turns an
// owner-only query away (421).
func answering(role string, n *atomic.Int32) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if role != tasks.RoleActive && r.URL.Query().Get(MaxLagParam) == "" {
			writeError(w, http.StatusMisdirectedRequest, apiError{Error: "query: does not run partition 0"})
			return
		}
		n.Add(1)
		writeJSON(w, http.StatusOK, KeyReply{Store: "s", Key: "k", Value: 1, ServedBy: r.Host, Role: role})
	}))
}

func routeQuery(t *testing.T, s *server, path string, bound int64) (int, apiError, KeyReply, time.Duration) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	rec := httptest.NewRecorder()
	start := time.Now()
	s.elsewhere(rec, req, tasks.StoreInfo{}, 0, fmt.Errorf("x: %w", tasks.ErrNotOwner), apiError{}, bound, "")
	took := time.Since(start)
	var e apiError
	var k KeyReply
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &e))
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &k))
	return rec.Code, e, k, took
}

// An owner killed outright stays listed until its session times out, and
// then the group moves its partition: a query that finds it unreachable
// waits for that (up to RebalanceWait) instead of answering 503
// unreachable after one more read of the group.
func TestElsewhereWaitsForAnUnreachableOwnerToBeReplaced(t *testing.T) {
	t.Parallel() // mostly waits: beside the other tests that do
	var served atomic.Int32
	next := answering("active", &served)
	defer next.Close()
	dead := deadAddr(t)
	moved := time.Now().Add(400 * time.Millisecond) // the dead member's session ends
	s := routeServer(func(context.Context) ([]kafka.GroupMember, error) {
		if time.Now().Before(moved) {
			return []kafka.GroupMember{{ID: "killed", Data: []byte(dead), Reported: true, Assigned: map[string][]int32{"in": {0}}}}, nil
		}
		return []kafka.GroupMember{{ID: "next", Data: []byte(next.Listener.Addr().String()), Reported: true, Assigned: map[string][]int32{"in": {0}}}}, nil
	})
	status, e, k, _ := routeQuery(t, s, "/stores/s/keys/k", -1)
	require.Equal(t, http.StatusOK, status, e.Error)
	require.Equal(t, "active", k.Role)
	require.EqualValues(t, 1, served.Load())

	// Never replaced: 503 unreachable, naming the owner and why, once the
	// wait is over.
	s = routeServer(func(context.Context) ([]kafka.GroupMember, error) {
		return []kafka.GroupMember{{ID: "killed", Data: []byte(dead), Reported: true, Assigned: map[string][]int32{"in": {0}}}}, nil
	})
	status, e, _, took := routeQuery(t, s, "/stores/s/keys/k", -1)
	require.Equal(t, http.StatusServiceUnavailable, status)
	require.Equal(t, CauseUnreachable, e.Cause)
	require.Contains(t, e.Error, dead)
	require.Contains(t, e.Error, "connection refused")
	require.GreaterOrEqual(t, took, RebalanceWait)
}

// A query with maxLag whose owner cannot answer asks the other
// instances, which answer from their copies; one without maxLag does not.
func TestElsewhereAsksOtherCopiesWithMaxLag(t *testing.T) {
	t.Parallel() // mostly waits: beside the other tests that do
	var served atomic.Int32
	standby := answering("standby", &served)
	defer standby.Close()
	dead := deadAddr(t)
	s := routeServer(func(context.Context) ([]kafka.GroupMember, error) {
		return []kafka.GroupMember{
			{ID: "killed", Data: []byte(dead), Reported: true, Assigned: map[string][]int32{"in": {0}}},
			{ID: "self", Data: []byte("127.0.0.1:9"), Reported: true, Assigned: map[string][]int32{"in": {1}}},
			{ID: "other", Data: []byte(standby.Listener.Addr().String()), Reported: true, Assigned: map[string][]int32{"in": {2}}},
		}, nil
	})
	status, e, k, took := routeQuery(t, s, "/stores/s/keys/k?maxLag=10", 10)
	require.Equal(t, http.StatusOK, status, e.Error)
	require.Equal(t, "standby", k.Role)
	require.Less(t, took, RebalanceWait, "no wait for the owner")
	require.EqualValues(t, 1, served.Load())

	status, e, _, _ = routeQuery(t, s, "/stores/s/keys/k", -1)
	require.Equal(t, http.StatusServiceUnavailable, status)
	require.Equal(t, CauseUnreachable, e.Cause)
	require.EqualValues(t, 1, served.Load(), "owner-only: no copy asked")
	require.False(t, strings.Contains(e.Error, MaxLagParam), e.Error)
}

// A killed owner's address now serving a restarted instance (another
// member, which does not run the partition yet) is named as such, not as a
// partition moving.
func TestElsewhereNamesAnOwnerReplacedAtItsAddress(t *testing.T) {
	t.Parallel() // mostly waits: beside the other tests that do
	restarted := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusMisdirectedRequest, apiError{Error: "query: does not run partition 0"})
	}))
	defer restarted.Close()
	addr := restarted.Listener.Addr().String()
	listed := []kafka.GroupMember{{ID: "killed", Data: []byte(addr), Reported: true, Assigned: map[string][]int32{"in": {0}}}}
	s := routeServer(func(context.Context) ([]kafka.GroupMember, error) { return listed, nil })
	status, e, _, _ := routeQuery(t, s, "/stores/s/keys/k", -1)
	require.Equal(t, http.StatusServiceUnavailable, status)
	require.Equal(t, CauseMoving, e.Cause, "no other member at the address: the partition is moving")

	listed = append(listed, kafka.GroupMember{ID: "restarted", Data: []byte(addr), Reported: true})
	s = routeServer(func(context.Context) ([]kafka.GroupMember, error) { return listed, nil })
	status, e, _, _ = routeQuery(t, s, "/stores/s/keys/k", -1)
	require.Equal(t, http.StatusServiceUnavailable, status)
	require.Equal(t, CauseOwnerRestarted, e.Cause, e.Error)
	require.Contains(t, e.Error, "member killed, is gone: its address "+addr+" is member restarted's now")
}

// ?wait= sets how long a query waits for an owner: an owner replaced after
// 2 s answers a query that waits 3 s, not one that waits the default.
func TestElsewhereWaitsAsLongAsTheQueryAsks(t *testing.T) {
	t.Parallel() // mostly waits: beside the other tests that do
	var served atomic.Int32
	next := answering("active", &served)
	defer next.Close()
	dead := deadAddr(t)
	var moved time.Time
	s := routeServer(func(context.Context) ([]kafka.GroupMember, error) {
		if time.Now().Before(moved) {
			return []kafka.GroupMember{{ID: "killed", Data: []byte(dead), Reported: true, Assigned: map[string][]int32{"in": {0}}}}, nil
		}
		return []kafka.GroupMember{{ID: "next", Data: []byte(next.Listener.Addr().String()), Reported: true, Assigned: map[string][]int32{"in": {0}}}}, nil
	})
	moved = time.Now().Add(2 * time.Second)
	status, e, _, _ := routeQuery(t, s, "/stores/s/keys/k", -1)
	require.Equal(t, http.StatusServiceUnavailable, status)
	require.Equal(t, CauseUnreachable, e.Cause)

	s.owners = &owners{members: s.owners.members, subOf: s.owners.subOf}
	moved = time.Now().Add(2 * time.Second)
	status, e, _, took := routeQuery(t, s, "/stores/s/keys/k?wait=3s", -1)
	require.Equal(t, http.StatusOK, status, e.Error)
	require.GreaterOrEqual(t, took, 1900*time.Millisecond)

	for _, bad := range []string{"x", "-1s", "31s"} {
		_, err := ownerWait(httptest.NewRequest(http.MethodGet, "/stores/s/keys/k?wait="+bad, nil))
		require.ErrorContains(t, err, "query: wait \""+bad+"\" is not a duration in [0s, 30s]")
	}
}

// An instance starting at the owner's address (503, topics not ready) is
// not the owner the group lists but one restarted there: its 503 is not
// passed on as the asked instance's own "starting".
func TestElsewhereDoesNotPassOnAStartingInstancesCause(t *testing.T) {
	starting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusServiceUnavailable, apiError{Error: "query: starting: topics not ready", Cause: CauseStarting})
	}))
	defer starting.Close()
	addr := starting.Listener.Addr().String()
	s := routeServer(func(context.Context) ([]kafka.GroupMember, error) {
		return []kafka.GroupMember{{ID: "killed", Data: []byte(addr), Reported: true, Assigned: map[string][]int32{"in": {0}}}}, nil
	})
	status, e, _, _ := routeQuery(t, s, "/stores/s/keys/k?wait=200ms", -1)
	require.Equal(t, http.StatusServiceUnavailable, status)
	require.Equal(t, CauseOwnerRestarted, e.Cause, e.Error)
	require.Contains(t, e.Error, "member killed, is gone: the instance at its address "+addr+" restarted and is starting")
}
