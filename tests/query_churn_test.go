package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
)

// Query availability under churn: three instances serving
// queries, exactly-once, a running sum per key; every 2–5 s one instance
// stops (and comes back 2–5 s later) or restarts at once, while input
// arrives and a client asks a random instance for a random key every
// 50 ms, alternately owner-only and accepting a stale standby or restoring
// copy (maxLag). Every answer must be a committed value — one of the sums
// the read_committed output holds for the key — and owner-only answers of
// a key never go back in time. The availability figures are logged, not
// asserted: they depend on the machine.

// churnTotalsTopology sums the int64 values of each key into "totals".
func churnTotalsTopology(t *testing.T, in, out string) *topology.Topology {
	t.Helper()
	b := topology.NewBuilder()
	topology.NewStream(b, in, serde.String(), serde.Int64()).GroupByKey().
		Reduce(func(a, v int64) int64 { return a + v }, topology.Materialized("totals")).
		ToStream().To(out)
	topo, err := b.Build()
	require.NoError(t, err)
	return topo
}

// churnAnswer is one query of the churn client.
type churnAnswer struct {
	key      string
	stale    bool // asked with maxLag
	status   int  // 0: the instance was down
	value    int64
	cause    string
	msg      string // a 503's error
	servedBy string
	at       time.Time
	took     time.Duration
}

// churnSlot is one of the three instances, stopped or running.
type churnSlot struct {
	mu       sync.Mutex
	in       *instance
	stateDir string
}

func (s *churnSlot) addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.in == nil {
		return ""
	}
	return s.in.app.HTTPAddr()
}

func TestQueryAvailabilityUnderChurn(t *testing.T) {
	kafkatest.Long(t)
	if testing.Short() {
		t.Skip("churn run (about 25 s per mode)")
	}
	for _, mode := range []weir.Mode{weir.Continuous, weir.MicroBatch} {
		t.Run(mode.String(), func(t *testing.T) {
			kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
				testQueryChurn(t, env, mode, 20*time.Second)
			})
		})
	}
}

func testQueryChurn(t *testing.T, env *kafkatest.Env, mode weir.Mode, churnFor time.Duration) {
	in, out := kafkatest.Topic(t), kafkatest.Topic(t)
	kafkatest.CreateTopic(t, env, in, 6)
	kafkatest.CreateTopic(t, env, out, 6)
	appID := kafkatest.GroupID(t)
	topo := churnTotalsTopology(t, in, out)
	opts := []weir.Option{
		weir.WithMode(mode), weir.WithGuarantee(weir.ExactlyOnce), weir.WithHTTP("127.0.0.1:0"),
		weir.WithStandbyReplicas(2),
	}
	slots := make([]*churnSlot, 3)
	start := func(s *churnSlot) {
		in := startInstance(t, topo, env, appID, append(opts, weir.WithStateDir(s.stateDir))...)
		s.mu.Lock()
		s.in = in
		s.mu.Unlock()
	}
	stop := func(s *churnSlot) {
		s.mu.Lock()
		in := s.in
		s.in = nil
		s.mu.Unlock()
		if in != nil {
			require.NoError(t, in.stop(t))
		}
	}
	for i := range slots {
		slots[i] = &churnSlot{stateDir: t.TempDir()}
		start(slots[i])
	}
	defer func() {
		for _, s := range slots {
			stop(s)
		}
	}()
	var running []*instance
	for _, s := range slots {
		running = append(running, s.in)
	}
	httpAddrs(t, running...)

	keys := make([]string, 40)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%02d", i)
	}
	rng := rand.New(rand.NewPCG(24, uint64(mode)))
	total := map[string]int64{}
	produce := func(n int) {
		recs := make([]kafka.Record, n)
		for i := range recs {
			k := keys[rng.IntN(len(keys))]
			v := 1 + rng.Int64N(1000)
			total[k] += v
			vb, err := serde.Int64().Serialize(in, v)
			require.NoError(t, err)
			recs[i] = kafka.Record{Topic: in, Partition: kafka.PartitionByKey, Key: []byte(k), Value: vb, Timestamp: time.Now()}
		}
		kafkatest.Produce(t, env, recs...)
	}
	produce(200)

	// The client: a query every 50 ms to a random slot for a random key.
	ctx, cancel := context.WithCancel(context.Background())
	var (
		amu     sync.Mutex
		answers []churnAnswer
		qwg     sync.WaitGroup
	)
	client := &http.Client{Timeout: 5 * time.Second}
	qwg.Go(func() {
		qrng := rand.New(rand.NewPCG(7, uint64(mode)))
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			// Each query on its own goroutine: one that waits for a
			// rebalance does not hold the next ones back.
			a := churnAnswer{key: keys[qrng.IntN(len(keys))], stale: n%2 == 1, at: time.Now()}
			slot := slots[qrng.IntN(len(slots))]
			qwg.Go(func() {
				if addr := slot.addr(); addr != "" {
					path := keyPath("totals", a.key)
					if a.stale {
						path += "?maxLag=100000"
					}
					a.status, a.value, a.cause, a.msg, a.servedBy = churnGet(client, addr, path)
				}
				a.took = time.Since(a.at)
				amu.Lock()
				answers = append(answers, a)
				amu.Unlock()
			})
		}
	})

	// Churn and input.
	end := time.Now().Add(churnFor)
	next := time.Now().Add(time.Duration(2000+rng.IntN(3000)) * time.Millisecond)
	var back *churnSlot
	var backAt time.Time
	kills, restarts := 0, 0
	for time.Now().Before(end) {
		produce(10)
		time.Sleep(100 * time.Millisecond)
		if back != nil && time.Now().After(backAt) {
			start(back)
			back = nil
		}
		if time.Now().Before(next) {
			continue
		}
		next = time.Now().Add(time.Duration(2000+rng.IntN(3000)) * time.Millisecond)
		var up []*churnSlot
		for _, s := range slots {
			if s != back {
				up = append(up, s)
			}
		}
		s := up[rng.IntN(len(up))]
		if back == nil && rng.IntN(2) == 0 {
			stop(s) // down for 2–5 s
			back, backAt = s, time.Now().Add(time.Duration(2000+rng.IntN(3000))*time.Millisecond)
			kills++
		} else {
			stop(s)
			start(s)
			restarts++
		}
	}
	if back != nil {
		start(back)
	}
	cancel()
	qwg.Wait()

	// The committed sums of every key, once all input is processed.
	var seen map[string][]int64
	defer func() {
		if t.Failed() {
			churnDiagnose(t, env, appID, in, out, slots, total)
		}
	}()
	require.Eventually(t, func() bool {
		seen = map[string][]int64{}
		for _, r := range kafkatest.ReadCommitted(t, env, out) {
			n, err := serde.Int64().Deserialize(out, r.Value)
			require.NoError(t, err)
			seen[string(r.Key)] = append(seen[string(r.Key)], n)
		}
		for k, n := range total {
			if s := seen[k]; len(s) == 0 || s[len(s)-1] != n {
				return false
			}
		}
		return true
	}, 90*time.Second, 250*time.Millisecond, "the final sums never appeared")
	committed := map[string]map[int64]bool{}
	for k, s := range seen {
		committed[k] = map[int64]bool{}
		for _, n := range s {
			committed[k][n] = true
		}
	}

	type tally struct {
		asked, answered, down, notFound int
		causes, roles                   map[string]int
	}
	tallies := map[bool]*tally{}
	for _, stale := range []bool{false, true} {
		tallies[stale] = &tally{causes: map[string]int{}, roles: map[string]int{}}
	}
	// Answers in the order they were asked: an owner-only answer must not
	// be older than one to a query asked after the previous one was
	// answered... strictly, only answers to queries asked after an earlier
	// answer arrived are ordered; those are what the check compares.
	sort.Slice(answers, func(i, j int) bool { return answers[i].at.Before(answers[j].at) })
	type seenAt struct {
		value int64
		at    time.Time // when the answer arrived
	}
	last := map[string]seenAt{}
	inconsistent := 0
	var tooks []time.Duration
	for _, a := range answers {
		tl := tallies[a.stale]
		tl.asked++
		switch a.status {
		case 0:
			tl.down++
		case http.StatusOK:
			tl.answered++
			tl.roles[a.cause]++
			if !a.stale && a.cause != "active" {
				inconsistent++
				t.Errorf("%s: an owner-only query answered by a %q copy (%s)", a.key, a.cause, a.servedBy)
			}
			if !committed[a.key][a.value] {
				inconsistent++
				t.Errorf("%s = %d (served by %s, maxLag %v) is not a committed sum", a.key, a.value, a.servedBy, a.stale)
			}
			tooks = append(tooks, a.took)
			if !a.stale {
				if l, ok := last[a.key]; ok && a.at.After(l.at) && a.value < l.value {
					inconsistent++
					t.Errorf("%s went back in time: %d after %d (owner-only, served by %s)", a.key, a.value, l.value, a.servedBy)
				}
				if l, ok := last[a.key]; !ok || a.value >= l.value {
					last[a.key] = seenAt{a.value, a.at.Add(a.took)}
				}
			}
		case http.StatusNotFound:
			tl.notFound++ // a key before its first record
		case http.StatusServiceUnavailable:
			if tl.causes[a.cause]++; tl.causes[a.cause] == 1 {
				t.Logf("first %s 503 (maxLag %v): %s", a.cause, a.stale, a.msg)
			}
		default:
			tl.causes[fmt.Sprintf("%d %s", a.status, a.cause)]++
		}
	}
	if len(tooks) == 0 {
		t.Fatalf("%s: no query was answered in %s of churn (%d kills, %d restarts): 503s by cause %v, %v", mode, churnFor, kills, restarts,
			tallies[false].causes, tallies[true].causes)
	}
	slices.Sort(tooks)
	t.Logf("%s: %d kills, %d restarts in %s; %d inconsistent answers; answer latency p50 %s, p99 %s", mode, kills, restarts, churnFor, inconsistent,
		tooks[len(tooks)/2].Round(time.Millisecond), tooks[len(tooks)*99/100].Round(time.Millisecond))
	t.Logf("| mode | query | asked | answered 200 | 404 | 503 | instance down | answered / asked of live |")
	for _, stale := range []bool{false, true} {
		tl := tallies[stale]
		n503 := 0
		for _, n := range tl.causes {
			n503 += n
		}
		live := tl.asked - tl.down
		q := "owner only"
		if stale {
			q = "maxLag"
		}
		t.Logf("| %s | %s | %d | %d | %d | %d | %d | %.1f %% |", mode, q, tl.asked, tl.answered, tl.notFound, n503, tl.down,
			100*float64(tl.answered+tl.notFound)/float64(max(live, 1)))
		t.Logf("  answered by (%s): %s; 503 causes: %s", q, countList(tl.roles), countList(tl.causes))
		require.Zero(t, tl.causes["no_address"], "every instance advertises an address")
		require.Zero(t, tl.causes["no cause"], "every 503 names its cause")
	}
	require.Zero(t, inconsistent)
	require.Positive(t, tallies[false].answered+tallies[true].answered, "some queries were answered")
}

// churnGet asks addr for path: the status, the value of a 200, the cause
// of a 503 and who served it. Status 0: the instance did not answer.
func churnGet(c *http.Client, addr, path string) (status int, value int64, cause, msg, servedBy string) {
	resp, err := c.Get("http://" + addr + path)
	if err != nil {
		return 0, 0, "", "", ""
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, 0, "", "", ""
	}
	var r struct {
		Value    *int64 `json:"value"`
		Error    string `json:"error"`
		Cause    string `json:"cause"`
		ServedBy string `json:"servedBy"`
		Role     string `json:"role"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return resp.StatusCode, 0, "undecodable reply", string(body), ""
	}
	switch resp.StatusCode {
	case http.StatusOK:
		if r.Value == nil {
			return resp.StatusCode, 0, "no value", "", r.ServedBy
		}
		return resp.StatusCode, *r.Value, r.Role, "", r.ServedBy
	case http.StatusServiceUnavailable:
		if r.Cause == "" {
			return resp.StatusCode, 0, "no cause", r.Error, r.ServedBy
		}
		return resp.StatusCode, 0, r.Cause, r.Error, r.ServedBy
	}
	return resp.StatusCode, 0, "", r.Error, r.ServedBy
}

// countList formats counts by name, sorted.
func countList(m map[string]int) string {
	var cs []string
	for c, n := range m {
		cs = append(cs, fmt.Sprintf("%s %d", c, n))
	}
	sort.Strings(cs)
	return strings.Join(cs, ", ")
}

// churnDiagnose logs, after a failure, what tells a stall from a loss: the
// keys whose last committed sum is not the total (and by how much), the
// group's committed offsets against the input's end offsets, and what each
// running instance says of its health and progress.
func churnDiagnose(t *testing.T, env *kafkatest.Env, group, in, out string, slots []*churnSlot, total map[string]int64) {
	t.Helper()
	seen := map[string][]int64{}
	for _, r := range kafkatest.ReadCommitted(t, env, out) {
		if n, err := serde.Int64().Deserialize(out, r.Value); err == nil {
			seen[string(r.Key)] = append(seen[string(r.Key)], n)
		}
	}
	var wrong []string
	for k, n := range total {
		s := seen[k]
		if len(s) == 0 || s[len(s)-1] != n {
			last := int64(0)
			if len(s) > 0 {
				last = s[len(s)-1]
			}
			wrong = append(wrong, fmt.Sprintf("%s want %d last %d (%+d, %d outputs)", k, n, last, last-n, len(s)))
		}
	}
	sort.Strings(wrong)
	t.Logf("diagnosis: %d of %d keys without their final sum: %s", len(wrong), len(total), strings.Join(wrong, "; "))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if admin, err := kafka.NewAdmin(env.Config()); err != nil {
		t.Logf("diagnosis: admin: %v", err)
	} else {
		defer admin.Close()
		parts := []int32{0, 1, 2, 3, 4, 5}
		end, err1 := admin.EndOffsets(ctx, in, parts)
		committed, err2 := admin.CommittedOffsets(ctx, group, in, parts)
		t.Logf("diagnosis: input end offsets %v (%v), group committed %v (%v)", end, err1, committed, err2)
		members, err := admin.GroupMembers(ctx, group)
		for _, m := range members {
			t.Logf("diagnosis: member %s reported %v assigned %v", m.ID, m.Reported, m.Assigned)
		}
		t.Logf("diagnosis: %d group members (%v)", len(members), err)
	}
	for i, s := range slots {
		addr := s.addr()
		if addr == "" {
			t.Logf("diagnosis: instance %d down", i)
			continue
		}
		for _, path := range []string{"/readyz", "/progress"} {
			status, body := churnFetch(addr, path)
			body = strings.Join(strings.Fields(body), " ")
			if len(body) > 2000 {
				body = body[:2000] + "…"
			}
			t.Logf("diagnosis: instance %d %s: %d %s", i, path, status, body)
		}
	}
}

// churnFetch gets path from addr, for diagnosis: errors become the body.
func churnFetch(addr, path string) (int, string) {
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + addr + path)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
