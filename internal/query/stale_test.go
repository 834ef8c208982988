package query

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/processor"
)

// errCoordinatorDied is what a read of the group returns while its
// coordinator's broker is dead (issue 43).
var errCoordinatorDied = fmt.Errorf("kafka: describe group %q: %w", "app", io.EOF)

// failingAfter returns a Members that lists ms for its first n reads and
// fails from then on, and the count of reads.
func failingAfter(n int32, ms []kafka.GroupMember) (Members, *atomic.Int32) {
	var reads atomic.Int32
	return func(context.Context) ([]kafka.GroupMember, error) {
		if reads.Add(1) > n {
			return nil, errCoordinatorDied
		}
		return ms, nil
	}, &reads
}

// While the group cannot be read, the map of the last read that succeeded
// serves, with its age and the read's error; failing reads are not tried
// again more often than every refreshEvery; a read that succeeds again
// makes the map current.
func TestOwnersServeTheLastMapWhileTheGroupCannotBeRead(t *testing.T) {
	listed := []kafka.GroupMember{{ID: "m1", Data: []byte("10.0.0.1:80"), Reported: true, Assigned: map[string][]int32{"in": {0}}}}
	var down atomic.Bool
	var reads atomic.Int32
	o := &owners{
		members: func(context.Context) ([]kafka.GroupMember, error) {
			reads.Add(1)
			if down.Load() {
				return nil, errCoordinatorDied
			}
			return listed, nil
		},
		subOf: func(string) (int, bool) { return 0, true },
	}
	id := processor.TaskID{Partition: 0}
	own, ok, stale, err := o.lookup(t.Context(), id, time.Time{})
	require.NoError(t, err)
	require.True(t, ok)
	require.Nil(t, stale, "a map just read is current")
	read := time.Now()

	down.Store(true)
	time.Sleep(150 * time.Millisecond)
	own, ok, stale, err = o.lookup(t.Context(), id, time.Now()) // a retry: read again, which fails
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "10.0.0.1:80", own.Addr)
	require.NotNil(t, stale)
	require.ErrorIs(t, stale.Err, io.EOF)
	require.ErrorContains(t, stale.Err, "query: group members: kafka: describe group")
	require.GreaterOrEqual(t, stale.Age, 150*time.Millisecond)
	require.LessOrEqual(t, stale.Age, time.Since(read)+time.Millisecond)
	require.EqualValues(t, 2, reads.Load())

	_, ok, stale, err = o.lookup(t.Context(), id, time.Now())
	require.NoError(t, err)
	require.True(t, ok)
	require.NotNil(t, stale)
	require.EqualValues(t, 2, reads.Load(), "no read again within refreshEvery of a failed one")
	_, ok, stale, _ = o.lookup(t.Context(), id, time.Time{}) // a first attempt: the cache, stale
	require.True(t, ok)
	require.NotNil(t, stale, "the map is stale for a first attempt too")

	down.Store(false)
	time.Sleep(refreshEvery)
	_, ok, stale, err = o.lookup(t.Context(), id, time.Now())
	require.NoError(t, err)
	require.True(t, ok)
	require.Nil(t, stale, "a read succeeded: the map is current again")
}

// With no map read before, a failed read is the lookup's error.
func TestOwnersWithoutAMapFailWithTheRead(t *testing.T) {
	members, _ := failingAfter(0, nil)
	o := &owners{members: members, subOf: func(string) (int, bool) { return 0, true }}
	_, ok, stale, err := o.lookup(t.Context(), processor.TaskID{}, time.Time{})
	require.False(t, ok)
	require.Nil(t, stale)
	require.ErrorIs(t, err, io.EOF)
	require.ErrorContains(t, err, "query: group members:")
}

// A read the coordinator does not answer (a stalled broker holds it for
// the client's network timeout) is not waited for beyond readWait when a
// map can serve; its result is applied when it comes, and concurrent
// lookups share it.
func TestOwnersDoNotWaitForASlowRead(t *testing.T) {
	listed := []kafka.GroupMember{{ID: "m1", Data: []byte("10.0.0.1:80"), Reported: true, Assigned: map[string][]int32{"in": {0}}}}
	release := make(chan struct{})
	var reads atomic.Int32
	o := &owners{
		members: func(context.Context) ([]kafka.GroupMember, error) {
			if reads.Add(1) > 1 {
				<-release
			}
			return listed, nil
		},
		subOf: func(string) (int, bool) { return 0, true },
	}
	id := processor.TaskID{Partition: 0}
	_, _, _, err := o.lookup(t.Context(), id, time.Time{})
	require.NoError(t, err)

	start := time.Now()
	done := make(chan *staleMap, 2)
	for range 2 {
		go func() {
			_, ok, stale, err := o.lookup(t.Context(), id, time.Now())
			if err != nil || !ok {
				stale = nil
			}
			done <- stale
		}()
	}
	for range 2 {
		stale := <-done
		require.NotNil(t, stale)
		require.ErrorIs(t, stale.Err, errReadSlow)
	}
	took := time.Since(start)
	require.GreaterOrEqual(t, took, readWait)
	require.Less(t, took, readWait+500*time.Millisecond)
	require.EqualValues(t, 2, reads.Load(), "the lookups shared one read")

	close(release)
	require.Eventually(t, func() bool {
		_, _, stale, err := o.lookup(t.Context(), id, time.Time{})
		return err == nil && stale == nil
	}, time.Second, 10*time.Millisecond, "the slow read's result is applied when it comes")
}

// owner serves forwarded queries as an instance that runs the partition
// (200, role active) or, refusing, one that does not (421); it keeps the
// age of the owner map each forwarded query carried.
type owner struct {
	srv    *httptest.Server
	runs   atomic.Bool
	served atomic.Int32
	age    atomic.Int64 // the last forwarded age; -1: none
}

func newOwner(t *testing.T, runs bool) *owner {
	o := &owner{}
	o.age.Store(-1)
	o.runs.Store(runs)
	o.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(ForwardedHeader) == "" {
			t.Errorf("a query reached an owner unforwarded")
		}
		if a := forwardedOwnerMapAge(r); a != nil {
			o.age.Store(*a)
		}
		if !o.runs.Load() {
			writeError(w, http.StatusMisdirectedRequest, apiError{Error: "query: does not run partition 0"})
			return
		}
		o.served.Add(1)
		writeJSON(w, http.StatusOK, KeyReply{Store: "s", Key: "k", Value: 1, ServedBy: o.srv.Listener.Addr().String(), Role: "active",
			OwnerMapAgeMs: forwardedOwnerMapAge(r)})
	}))
	t.Cleanup(o.srv.Close)
	return o
}

func (o *owner) addr() string { return o.srv.Listener.Addr().String() }

// routeQueryHeader is routeQuery with the reply's OwnerMapAgeHeader.
func routeQueryHeader(t *testing.T, s *server, path string) (int, apiError, KeyReply, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	rec := httptest.NewRecorder()
	s.elsewhere(rec, req, tasks.StoreInfo{}, 0, fmt.Errorf("x: %w", tasks.ErrNotOwner), apiError{}, -1, "")
	var e apiError
	var k KeyReply
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &e))
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &k))
	return rec.Code, e, k, rec.Header().Get(OwnerMapAgeHeader)
}

// The group's coordinator died (every read fails) after the instance read
// the group once: queries are forwarded to the owner the last map names,
// which answers, and the reply says how old the map is — in
// OwnerMapAgeHeader and in the owner's body, to which the forward carried
// it.
func TestElsewhereServesFromTheLastMapWhileTheGroupCannotBeRead(t *testing.T) {
	own := newOwner(t, true)
	members, reads := failingAfter(1, []kafka.GroupMember{{ID: "m1", Data: []byte(own.addr()), Reported: true, Assigned: map[string][]int32{"in": {0}}}})
	s := routeServer(members)
	status, e, k, age := routeQueryHeader(t, s, "/stores/s/keys/k")
	require.Equal(t, http.StatusOK, status, e.Error)
	require.Empty(t, age, "a current map: no age")
	require.Nil(t, k.OwnerMapAgeMs)

	time.Sleep(200 * time.Millisecond)
	_, _, _, err := s.owners.lookup(t.Context(), processor.TaskID{}, time.Now()) // a miss reads the group: it fails
	require.NoError(t, err)
	require.EqualValues(t, 2, reads.Load())
	for range 3 {
		status, e, k, age = routeQueryHeader(t, s, "/stores/s/keys/k")
		require.Equal(t, http.StatusOK, status, e.Error)
		require.Equal(t, "active", k.Role)
		ms, err := strconv.ParseInt(age, 10, 64)
		require.NoError(t, err, "the reply says how old the map is: %q", age)
		require.GreaterOrEqual(t, ms, int64(200))
		require.NotNil(t, k.OwnerMapAgeMs, "the owner's body has the age the forward carried")
		require.Equal(t, ms, *k.OwnerMapAgeMs)
		require.Equal(t, ms, own.age.Load())
	}
	require.EqualValues(t, 4, own.served.Load())
}

// A stale map may name an owner that gave the partition up since: it
// refuses (421), and the instances the last read listed are asked in turn
// — only the one that runs the partition answers, so the answer is the
// owner's, never another's. With no instance running it, the reply is 503
// group_read_failed, naming the read's error and the map's age.
func TestElsewhereAsksAroundWhenTheLastMapsOwnerRefuses(t *testing.T) {
	former := newOwner(t, false)
	current := newOwner(t, true)
	other := newOwner(t, false)
	listed := []kafka.GroupMember{
		{ID: "former", Data: []byte(former.addr()), Reported: true, Assigned: map[string][]int32{"in": {0}}},
		{ID: "current", Data: []byte(current.addr()), Reported: true, Assigned: map[string][]int32{"in": {1}}},
		{ID: "other", Data: []byte(other.addr()), Reported: true, Assigned: map[string][]int32{"in": {2}}},
	}
	members, _ := failingAfter(1, listed)
	s := routeServer(members)
	_, _, _, err := s.owners.lookup(t.Context(), processor.TaskID{}, time.Time{}) // the last read that succeeds
	require.NoError(t, err)
	time.Sleep(refreshEvery)

	status, e, k, age := routeQueryHeader(t, s, "/stores/s/keys/k")
	require.Equal(t, http.StatusOK, status, e.Error)
	require.Equal(t, "active", k.Role)
	require.Equal(t, current.addr(), k.ServedBy, "the instance that runs the partition answered")
	require.NotEmpty(t, age)
	require.EqualValues(t, 1, current.served.Load())

	// Nobody runs it any more (the current owner stopped too).
	current.runs.Store(false)
	status, e, _, age = routeQueryHeader(t, s, "/stores/s/keys/k?wait=300ms")
	require.Equal(t, http.StatusServiceUnavailable, status)
	require.Equal(t, CauseGroupRead, e.Cause, e.Error)
	require.Contains(t, e.Error, "EOF")
	require.Contains(t, e.Error, "the owner map is the last one read")
	require.NotEmpty(t, age)
	require.NotNil(t, e.OwnerMapAgeMs)
	require.EqualValues(t, 1, current.served.Load())
}

// The owner side: a forwarded request's age is read back; a client's own
// header is not taken for one.
func TestForwardedOwnerMapAge(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "/stores/s/keys/k", nil)
	r.Header.Set(OwnerMapAgeHeader, "1500")
	require.Nil(t, forwardedOwnerMapAge(r), "not forwarded")
	r.Header.Set(ForwardedHeader, "127.0.0.1:1")
	require.EqualValues(t, 1500, *forwardedOwnerMapAge(r))
	r.Header.Set(OwnerMapAgeHeader, "soon")
	require.Nil(t, forwardedOwnerMapAge(r))
	require.Nil(t, maxAge(nil, nil))
	a, b := int64(1), int64(2)
	require.Equal(t, &b, maxAge(&a, &b))
	require.Equal(t, &b, maxAge(&b, nil))
}

// The group's description may lag the instances (a partition between two
// generations is described with no owner while an instance still runs
// it): before answering 503 no_owner, the instances the read listed are
// asked once, and one that runs the partition answers; with none, the
// cause stands.
func TestElsewhereAsksAroundBeforeNoOwner(t *testing.T) {
	runner := newOwner(t, true)
	s := routeServer(func(context.Context) ([]kafka.GroupMember, error) {
		return []kafka.GroupMember{{ID: "runner", Data: []byte(runner.addr()), Reported: true, Assigned: map[string][]int32{"in": {1}}}}, nil
	})
	status, e, k, age := routeQueryHeader(t, s, "/stores/s/keys/k?wait=200ms")
	require.Equal(t, http.StatusOK, status, e.Error)
	require.Equal(t, runner.addr(), k.ServedBy)
	require.Empty(t, age, "the map is current")
	require.EqualValues(t, 1, runner.served.Load())

	runner.runs.Store(false)
	status, e, _, _ = routeQueryHeader(t, s, "/stores/s/keys/k?wait=200ms")
	require.Equal(t, http.StatusServiceUnavailable, status)
	require.Equal(t, CauseNoOwner, e.Cause, e.Error)
}
