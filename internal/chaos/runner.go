package chaos

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir/internal/kafkaverify"
	"github.com/weirstream/weir/internal/third_party/kfake"
	"github.com/weirstream/weir/serde"
)

// Config is one scenario.
type Config struct {
	// Name of the scenario, printed in its line.
	Name string
	// Brokers to run against; required.
	Brokers []string
	// Cluster is the kfake cluster behind Brokers for fault injection; nil
	// on a real broker (no broker faults then).
	Cluster *kfake.Cluster
	// Nodes controls the brokers of a real cluster for broker faults
	// (clusterFaults); nil for none.
	Nodes Nodes
	// Exe is the command that starts a child instance: a program that
	// calls RunChild when IsChild (the environment is added).
	Exe []string
	// WorkDir receives the state dirs and the child logs.
	WorkDir string
	// Mode ("continuous", "micro-batch") and Guarantee ("at-least-once",
	// "exactly-once") of the instances.
	Mode, Guarantee string
	// Records is the input size; Kills, Rebalances (membership changes by
	// graceful leaves and joins), Stalls (a member stopped past its
	// session timeout) and Faults (broker faults: kfake's injected errors,
	// or with Nodes a real cluster's brokers killed, stalled and restarted)
	// the events.
	Records, Kills, Rebalances, Stalls, Faults int
	// NetFaults and DiskFaults are the network faults (netfaults.go: a
	// broker unreachable from one instance, delay and loss on a broker's
	// port) and the disk faults (diskfaults.go: a stopped instance's
	// state dir damaged, a volume that fills), each of a kind drawn from
	// the seed. With NetFaults the instances reach the brokers through
	// proxies of the runner (netproxy.go).
	NetFaults, DiskFaults int
	// DBRestarts is the number of times the database of the PostgreSQL
	// branches (pgsink.go) is taken down and brought back mid-run
	// (dbrestart.go), through DBScript (scripts/postgres/outage.sh,
	// called with down or up); none when the branches are off.
	DBRestarts int
	DBScript   string
	// Seed drives the input and the events.
	Seed uint64
	// Gap is the mean time between events (2s if zero); each gap is drawn
	// from the seed between half and one and a half of it.
	Gap time.Duration
	// Converge bounds the wait for complete output after the last event
	// (3 minutes if zero).
	Converge time.Duration
	// Log receives progress lines; none if nil.
	Log io.Writer
	// Queries makes it a query scenario (query.go): the instances serve
	// queries with standby replicas, a client asks them every QueryEvery
	// while the events happen, and each answer is checked against the
	// read_committed output. Gaps are then drawn between 2 and 5 s.
	Queries bool
	// Static makes the instances static group members (WithInstanceID,
	// one id per member slot, kept across restarts, as a deployment's
	// host names are): a killed instance restarted within its session
	// timeout takes its member's place at once instead of the group
	// waiting out the dead member's session.
	Static bool
	// Extended adds the windowed aggregate, the stream-stream join and
	// the session aggregate to the workload (Topics.Extended); weir-chaos
	// runs it but for query scenarios.
	Extended bool
	// Standbys is the instances' WithStandbyReplicas (warm-ups are on in
	// every scenario, weir's default); negative: drawn from the seed, 0
	// or 1, so that takeovers from a standby and from a restore both run.
	// Query scenarios keep 2 unless it is set.
	Standbys int
}

// Result is a scenario's outcome.
type Result struct {
	Config                                           Config
	Duplicates, Lost, AggregateMismatches, DLQ       int
	Kills, Rebalances, Stalls, Faults, FaultsInvoked int
	NetFaults, DiskFaults, DBRestarts                int
	// Standbys is the standby replicas the instances kept.
	Standbys int
	Elapsed  time.Duration
	Problems []string
	// PG reports that the scenario had the PostgreSQL branches
	// (pgsink.go), checked by the verifier.
	PG bool
	// Queries is the query client's report (query scenarios only).
	Queries *QueryReport
}

// Pass reports whether the scenario passed: nothing lost, every
// aggregate right, no other problem, and — under exactly-once — no
// duplicate.
func (r Result) Pass() bool {
	return r.Lost == 0 && r.AggregateMismatches == 0 && len(r.Problems) == 0 &&
		(r.Config.Guarantee != "exactly-once" || r.Duplicates == 0)
}

// String is the scenario's summary line.
func (r Result) String() string {
	res := "PASS"
	if !r.Pass() {
		res = "FAIL"
	}
	c := r.Config
	return fmt.Sprintf("scenario=%s mode=%s guarantee=%s records=%d duplicates=%d lost=%d aggregate_mismatches=%d dlq=%d"+
		" seed=%d kills=%d rebalances=%d stalls=%d broker_faults=%d net_faults=%d disk_faults=%d standbys=%d%s elapsed=%s result=%s",
		c.Name, c.Mode, c.Guarantee, c.Records, r.Duplicates, r.Lost, r.AggregateMismatches, r.DLQ,
		c.Seed, r.Kills, r.Rebalances, r.Stalls, r.Faults, r.NetFaults, r.DiskFaults, r.Standbys, r.postgres(), r.Elapsed.Round(time.Second), res)
}

// scenario is one Run in progress.
type scenario struct {
	cfg     Config
	rng     *mrand.Rand
	start   time.Time
	topics  Topics
	app     string
	members []*member
	res     Result
	exp     *expectation
	// batch is the micro-batch size of the instances, drawn from the
	// seed (0 in continuous mode).
	batch int64
	// availableNow: the members started now run the AvailableNow trigger
	// (bounded.go).
	availableNow bool
	// producing is held by the input producer for each chunk it writes
	// and by a cluster fault for its whole length, so that no input write
	// is in flight while a broker is killed, stalled or restarted: the
	// suite's own idempotent producer wrote 72 inputs twice across a
	// broker fault once, and the verifier expects each input once.
	producing sync.RWMutex
	// q is the query client of a query scenario (nil otherwise).
	q *queryClient
}

func (s *scenario) logf(format string, args ...any) {
	if s.cfg.Log != nil {
		fmt.Fprintf(s.cfg.Log, "chaos %s/%s/%s [%5.1fs] %s\n", s.cfg.Name, s.cfg.Mode, s.cfg.Guarantee,
			time.Since(s.start).Seconds(), fmt.Sprintf(format, args...))
	}
}

// Run runs one scenario: three instances as child processes process the
// workload while the events happen; then every instance rejoins, the
// output must become complete within Converge, the instances stop
// gracefully, and the verifier checks everything. Failures to run at all
// (no broker, say) are problems of the result too.
func Run(ctx context.Context, cfg Config) Result {
	if cfg.Gap == 0 {
		cfg.Gap = 2 * time.Second
	}
	if cfg.Converge == 0 {
		cfg.Converge = 3 * time.Minute
	}
	s := &scenario{cfg: cfg, rng: mrand.New(mrand.NewPCG(cfg.Seed, 1)), start: time.Now()}
	s.res.Config = cfg
	s.res.Standbys = cfg.Standbys
	if cfg.Standbys < 0 {
		// From a stream of its own, so that the events the seed draws
		// stay those of earlier runs with the same seed.
		s.res.Standbys = mrand.New(mrand.NewPCG(cfg.Seed, 2)).IntN(2)
	}
	if err := s.run(ctx); err != nil {
		s.res.Problems = append(s.res.Problems, err.Error())
	}
	for _, m := range s.members {
		if m.p != nil && !m.p.exited() {
			_ = m.p.kill()
		}
	}
	s.closeProxies()
	if s.app != "" && s.res.Pass() {
		// A passed scenario's topics go: every broker restart recovers
		// every partition it holds, and on a cluster that had accumulated
		// 800 of them a restarted broker took minutes to serve.
		if err := deleteTopics(ctx, cfg.Brokers, s.app+"-"); err != nil {
			s.logf("could not delete the scenario's topics: %v", err)
		}
		if err := dropPostgres(ctx, s.topics); err != nil {
			s.logf("could not drop the scenario's tables: %v", err)
		}
	}
	s.res.Elapsed = time.Since(s.start)
	return s.res
}

func (s *scenario) run(ctx context.Context) error {
	switch c := s.cfg; {
	case c.Mode != "continuous" && c.Mode != "micro-batch":
		return fmt.Errorf("chaos: unknown mode %q (continuous, micro-batch)", c.Mode)
	case c.Guarantee != "at-least-once" && c.Guarantee != "exactly-once":
		return fmt.Errorf("chaos: unknown guarantee %q (at-least-once, exactly-once)", c.Guarantee)
	case c.Records < 1 || len(c.Brokers) == 0 || len(c.Exe) == 0 || c.WorkDir == "":
		return errors.New("chaos: a scenario needs records, brokers, a child command and a work dir")
	}
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	s.app = fmt.Sprintf("weir-chaos-%s-%s-%s-%d-%s", s.cfg.Name, short(s.cfg.Mode), short(s.cfg.Guarantee), s.cfg.Seed, hex.EncodeToString(suffix))
	s.topics = Topics{In: s.app + "-in", Copy: s.app + "-copy", Agg: s.app + "-agg"}
	if s.cfg.Extended {
		s.topics.Win, s.topics.Pairs, s.topics.Sessions = s.app+"-win", s.app+"-pairs", s.app+"-sessions"
		s.topics.Regions, s.topics.RegionTotals = s.app+"-regions", s.app+"-region-totals"
		s.topics.AccountRegions, s.topics.Outer = s.app+"-account-regions", s.app+"-outer"
	}
	s.res.PG = s.topics.pgPrefix() != ""
	create := s.topics.outputs(s.topics.In)
	if s.cfg.Extended {
		create = append(create, s.topics.Regions)
	}
	if err := createTopics(ctx, s.cfg.Brokers, create...); err != nil {
		return err
	}
	if s.cfg.Extended {
		if err := s.fillRegions(ctx); err != nil {
			return err
		}
	}
	if s.cfg.Mode == "micro-batch" {
		// Batches of one to five thousand records: where a batch ends
		// relative to the transactions it reads is part of the
		// interleaving a seed explores.
		s.batch = 1000 + s.rng.Int64N(4001)
		s.logf("micro-batches of at most %d records", s.batch)
	}
	inputs := Generate(s.cfg.Seed, s.cfg.Records)
	var endOfRun []Input // for the outer join's last windows (endofrun.go)
	if s.cfg.Extended {
		endOfRun = EndOfRun(len(inputs))
	}
	var err error
	if s.exp, err = newExpectation(inputs, endOfRun); err != nil {
		return err
	}
	if s.cfg.Extended {
		s.logf("outer join: %d good inputs may still wait at the end, exempt from its check", s.exp.outerExempted())
	}
	if err := os.MkdirAll(s.cfg.WorkDir, 0o755); err != nil {
		return err
	}
	if s.cfg.Queries {
		addrs, err := freeAddrs(3)
		if err != nil {
			return err
		}
		s.q = newQueryClient(ctx, s.cfg.Seed, addrs)
		defer s.q.close()
	}
	for i := range 3 {
		m := &member{name: fmt.Sprintf("m%d", i), slot: i}
		m.newDir(filepath.Join(s.cfg.WorkDir, s.app))
		s.members = append(s.members, m)
	}
	if s.cfg.NetFaults > 0 {
		if err := s.startProxies(); err != nil {
			return err
		}
	}
	for _, m := range s.members {
		if err := s.startMember(m); err != nil {
			return err
		}
	}

	events := s.plan()
	span := time.Duration(len(events)+1) * s.cfg.Gap
	stopQueries := func() {}
	if s.q != nil {
		span = time.Duration(len(events)+1) * (queryGapMin + queryGapMax) / 2
		var qctx context.Context
		qctx, stopQueries = context.WithCancel(ctx)
		defer stopQueries()
		s.q.wg.Go(func() { s.q.run(qctx) })
	}
	produced := make(chan error, 1)
	bounded := s.cfg.Mode == "micro-batch" && s.q == nil
	streamed := inputs
	if bounded { // the last tenth waits for the bounded phase
		streamed = inputs[:len(inputs)-len(inputs)/10]
	}
	go func() { produced <- s.produce(ctx, streamed, 0, span) }()
	for _, ev := range events {
		// Gap on average, between half and one and a half of it; 2–5 s
		// in a query scenario.
		gap := s.cfg.Gap/2 + time.Duration(s.rng.Int64N(int64(s.cfg.Gap)))
		if s.q != nil {
			gap = queryGapMin + time.Duration(s.rng.Int64N(int64(queryGapMax-queryGapMin)))
		}
		if err := s.sleep(ctx, gap); err != nil {
			return err
		}
		if err := s.checkMembers(); err != nil {
			return err
		}
		if err := ev(ctx); err != nil {
			return err
		}
	}
	stopQueries() // queries are asked during the events only
	if err := <-produced; err != nil {
		return err
	}
	if bounded {
		if err := s.stopMembers(); err != nil {
			return err
		}
		if err := s.produce(ctx, inputs[len(streamed):], len(streamed), 0); err != nil {
			return err
		}
	}
	// After every input is acknowledged, so after each partition's inputs.
	if err := s.produceEndOfRun(ctx); err != nil {
		return err
	}
	v := &verifier{brokers: s.cfg.Brokers, topics: s.topics, app: s.app, exp: s.exp, ordered: s.cfg.Guarantee == "exactly-once"}
	if bounded {
		if err := s.drainBounded(ctx, v); err != nil {
			return err
		}
	} else {
		s.logf("produced %d records; every member rejoins", len(inputs))
		for _, m := range s.members {
			if m.p != nil && m.p.stalled {
				m.p.resume()
			}
			if !m.running() {
				if err := s.startMember(m); err != nil {
					return err
				}
			}
		}
		if err := s.converge(ctx, v); err != nil {
			return err
		}
	}
	var stopErrs []error
	for _, m := range s.members {
		stopErrs = append(stopErrs, m.p.stop(60*time.Second))
	}
	if err := errors.Join(stopErrs...); err != nil {
		return err
	}
	s.logf("all members stopped; verifying")
	r, err := v.outputs(ctx)
	if err != nil {
		return err
	}
	r.mismatches += r.pending // the members stopped: no output changes now
	if err := v.finished(ctx, &r); err != nil {
		return err
	}
	var dirs []string
	for _, m := range s.members {
		dirs = append(dirs, m.allDirs...)
	}
	if err := v.stores(ctx, dirs, &r); err != nil {
		return err
	}
	s.res.Duplicates, s.res.Lost, s.res.AggregateMismatches, s.res.DLQ = r.duplicates, r.lost, r.mismatches, r.dlq
	s.res.Problems = append(s.res.Problems, r.problems...)
	if s.q != nil {
		return s.checkQueries(ctx, v)
	}
	return nil
}

// checkQueries checks the query client's answers against the
// read_committed aggregate topic.
func (s *scenario) checkQueries(ctx context.Context, v *verifier) error {
	s.q.close()
	recs, err := v.read(ctx, s.topics.Agg)
	if err != nil {
		return err
	}
	committed := map[string][]Agg{}
	for _, rec := range recs {
		a, err := serde.JSON[Agg]().Deserialize("", rec.Value)
		if err != nil {
			continue // the verifier counted it as a mismatch
		}
		committed[string(rec.Key)] = append(committed[string(rec.Key)], a)
	}
	var r report
	s.res.Queries = s.q.check(s.cfg.Mode, committed, &r)
	if err := s.q.writeAnswers(filepath.Join(s.cfg.WorkDir, s.app+"-queries.tsv"), s.start); err != nil {
		s.logf("%v", err)
	}
	for _, t := range []QueryTally{s.res.Queries.OwnerOnly, s.res.Queries.Stale, s.res.Queries.Waiting} {
		for _, c := range slices.Sorted(maps.Keys(t.Examples)) {
			s.logf("first 503 %s: %s", c, t.Examples[c])
		}
	}
	s.res.Problems = append(s.res.Problems, r.problems...)
	return nil
}

// converge waits until the group committed the whole input and the
// outputs are complete (nothing lost), for at most Converge.
func (s *scenario) converge(ctx context.Context, v *verifier) error {
	deadline := time.Now().Add(s.cfg.Converge)
	var last string
	for {
		if err := s.checkMembers(); err != nil {
			return err
		}
		end, committed, err := v.inputProgress(ctx)
		if err != nil {
			last = err.Error()
		} else if lag := lagOf(end, committed); lag > 0 {
			last = fmt.Sprintf("the group is %d records behind the input", lag)
		} else {
			r, err := v.outputs(ctx)
			switch {
			case err != nil:
				last = err.Error()
			case r.lost == 0 && r.pending == 0:
				s.logf("output complete")
				return nil
			default:
				last = fmt.Sprintf("%d outputs missing, %d not final yet, e.g. %v", r.lost, r.pending, r.problems[:min(3, len(r.problems))])
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("chaos: no complete output within %v of the last event: %s", s.cfg.Converge, last)
		}
		if err := s.sleep(ctx, time.Second); err != nil {
			return err
		}
	}
}

func lagOf(end, committed map[int32]int64) int64 {
	var lag int64
	for p, e := range end {
		lag += e - committed[p]
	}
	return lag
}

// plan returns the scenario's events in a seeded random order.
func (s *scenario) plan() []func(context.Context) error {
	var evs []func(context.Context) error
	for range s.cfg.Kills {
		evs = append(evs, s.kill)
	}
	for range (s.cfg.Rebalances + 1) / 2 {
		evs = append(evs, s.leaveAndJoin)
	}
	for range s.cfg.Stalls {
		evs = append(evs, s.stall)
	}
	if s.cfg.Nodes != nil {
		for i := range s.cfg.Faults {
			f := clusterFaults[i%len(clusterFaults)]
			evs = append(evs, func(ctx context.Context) error { return s.clusterFault(ctx, f) })
		}
	} else if s.cfg.Cluster != nil {
		var faults []brokerFault
		for _, f := range brokerFaults {
			if !f.txn || s.cfg.Guarantee == "exactly-once" {
				faults = append(faults, f)
			}
		}
		for i := range s.cfg.Faults {
			f := faults[i%len(faults)]
			evs = append(evs, func(ctx context.Context) error { return s.fault(ctx, f) })
		}
	}
	for range s.cfg.NetFaults {
		kind := netFaultKinds[s.rng.IntN(len(netFaultKinds))]
		evs = append(evs, func(ctx context.Context) error { return s.netFault(ctx, kind) })
	}
	for range s.cfg.DiskFaults {
		kind := diskFaultKinds[s.rng.IntN(len(diskFaultKinds))]
		evs = append(evs, func(ctx context.Context) error { return s.diskFault(ctx, kind) })
	}
	for range s.dbRestarts() {
		evs = append(evs, s.dbRestart)
	}
	s.rng.Shuffle(len(evs), func(i, j int) { evs[i], evs[j] = evs[j], evs[i] })
	return evs
}

func (s *scenario) startMember(m *member) error {
	cfg := ChildConfig{Brokers: s.cfg.Brokers, App: s.app, StateDir: m.dir, Mode: s.cfg.Mode, Guarantee: s.cfg.Guarantee, Topics: s.topics, MaxRecordsPerBatch: s.batch, AvailableNow: s.availableNow}
	if m.proxy != nil {
		cfg.Brokers = m.proxy.Bootstrap(s.cfg.Brokers)
	}
	cfg.MinFreeDisk = m.minFreeDisk
	cfg.Standbys = s.res.Standbys
	if s.q != nil {
		cfg.HTTP = s.q.addrs[m.slot]
	}
	if s.cfg.Static {
		cfg.InstanceID = s.app + "-" + m.name
	}
	m.starts++
	if err := os.MkdirAll(filepath.Dir(m.dir), 0o755); err != nil {
		return err
	}
	p, err := startProc(s.cfg.Exe, cfg, filepath.Join(filepath.Dir(m.dir), fmt.Sprintf("%s-%d.log", m.name, m.starts)))
	if err != nil {
		return err
	}
	m.p = p
	if s.q != nil {
		s.q.started(m.slot)
	}
	return nil
}

// down tells the query client that m's instance is about to go.
func (s *scenario) down(m *member) {
	if s.q != nil {
		s.q.killing(m.slot)
	}
}

// checkMembers fails the scenario if a child exited on its own.
func (s *scenario) checkMembers() error {
	for _, m := range s.members {
		if m.p != nil && m.p.exited() {
			return fmt.Errorf("chaos: member %s exited by itself: %v (%s)", m.name, m.p.err, m.p.lastWords())
		}
	}
	return nil
}

// running returns a random running (not stalled) member, nil if none.
func (s *scenario) pick() *member {
	var ms []*member
	for _, m := range s.members {
		if m.running() && !m.p.stalled {
			ms = append(ms, m)
		}
	}
	if len(ms) == 0 {
		return nil
	}
	return ms[s.rng.IntN(len(ms))]
}

// kill SIGKILLs a member and restarts it, on the same state dir or, one
// time in three, on an empty one (its state then comes from the
// changelog).
func (s *scenario) kill(ctx context.Context) error {
	m := s.pick()
	if m == nil {
		return nil
	}
	s.down(m)
	if err := m.p.kill(); err != nil {
		return err
	}
	s.res.Kills++
	fresh := s.rng.IntN(3) == 0
	if fresh {
		m.newDir(filepath.Dir(m.dir))
	}
	s.logf("killed %s (SIGKILL); restarting it on %s state dir", m.name, map[bool]string{true: "an empty", false: "its"}[fresh])
	if err := s.sleep(ctx, 500*time.Millisecond); err != nil {
		return err
	}
	return s.startMember(m)
}

// leaveAndJoin stops a member gracefully (it leaves the group) and starts
// it again a gap later (it joins): two rebalances.
func (s *scenario) leaveAndJoin(ctx context.Context) error {
	m := s.pick()
	if m == nil {
		return nil
	}
	s.down(m)
	if err := m.p.stop(60 * time.Second); err != nil {
		return err
	}
	s.res.Rebalances++
	s.logf("%s left (graceful stop)", m.name)
	if err := s.sleep(ctx, s.cfg.Gap); err != nil {
		return err
	}
	if err := s.startMember(m); err != nil {
		return err
	}
	s.res.Rebalances++
	s.logf("%s joined", m.name)
	return nil
}

// stall stops a member (SIGSTOP) past its session timeout, then wakes it.
func (s *scenario) stall(ctx context.Context) error {
	m := s.pick()
	if m == nil {
		return nil
	}
	m.p.stall()
	s.res.Stalls++
	d := SessionTimeout + 3*time.Second
	s.logf("%s stalled (SIGSTOP) for %v", m.name, d)
	if err := s.sleep(ctx, d); err != nil {
		return err
	}
	m.p.resume()
	s.logf("%s woke up (SIGCONT)", m.name)
	return nil
}

// fault injects one broker fault and removes what is left of it a gap
// later.
func (s *scenario) fault(ctx context.Context, f brokerFault) error {
	remove := f.install(s.cfg.Cluster)
	s.res.Faults++
	s.logf("broker fault: %s", f.name)
	err := s.sleep(ctx, s.cfg.Gap)
	remove()
	return err
}

func (s *scenario) sleep(ctx context.Context, d time.Duration) error { return sleepCtx(ctx, d) }

// sleepCtx waits d, or returns ctx's error if it ends first.
func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// produce writes the inputs, keyed by account, spread over span, and
// records each one's partition and offset; inputs begins at the
// workload's input number base.
func (s *scenario) produce(ctx context.Context, inputs []Input, base int, span time.Duration) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.cfg.Brokers...), kgo.ClientID("weir-chaos-producer"),
		kgo.DefaultProduceTopic(s.topics.In), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	const batch = 500
	start := time.Now()
	for first := 0; first < len(inputs); first += batch {
		last := min(first+batch, len(inputs))
		recs := make([]*kgo.Record, 0, last-first)
		for _, in := range inputs[first:last] {
			recs = append(recs, &kgo.Record{Key: []byte(in.Key), Value: in.Value(), Timestamp: stamp(in.ID)})
		}
		// The lock first: a cluster fault holds it for minutes on a busy
		// machine, which must not count against the write's own bound.
		s.producing.RLock()
		pctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		res := cl.ProduceSync(pctx, recs...)
		cancel()
		s.producing.RUnlock()
		if err := res.FirstErr(); err != nil {
			return fmt.Errorf("chaos: produce the input: %w", err)
		}
		for i, r := range recs { // kgo sets each record's partition and offset
			s.exp.part[base+first+i], s.exp.off[base+first+i] = r.Partition, r.Offset
		}
		if wait := time.Until(start.Add(span * time.Duration(last) / time.Duration(len(inputs)))); wait > 0 {
			if err := s.sleep(ctx, wait); err != nil {
				return err
			}
		}
	}
	return nil
}

// produceEndOfRun writes the end-of-run records (s.exp.endOfRun), each to
// the partition its key hashes to, as the inputs are.
func (s *scenario) produceEndOfRun(ctx context.Context) error {
	if len(s.exp.endOfRun) == 0 {
		return nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.cfg.Brokers...), kgo.ClientID("weir-chaos-producer"),
		kgo.DefaultProduceTopic(s.topics.In))
	if err != nil {
		return err
	}
	defer cl.Close()
	var recs []*kgo.Record
	for _, in := range s.exp.endOfRun {
		recs = append(recs, &kgo.Record{Key: []byte(in.Key), Value: in.Value(), Timestamp: stamp(in.ID)})
	}
	s.producing.RLock()
	pctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	res := cl.ProduceSync(pctx, recs...)
	cancel()
	s.producing.RUnlock()
	if err := res.FirstErr(); err != nil {
		return fmt.Errorf("chaos: produce the end-of-run records: %w", err)
	}
	s.logf("produced %d end-of-run records", len(recs))
	return nil
}

// fillRegions writes the regions table: RegionKey(i) → RegionName(i),
// stamped at the base time, before any input (so that a task reading both
// by timestamp meets the regions first; the join's result is the same
// either way once every record is read).
func (s *scenario) fillRegions(ctx context.Context) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.cfg.Brokers...), kgo.ClientID("weir-chaos-producer"),
		kgo.DefaultProduceTopic(s.topics.Regions))
	if err != nil {
		return err
	}
	defer cl.Close()
	var recs []*kgo.Record
	for i := range Regions {
		recs = append(recs, &kgo.Record{Key: []byte(RegionKey(i)), Value: []byte(RegionName(i)), Timestamp: baseTime})
	}
	pctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := cl.ProduceSync(pctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("chaos: produce the regions table: %w", err)
	}
	return nil
}

// deleteTopics deletes every topic whose name begins with prefix.
func deleteTopics(ctx context.Context, brokers []string, prefix string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ClientID("weir-chaos-admin"))
	if err != nil {
		return err
	}
	defer cl.Close()
	meta, err := metadata(ctx, cl)
	if err != nil {
		return err
	}
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TimeoutMillis = 30_000
	for _, t := range meta.Topics {
		if t.Topic != nil && strings.HasPrefix(*t.Topic, prefix) {
			dt := kmsg.NewDeleteTopicsRequestTopic()
			dt.Topic = t.Topic
			req.Topics = append(req.Topics, dt)
			req.TopicNames = append(req.TopicNames, *t.Topic)
		}
	}
	if len(req.Topics) == 0 {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	resp, err := req.RequestWith(cctx, cl)
	if err != nil {
		return fmt.Errorf("chaos: delete topics: %w", err)
	}
	var errs []error
	for _, t := range resp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			errs = append(errs, fmt.Errorf("chaos: delete topic %v: %w", t.Topic, err))
		}
	}
	return errors.Join(errs...)
}

// createTopics creates topics with Partitions partitions each.
func createTopics(ctx context.Context, brokers []string, names ...string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ClientID("weir-chaos-admin"))
	if err != nil {
		return err
	}
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 30_000
	for _, n := range names {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = n, Partitions, -1
		req.Topics = append(req.Topics, t)
	}
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	resp, err := req.RequestWith(cctx, cl)
	if err != nil {
		return fmt.Errorf("chaos: create topics: %w", err)
	}
	for _, t := range resp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return fmt.Errorf("chaos: create topic %s: %w", t.Topic, err)
		}
	}
	// A real cluster answers before every broker knows the topics: wait
	// until each partition has a leader that answers.
	for _, n := range names {
		for {
			_, err := kafkaverify.EndOffsets(cctx, brokers, n, false)
			if err == nil {
				break
			}
			if cctx.Err() != nil {
				return fmt.Errorf("chaos: topic %s never became ready: %w", n, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

func short(s string) string {
	var b strings.Builder
	for w := range strings.SplitSeq(s, "-") {
		if w != "" {
			b.WriteByte(w[0])
		}
	}
	return b.String()
}
