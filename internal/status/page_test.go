package status_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/metrics"
	"github.com/weirstream/weir/internal/status"
)

// group is the consumer group the pages read, as the coordinator would
// describe it; tests change it.
type group struct {
	mu      sync.Mutex
	members []kafka.GroupMember
	err     error
}

func (g *group) read(context.Context) ([]kafka.GroupMember, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.members, g.err
}

func (g *group) set(err error, ms ...kafka.GroupMember) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.members, g.err = ms, err
}

// instance is one page behind a real HTTP server.
type instance struct {
	page *status.Page
	srv  *httptest.Server
	addr string
	m    *metrics.Metrics
	fwd  chan string // the forwarded header of each /status/local request
}

func startPage(t *testing.T, g *group, app string) *instance {
	t.Helper()
	in := &instance{m: metrics.New(app, "continuous", "exactly-once"), fwd: make(chan string, 100)}
	var h http.Handler
	in.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/status/local" {
			select {
			case in.fwd <- r.Header.Get(status.ForwardedHeader):
			default:
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(in.srv.Close)
	in.addr = strings.TrimPrefix(in.srv.URL, "http://")
	events := status.NewEvents(10)
	events.Add(time.Now(), "state", "running")
	p, err := status.New(status.Config{
		Gatherer: in.m.Registry(), Description: graphTopology(t).Describe(), Self: in.addr,
		Members: g.read, Events: events, Interval: 10 * time.Millisecond,
		Info: func() status.Info { return status.Info{Application: app, State: "running"} },
		Stores: func() ([]status.StoreRows, int64, error) {
			return []status.StoreRows{{Store: "counts", Partition: 0, Rows: 7}}, 1 << 20, nil
		},
	})
	require.NoError(t, err)
	in.page, h = p, p.Handler()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = p.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return in
}

func getJSON[T any](t *testing.T, url string) T {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var v T
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&v))
	return v
}

func member(in *instance, topic string, parts ...int32) kafka.GroupMember {
	return kafka.GroupMember{ID: "m-" + in.addr, Data: []byte(in.addr), Reported: true,
		Assigned: map[string][]int32{topic: parts}}
}

func TestPageServesItsFiles(t *testing.T) {
	in := startPage(t, &group{}, "app")
	for path, want := range map[string]string{
		"/":                 `<script src="/status/app.js">`,
		"/status/app.js":    "function drawGraph",
		"/status/style.css": ".node.source",
	} {
		resp, err := http.Get(in.srv.URL + path)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		require.Contains(t, string(body), want, path)
	}
}

// An instance reports itself with its samples newer than since.
func TestLocalReportsSamplesSince(t *testing.T) {
	in := startPage(t, &group{}, "app")
	require.Eventually(t, func() bool {
		return len(getJSON[status.Local](t, in.srv.URL+"/status/local").Samples) >= 3
	}, 5*time.Second, 10*time.Millisecond)
	all := getJSON[status.Local](t, in.srv.URL+"/status/local").Samples
	mid := all[len(all)/2].Time
	later := getJSON[status.Local](t, in.srv.URL+"/status/local?since="+jsonInt(mid)).Samples
	require.NotEmpty(t, later)
	for _, s := range later {
		require.Greater(t, s.Time, mid)
	}
	l := getJSON[status.Local](t, in.srv.URL+"/status/local")
	require.Equal(t, "app", l.Info.Application)
	require.Equal(t, in.addr, l.Addr)
	require.NotEmpty(t, l.Events)
	require.Eventually(t, func() bool {
		l := getJSON[status.Local](t, in.srv.URL+"/status/local")
		return len(l.Stores) == 1 && l.DiskBytes == 1<<20
	}, 5*time.Second, 10*time.Millisecond, "the stores are counted in the background")
}

func jsonInt(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// Any instance shows the whole group: the coordinator's assignment and
// each member's own report; a member that left shows as gone, one that
// does not answer as unreachable, and a failed read of the group says so
// without calling anyone gone.
func TestGroupSeenFromAnyInstance(t *testing.T) {
	g := &group{}
	a, b := startPage(t, g, "app"), startPage(t, g, "app")
	g.set(nil, member(a, "in", 0, 1), member(b, "in", 2, 3))

	view := getJSON[status.Group](t, a.srv.URL+"/status/group")
	require.Empty(t, view.Error)
	require.Len(t, view.Members, 2)
	require.NotEmpty(t, view.Graph.Subtopologies)
	byAddr := map[string]status.Member{}
	for _, m := range view.Members {
		byAddr[m.Addr] = m
	}
	require.True(t, byAddr[a.addr].Self)
	require.False(t, byAddr[b.addr].Self)
	require.Equal(t, []int32{2, 3}, byAddr[b.addr].Assigned["in"])
	require.NotNil(t, byAddr[b.addr].Report, byAddr[b.addr].Unreachable)
	require.Equal(t, b.addr, byAddr[b.addr].Report.Addr)
	select {
	case h := <-b.fwd:
		require.NotEmpty(t, h, "a page's read of another instance is marked forwarded")
	case <-time.After(time.Second):
		t.Fatal("b was not asked for its report")
	}

	g.set(nil, member(a, "in", 0, 1, 2, 3))
	view = getJSON[status.Group](t, a.srv.URL+"/status/group")
	require.Len(t, view.Members, 1)
	require.Len(t, view.Gone, 1)
	require.Equal(t, b.addr, view.Gone[0].Addr)

	g.set(errors.New("describe group: EOF"), member(a, "in", 0, 1, 2, 3))
	view = getJSON[status.Group](t, a.srv.URL+"/status/group")
	require.Contains(t, view.Error, "EOF")
	require.Empty(t, view.Gone, "a failed read of the group calls no one gone")

	b.srv.Close()
	g.set(nil, member(a, "in", 0, 1), member(b, "in", 2, 3))
	view = getJSON[status.Group](t, a.srv.URL+"/status/group")
	for _, m := range view.Members {
		if m.Addr == b.addr {
			require.Nil(t, m.Report)
			require.NotEmpty(t, m.Unreachable)
		}
	}
}

func TestNewValidates(t *testing.T) {
	_, err := status.New(status.Config{})
	require.ErrorContains(t, err, "status: no metrics gatherer")
	m := metrics.New("a", "b", "c")
	_, err = status.New(status.Config{Gatherer: m.Registry(), Info: func() status.Info { return status.Info{} },
		Members: (&group{}).read, Self: "x", Description: "Topologies:\n  Bogus\n"})
	require.ErrorContains(t, err, "cannot read")
}
