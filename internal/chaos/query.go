package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Query scenarios (Config.Queries, issue 24): the instances serve
// interactive queries (WithHTTP, with standby replicas) on one fixed
// address per member slot, kept across restarts as a deployment's host
// names are; the only events are SIGKILLs, each followed by a restart, 2–5
// s apart; and a client asks a random running instance for a random
// account's aggregate every QueryEvery, in turn owner-only, with
// ?maxLag=QueryMaxLag (a standby's or a restoring copy may answer), and
// owner-only with ?wait=QueryWait (waiting longer for an owner during a
// rebalance than the default 1.5 s). After
// the run every answer is checked against the read_committed aggregate
// topic: a 200's value must be one of the key's committed aggregates, and
// owner-only answers of a key never go back in time (a later-asked answer
// never has a smaller count, nor is a 404, than one that arrived before
// it was asked). A 503 must name a true cause where the harness can tell:
// never no_address (every instance serves HTTP), unreachable only for an
// owner whose instance was down (killed, or restarted and not yet
// listening) while the query was in flight, owner_restarted only for an
// owner whose instance was killed before the reply.

// QueryEvery is the query client's period, QueryMaxLag the bound of its
// stale queries (changelog records), and QueryTimeout its HTTP timeout.
const (
	QueryEvery   = 50 * time.Millisecond
	QueryMaxLag  = 100_000
	QueryTimeout = 5 * time.Second
	QueryWait    = 4 * time.Second
)

// queryGapMin and queryGapMax bound the time between two kills of a query
// scenario.
const (
	queryGapMin = 2 * time.Second
	queryGapMax = 5 * time.Second
)

// QueryTally counts the queries of one kind (owner-only or maxLag).
type QueryTally struct {
	// Asked: queries sent; Down: to an instance that did not answer at
	// all (killed while asked, or restarted and not listening yet — not a
	// live instance); Answered: 200s; NotFound: 404s (an account before
	// its first committed aggregate); Unavailable: other replies, by
	// cause (a 503's cause, or the status).
	Asked, Down, Answered, NotFound int
	Roles                           map[string]int // 200s by the role that answered
	Unavailable                     map[string]int
	// Inconsistent answers (a value not committed, an owner-only answer
	// going back in time, an owner-only query answered by a copy) and
	// 503s naming an untrue cause; each is a problem of the scenario.
	Inconsistent, UntrueCauses int
	// Examples holds the first reply's error of each cause.
	Examples map[string]string
}

// Live is the number of queries a live instance answered in any way.
func (t QueryTally) Live() int { return t.Asked - t.Down }

// Availability is the share of queries to live instances answered (200
// or 404), in percent.
func (t QueryTally) Availability() float64 {
	return 100 * float64(t.Answered+t.NotFound) / float64(max(t.Live(), 1))
}

func (t QueryTally) unavailable() int {
	n := 0
	for _, c := range t.Unavailable {
		n += c
	}
	return n
}

// QueryReport is the query client's outcome: owner-only queries, queries
// with maxLag, and owner-only queries with ?wait=QueryWait.
type QueryReport struct {
	Mode                      string
	OwnerOnly, Stale, Waiting QueryTally
}

// String is the report's summary lines, one per kind of query.
func (q *QueryReport) String() string {
	var b strings.Builder
	for i, t := range []QueryTally{q.OwnerOnly, q.Stale, q.Waiting} {
		kind := []string{"owner-only", fmt.Sprintf("maxLag=%d", QueryMaxLag), "owner-only,wait=" + QueryWait.String()}[i]
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "queries mode=%s query=%s asked=%d live=%d answered=%d (%.1f%%; %s; not_found %d) unavailable=%d (%s) down=%d inconsistent=%d untrue_causes=%d",
			q.Mode, kind, t.Asked, t.Live(), t.Answered+t.NotFound, t.Availability(), counts(t.Roles), t.NotFound,
			t.unavailable(), counts(t.Unavailable), t.Down, t.Inconsistent, t.UntrueCauses)
	}
	return b.String()
}

func counts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	var cs []string
	for c, n := range m {
		cs = append(cs, fmt.Sprintf("%s %d", c, n))
	}
	sort.Strings(cs)
	return strings.Join(cs, ", ")
}

// queryAnswer is one query and its reply.
type queryAnswer struct {
	key    string
	stale  bool // asked with maxLag
	wait   bool // asked owner-only with ?wait=QueryWait
	slot   int
	asked  time.Time
	took   time.Duration
	status int // 0: no reply (the instance was down)
	value  Agg
	role   string
	cause  string
	owner  string // the owner's address a 503 names
	msg    string
	mapAge int64 // the reply's owner map age header (ms), -1 if none
}

// downSpan is a time a slot's instance could not answer: from its kill
// until its restarted instance first accepted a connection (zero: not
// yet).
type downSpan struct{ from, until time.Time }

// queryClient asks the instances while the scenario runs.
type queryClient struct {
	addrs  []string // by slot
	rng    *mrand.Rand
	client *http.Client

	ctx   context.Context // ends the probes
	close func()

	mu      sync.Mutex
	running []bool       // by slot: the process runs (the harness's view)
	downs   [][]downSpan // by slot
	answers []queryAnswer

	wg sync.WaitGroup
}

// freeAddrs returns n loopback addresses with free ports.
func freeAddrs(n int) ([]string, error) {
	var addrs []string
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("chaos: a port for a member: %w", err)
		}
		ls = append(ls, l)
		addrs = append(addrs, l.Addr().String())
	}
	return addrs, nil
}

func newQueryClient(ctx context.Context, seed uint64, addrs []string) *queryClient {
	ctx, cancel := context.WithCancel(ctx)
	q := &queryClient{
		ctx: ctx, addrs: addrs, rng: mrand.New(mrand.NewPCG(seed, 2)),
		client:  &http.Client{Timeout: QueryTimeout},
		running: make([]bool, len(addrs)), downs: make([][]downSpan, len(addrs)),
	}
	q.close = func() { cancel(); q.wg.Wait() }
	return q
}

// killing marks slot i down from now on, before its SIGKILL.
func (q *queryClient) killing(i int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.running[i] = false
	q.downs[i] = append(q.downs[i], downSpan{from: time.Now()})
}

// started marks slot i running and ends its down span when it first
// accepts a connection (probed every 20 ms).
func (q *queryClient) started(i int) {
	q.mu.Lock()
	q.running[i] = true
	q.mu.Unlock()
	q.wg.Go(func() {
		for q.ctx.Err() == nil {
			c, err := net.DialTimeout("tcp", q.addrs[i], time.Second)
			if err == nil {
				_ = c.Close()
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		q.mu.Lock()
		defer q.mu.Unlock()
		if d := q.downs[i]; len(d) > 0 && d[len(d)-1].until.IsZero() {
			d[len(d)-1].until = time.Now()
		}
	})
}

// run asks a query every QueryEvery until ctx ends, each on its own
// goroutine (one that waits for a rebalance does not hold the next back).
func (q *queryClient) run(ctx context.Context) {
	tick := time.NewTicker(QueryEvery)
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		q.mu.Lock()
		var up []int
		for i, r := range q.running {
			if r {
				up = append(up, i)
			}
		}
		if len(up) == 0 {
			q.mu.Unlock()
			continue
		}
		a := queryAnswer{key: KeyName(q.rng.IntN(Keys)), stale: n%3 == 1, wait: n%3 == 2, slot: up[q.rng.IntN(len(up))], asked: time.Now()}
		q.mu.Unlock()
		q.wg.Go(func() {
			q.ask(&a)
			q.mu.Lock()
			q.answers = append(q.answers, a)
			q.mu.Unlock()
		})
	}
}

// ask sends a's query and records the reply.
func (q *queryClient) ask(a *queryAnswer) {
	defer func() { a.took = time.Since(a.asked) }()
	u := "http://" + q.addrs[a.slot] + "/stores/" + Store + "/keys/" + url.PathEscape(a.key)
	switch {
	case a.stale:
		u += fmt.Sprintf("?maxLag=%d", QueryMaxLag)
	case a.wait:
		u += "?wait=" + QueryWait.String()
	}
	resp, err := q.client.Get(u)
	if err != nil {
		return // status 0: down
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return
	}
	a.status = resp.StatusCode
	a.mapAge = -1
	if v, err := strconv.ParseInt(resp.Header.Get("X-Weir-Owner-Map-Age-Ms"), 10, 64); err == nil {
		a.mapAge = v
	}
	var r struct {
		Value *Agg   `json:"value"`
		Role  string `json:"role"`
		Error string `json:"error"`
		Cause string `json:"cause"`
		Owner *struct {
			Addr string `json:"addr"`
		} `json:"owner"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		a.cause, a.msg = "undecodable reply", string(body)
		return
	}
	a.role, a.cause, a.msg = r.Role, r.Cause, r.Error
	if r.Owner != nil {
		a.owner = r.Owner.Addr
	}
	switch {
	case a.status == http.StatusOK && r.Value == nil:
		a.cause = "no value"
	case a.status == http.StatusOK:
		a.value = *r.Value
	case a.status == http.StatusServiceUnavailable && a.cause == "":
		a.cause = "no cause"
	}
}

// check tallies the answers and checks each against committed, the
// aggregates the read_committed output holds by key. Problems go to r.
func (q *queryClient) check(mode string, committed map[string][]Agg, r *report) *QueryReport {
	q.mu.Lock()
	defer q.mu.Unlock()
	rep := &QueryReport{Mode: mode}
	for _, t := range []*QueryTally{&rep.OwnerOnly, &rep.Stale, &rep.Waiting} {
		t.Roles, t.Unavailable, t.Examples = map[string]int{}, map[string]int{}, map[string]string{}
	}
	slotOf := map[string]int{}
	for i, a := range q.addrs {
		slotOf[a] = i
	}
	answers := slices.Clone(q.answers)
	sort.SliceStable(answers, func(i, j int) bool { return answers[i].asked.Before(answers[j].asked) })
	type seen struct {
		count   int64 // 0: a 404
		arrived time.Time
	}
	last := map[string]seen{} // the newest owner-only answer by key
	for _, a := range answers {
		t := &rep.OwnerOnly
		switch {
		case a.stale:
			t = &rep.Stale
		case a.wait:
			t = &rep.Waiting
		}
		t.Asked++
		bad := func(format string, args ...any) {
			t.Inconsistent++
			r.problem("query %s (maxLag %v, asked %s of slot %d): %s", a.key, a.stale, a.asked.Format("15:04:05.000"), a.slot, fmt.Sprintf(format, args...))
		}
		switch a.status {
		case 0:
			t.Down++
			continue
		case http.StatusOK:
			t.Answered++
			t.Roles[a.role]++
			if !a.stale && a.role != "active" {
				bad("an owner-only query answered by a %q copy", a.role)
			}
			if !slices.Contains(committed[a.key], a.value) {
				bad("%+v is not one of the key's %d committed aggregates", a.value, len(committed[a.key]))
			}
		case http.StatusNotFound:
			t.NotFound++
		case http.StatusServiceUnavailable:
			if t.Unavailable[a.cause]++; t.Unavailable[a.cause] == 1 {
				t.Examples[a.cause] = a.msg
			}
			if why := q.untrue(a, slotOf); why != "" {
				t.UntrueCauses++
				r.problem("query %s (maxLag %v, asked %s of slot %d): 503 %s: %s (%s)", a.key, a.stale, a.asked.Format("15:04:05.000"), a.slot, a.cause, why, a.msg)
			}
			continue
		default:
			t.Unavailable[fmt.Sprintf("status %d %s", a.status, a.cause)]++
			continue
		}
		if a.stale {
			continue
		}
		count := int64(0) // a 404: no aggregate
		if a.status == http.StatusOK {
			count = a.value.Count
		}
		l, ok := last[a.key]
		if ok && a.asked.After(l.arrived) && count < l.count {
			bad("went back in time: count %d after %d (owner-only)", count, l.count)
		}
		if !ok || count >= l.count {
			last[a.key] = seen{count, a.asked.Add(a.took)}
		}
	}
	return rep
}

// untrue says why a 503's cause cannot be true, "" if it may be.
func (q *queryClient) untrue(a queryAnswer, slotOf map[string]int) string {
	switch a.cause {
	case "no cause", "undecodable reply":
		return "a 503 must name its cause"
	case "no_address":
		return "every instance serves HTTP"
	case "unreachable":
		i, ok := slotOf[a.owner]
		if !ok {
			return fmt.Sprintf("the owner named, %q, is no instance's address", a.owner)
		}
		end := a.asked.Add(a.took)
		for _, d := range q.downs[i] {
			if d.from.Before(end) && (d.until.IsZero() || d.until.After(a.asked)) {
				return ""
			}
		}
		return fmt.Sprintf("slot %d (%s) was up all the time the query was in flight", i, a.owner)
	case "owner_restarted":
		i, ok := slotOf[a.owner]
		if !ok {
			return fmt.Sprintf("the owner named, %q, is no instance's address", a.owner)
		}
		for _, d := range q.downs[i] {
			if d.from.Before(a.asked.Add(a.took)) {
				return ""
			}
		}
		return fmt.Sprintf("slot %d (%s) was never killed before the reply", i, a.owner)
	}
	return ""
}

// writeAnswers writes every query and its reply to path, one a line in the
// order asked, tab-separated: seconds since start when asked, how long it
// took, the kind (owner, maxLag, wait), slot, key, status (0: down),
// count, role or cause, the owner map's age (ms, -1: current) and the
// error. The run's work dir keeps it next to the child logs, to line the
// 503s up with the events.
func (q *queryClient) writeAnswers(path string, start time.Time) error {
	q.mu.Lock()
	answers := slices.Clone(q.answers)
	q.mu.Unlock()
	sort.SliceStable(answers, func(i, j int) bool { return answers[i].asked.Before(answers[j].asked) })
	var b strings.Builder
	b.WriteString("at\ttook\tkind\tslot\tkey\tstatus\tcount\trole_or_cause\tmap_age_ms\terror\n")
	for _, a := range answers {
		kind := "owner"
		switch {
		case a.stale:
			kind = "maxLag"
		case a.wait:
			kind = "wait"
		}
		rc := a.role
		if a.status != http.StatusOK {
			rc = a.cause
		}
		fmt.Fprintf(&b, "%.3f\t%.3f\t%s\t%d\t%s\t%d\t%d\t%s\t%d\t%s\n", a.asked.Sub(start).Seconds(), a.took.Seconds(),
			kind, a.slot, a.key, a.status, a.value.Count, rc, a.mapAge, strings.ReplaceAll(a.msg, "\t", " "))
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("chaos: the query answers: %w", err)
	}
	return nil
}
