package status_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/metrics"
	"github.com/weirstream/weir/internal/status"
)

// The page's cost on an instance: one sample every 2 s (always), and one
// /status/group answer every 2 s per open page. Compare ns/op with the
// 2 s between them: 100 µs is 0.005 % of a core.
func BenchmarkSample(b *testing.B) {
	m := metrics.New("app", "continuous", "exactly-once")
	h := m.Hooks()
	for _, p := range []string{"paused", "barrier_wait", "changelog_flush", "txn_commit", "state_apply", "epoch_log"} {
		h.Phase(p, time.Millisecond)
	}
	h.Committed(time.Millisecond, nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := status.Read(m.Registry(), time.Now()); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGroupAnswer(b *testing.B) {
	m := metrics.New("app", "continuous", "exactly-once")
	g := &group{}
	p, err := status.New(status.Config{
		Gatherer: m.Registry(), Description: describeWordCount, Self: "self:1",
		Members: g.read, Info: func() status.Info { return status.Info{} },
	})
	if err != nil {
		b.Fatal(err)
	}
	g.set(nil, kafka.GroupMember{ID: "m", Data: []byte("self:1"), Reported: true, Assigned: map[string][]int32{"in": {0, 1, 2, 3}}})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	_ = p.Run(ctx) // a few samples
	cancel()
	h := p.Handler()
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/status/group", nil))
		if w.Code != 200 {
			b.Fatal(w.Code)
		}
	}
}

const describeWordCount = `Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [lines])
      --> KSTREAM-FLATMAPVALUES-0000000001
    Processor: KSTREAM-FLATMAPVALUES-0000000001 (stores: [])
      --> KSTREAM-KEY-SELECT-0000000002
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-KEY-SELECT-0000000002 (stores: [])
      --> words-repartition-sink
      <-- KSTREAM-FLATMAPVALUES-0000000001
    Sink: words-repartition-sink (topic: words-repartition)
      <-- KSTREAM-KEY-SELECT-0000000002
`
