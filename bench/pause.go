package main

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/IBM/sarama"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
)

// The pause scenario (-pause; issue 45, "The pause, measured"): four
// instances of one application — each its own process — count the records
// of a keyed input of 24 partitions (a word count without its repartition:
// every record is one word keyed by itself, GroupByKey → Count → To), so
// that output partition p is written by task p alone (input and output are
// partitioned by the Java client's murmur2, as weir's and Kafka Streams'
// producers do). The input is preloaded with every key once (the state:
// -pause-keys keys, 1,000,000 by default, 50,000 with -quick), then a
// steady load of random keys is offered while three events happen, in
// order, each followed by a window:
//
//   - kill: one instance is killed (SIGKILL);
//   - add: a new instance with an empty state dir starts;
//   - stop: another instance stops gracefully (SIGTERM).
//
// Before them, a quiet window ("none") measures the noise floor. For each
// event and partition, the pause is the longest time without output on
// that partition from the event to the end of its window (the gap from
// the event to the first output after it included): p50 and max over the
// 24 partitions, and when every partition had moved again after its
// longest gap. Each configuration (pauseConfigs) runs the whole sequence
// on fresh topics with its own application id.
const (
	pausePartitions = 24
	pauseInstances  = 4
	pauseBin        = 200 * time.Millisecond // the chart's rate bins
)

var (
	pauseOn      = flag.Bool("pause", false, "run the rebalance-pause scenario (pause.go) instead of the throughput rows")
	pauseKeys    = flag.Int("pause-keys", 0, "the pause scenario's keys (its state; default 1,000,000, -quick 50,000)")
	pauseRate    = flag.Int("pause-rate", 1200, "records a second the pause scenario offers during its events")
	pauseSession = flag.Duration("pause-session", 10*time.Second, "the pause scenario's session timeout, weir's and Kafka Streams' alike")
	pauseBeat    = flag.Duration("pause-heartbeat", 0, "the pause scenario's heartbeat interval, weir's and Kafka Streams' alike (default a fifteenth of the session timeout, the ratio of both systems' defaults)")
	pauseSystems = flag.String("pause-systems", strings.Join(pauseDefaultSystems, ","), "the pause scenario's configurations")
)

// pauseDefaultSystems are the configurations the scenario runs: weir
// without standbys or warm-ups, with warm-ups (its default, 2), with one
// standby and warm-ups; Kafka Streams 4.4 with its defaults (0 standbys,
// warm-ups 2, the classic protocol) and with one standby.
// pause-kstreams-streams-s<N> (the streams group protocol, KIP-1071) is
// not among them: its session timeout is the broker's
// group.streams.session.timeout.ms (45 s at least by default), not
// -pause-session, so its kill outlasts the window (docs/benchmarks.md).
var pauseDefaultSystems = []string{"pause-weir-s0-w0", "pause-weir-s0-w2", "pause-weir-s1-w2",
	"pause-kstreams-s0", "pause-kstreams-s1"}

// pauseConfig is one configuration, parsed from its name:
// pause-weir-s<standbys>-w<max warm-ups> or pause-kstreams[-streams]-s<standbys>.
type pauseConfig struct {
	name     string
	kstreams bool
	protocol string // kstreams: "classic" or "streams"
	standbys int
	warmups  int // weir: WithMaxWarmupReplicas (0: off)
}

func parsePauseConfig(name string) (pauseConfig, error) {
	c := pauseConfig{name: name, protocol: "classic", warmups: 2}
	rest, ok := strings.CutPrefix(name, "pause-")
	if !ok {
		return c, fmt.Errorf("bench: pause system %q: not pause-…", name)
	}
	parts := strings.Split(rest, "-")
	switch parts[0] {
	case "weir":
	case "kstreams":
		c.kstreams = true
	default:
		return c, fmt.Errorf("bench: pause system %q: neither weir nor kstreams", name)
	}
	for _, p := range parts[1:] {
		var err error
		switch {
		case p == "streams" && c.kstreams:
			c.protocol = "streams"
		case strings.HasPrefix(p, "s"):
			c.standbys, err = strconv.Atoi(p[1:])
		case strings.HasPrefix(p, "w") && !c.kstreams:
			c.warmups, err = strconv.Atoi(p[1:])
		default:
			err = fmt.Errorf("unknown part %q", p)
		}
		if err != nil {
			return c, fmt.Errorf("bench: pause system %q: %w", name, err)
		}
	}
	return c, nil
}

// pauseChild returns the child function of the pause scenario's weir
// configurations, or nil for other systems.
func pauseChild(sys string) func(context.Context, childArgs) error {
	c, err := parsePauseConfig(sys)
	if err != nil || c.kstreams {
		return nil
	}
	return func(ctx context.Context, a childArgs) error { return runPauseWeir(ctx, a, c) }
}

// runPauseWeir runs one weir instance of the pause scenario: exactly
// once, 100 ms epochs (as the other weir rows), the configuration's
// standbys and warm-ups, the session timeout from WEIR_BENCH_PAUSE_SESSION.
func runPauseWeir(ctx context.Context, a childArgs, c pauseConfig) error {
	b := topology.NewBuilder()
	topology.NewStream(b, a.in, serde.String(), serde.String()).
		GroupByKey().
		Count(topology.Materialized("counts")).
		ToStream().
		To(a.out)
	topo, err := b.Build()
	if err != nil {
		return err
	}
	session, err := time.ParseDuration(os.Getenv("WEIR_BENCH_PAUSE_SESSION"))
	if err != nil {
		return fmt.Errorf("WEIR_BENCH_PAUSE_SESSION: %w", err)
	}
	beat, err := time.ParseDuration(os.Getenv("WEIR_BENCH_PAUSE_HEARTBEAT"))
	if err != nil {
		return fmt.Errorf("WEIR_BENCH_PAUSE_HEARTBEAT: %w", err)
	}
	app, err := weir.New(topo,
		weir.WithBrokers(a.brokers...),
		weir.WithApplicationID(a.app),
		weir.WithStateDir(a.dir),
		weir.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))),
		weir.WithEpochInterval(100*time.Millisecond),
		weir.WithGuarantee(weir.ExactlyOnce),
		weir.WithSessionTimeout(session),
		weir.WithHeartbeatInterval(beat),
		weir.WithStandbyReplicas(c.standbys),
		weir.WithMaxWarmupReplicas(c.warmups),
	)
	if err != nil {
		return err
	}
	return app.Run(ctx)
}

// instance is one running process of a configuration.
type instance struct {
	*child
	dir string
}

// rss returns the process's resident set (VmRSS) in KiB, or 0.
func (in *instance) rss() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", in.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}

// diskBytes sums the disk blocks of the regular files under dir, as du
// does: Badger preallocates its value-log and memtable files sparsely, so
// their sizes would count space never written.
func diskBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				if st, ok := fi.Sys().(*syscall.Stat_t); ok {
					n += st.Blocks * 512
				} else {
					n += fi.Size()
				}
			}
		}
		return nil
	})
	return n
}

// pauseRunner runs the scenario against one broker.
type pauseRunner struct {
	h       *harness
	keys    int
	rate    int
	session time.Duration
	beat    time.Duration // the heartbeat interval; zero: a third of session
	settle  time.Duration // after the backlog: standbys catch up
	quiet   time.Duration // the "none" window
	wins    map[string]time.Duration
}

// startInstance starts instance idx of configuration c as a child process.
func (pr *pauseRunner) startInstance(c pauseConfig, run string, idx int, in, out string) (*instance, error) {
	dir := filepath.Join(pr.h.tmp, fmt.Sprintf("%s-i%d", run, idx))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	logPath := dir + ".log"
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	brokers := strings.Join(pr.h.addrs, ",")
	var cmd *exec.Cmd
	if c.kstreams {
		// -Xmx1g: four JVMs on the machine; the default heap is a quarter of its memory each.
		cmd = exec.Command("java", "-Xmx1g", "-jar", pr.h.ksJar, "kstreams-eos", "keycount", brokers, in, out, run, dir)
	} else {
		cmd = exec.Command(os.Args[0], "-child", c.name, "-workload", "keycount", "-in", in, "-out", out,
			"-app", run, "-dir", dir, "-brokers", brokers)
	}
	cmd.Env = append(os.Environ(),
		"WEIR_BENCH_PAUSE_SESSION="+pr.session.String(),
		"WEIR_BENCH_KS_SESSION_MS="+strconv.FormatInt(pr.session.Milliseconds(), 10),
		"WEIR_BENCH_PAUSE_HEARTBEAT="+pr.heartbeat().String(),
		"WEIR_BENCH_KS_HEARTBEAT_MS="+strconv.FormatInt(pr.heartbeat().Milliseconds(), 10),
		"WEIR_BENCH_KS_STANDBYS="+strconv.Itoa(c.standbys),
		"WEIR_BENCH_KS_PROTOCOL="+c.protocol)
	cmd.Stdout, cmd.Stderr = lf, lf
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, err
	}
	ch := &child{cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); lf.Close(); close(ch.done) }()
	return &instance{child: ch, dir: dir}, nil
}

// createTopic24 creates a topic of pausePartitions partitions.
func (pr *pauseRunner) createTopic24(topic string) error {
	if err := pr.h.admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: pausePartitions, ReplicationFactor: 1}, false); err != nil {
		return err
	}
	for i := 0; ; i++ {
		ps, err := pr.h.client.Partitions(topic)
		if err == nil && len(ps) == pausePartitions {
			ok := true
			for _, p := range ps {
				if _, err := pr.h.client.Leader(topic, p); err != nil {
					ok = false
				}
			}
			if ok {
				return nil
			}
		}
		if i > 100 {
			return fmt.Errorf("bench: topic %s: partitions not ready: %v", topic, err)
		}
		_ = pr.h.client.RefreshMetadata(topic)
		time.Sleep(100 * time.Millisecond)
	}
}

// producer sends keyed records to the partition the Java client would pick.
func (pr *pauseRunner) producer() (sarama.AsyncProducer, *atomic.Int64, error) {
	cfg := saramaConfig()
	cfg.Producer.RequiredAcks = sarama.WaitForLocal
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Flush.Messages = 500
	cfg.Producer.Flush.Frequency = 5 * time.Millisecond
	prod, err := sarama.NewAsyncProducer(pr.h.addrs, cfg)
	if err != nil {
		return nil, nil, err
	}
	var errs atomic.Int64
	go func() {
		for e := range prod.Errors() {
			if errs.Add(1) == 1 {
				fmt.Fprintln(os.Stderr, "bench: pause producer:", e)
			}
		}
	}()
	return prod, &errs, nil
}

func pauseMsg(topic, key string) *sarama.ProducerMessage {
	return &sarama.ProducerMessage{Topic: topic, Partition: keyPartition(key, pausePartitions),
		Key: sarama.StringEncoder(key), Value: sarama.StringEncoder(key)}
}

// preload writes every key once.
func (pr *pauseRunner) preload(topic string) error {
	prod, errs, err := pr.producer()
	if err != nil {
		return err
	}
	for i := range pr.keys {
		prod.Input() <- pauseMsg(topic, pauseKey(i))
	}
	if err := prod.Close(); err != nil {
		return fmt.Errorf("bench: preload: %w", err)
	}
	if errs.Load() > 0 {
		return fmt.Errorf("bench: preload: %d errors", errs.Load())
	}
	return nil
}

// offer sends random keys at pr.rate a second until ctx is done.
func (pr *pauseRunner) offer(ctx context.Context, topic string) error {
	prod, _, err := pr.producer()
	if err != nil {
		return err
	}
	defer prod.AsyncClose()
	r := rand.New(rand.NewSource(3))
	start := time.Now()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	sent := 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-tick.C:
			for due := int(now.Sub(start).Seconds() * float64(pr.rate)); sent < due; sent++ {
				prod.Input() <- pauseMsg(topic, pauseKey(r.Intn(pr.keys)))
			}
		}
	}
}

// sleepCtx waits d or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// runConfig runs the scenario's sequence for one configuration.
func (pr *pauseRunner) runConfig(ctx context.Context, c pauseConfig) (row pauseRow) {
	row.cfg = c
	pr.h.seq++
	run := fmt.Sprintf("pause%d-%d-%s", time.Now().Unix()%100000, pr.h.seq, strings.TrimPrefix(c.name, "pause-"))
	in, out := run+"-in", run+"-out"
	for _, t := range []string{in, out} {
		if err := pr.createTopic24(t); err != nil {
			row.err = err.Error()
			return
		}
	}
	t0 := time.Now()
	if err := pr.preload(in); err != nil {
		row.err = err.Error()
		return
	}
	fmt.Fprintf(os.Stderr, "bench: pause %s: preloaded %d keys in %s\n", c.name, pr.keys, time.Since(t0).Round(time.Millisecond))
	w, err := pr.newWatch(out)
	if err != nil {
		row.err = err.Error()
		return
	}
	defer w.close()
	var insts []*instance
	defer func() {
		for _, in := range insts {
			row.instLogs = append(row.instLogs, in.log)
			if !in.exited() {
				in.stop()
			}
		}
	}()
	start := time.Now()
	for i := range pauseInstances {
		inst, err := pr.startInstance(c, run, i, in, out)
		if err != nil {
			row.err = err.Error()
			return
		}
		insts = append(insts, inst)
	}
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	go func() { _ = pr.offer(loadCtx, in) }()
	// The backlog: every preloaded key counted and every partition moving.
	deadline, lastLog := start.Add(6*time.Minute), start
	for w.total.Load() < int64(pr.keys) || !w.allMovedSince(time.Now().Add(-5*time.Second)) {
		for _, inst := range insts {
			if inst.exited() {
				row.err = "an instance exited during the backlog: " + inst.tail()
				return
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			row.err = fmt.Sprintf("backlog not done after 6 min: %d outputs (%d keys), %d of %d partitions moving in the last 5 s", w.total.Load(), pr.keys, w.moving(time.Now().Add(-5*time.Second)), pausePartitions)
			return
		}
		if time.Since(lastLog) > 15*time.Second {
			lastLog = time.Now()
			fmt.Fprintf(os.Stderr, "bench: pause %s: backlog: %d of %d outputs, %d partitions moving\n", c.name, w.total.Load(), pr.keys, w.moving(time.Now().Add(-5*time.Second)))
		}
		time.Sleep(50 * time.Millisecond)
	}
	row.backlog = time.Since(start)
	fmt.Fprintf(os.Stderr, "bench: pause %s: backlog done in %s\n", c.name, row.backlog.Round(time.Millisecond))
	sleepCtx(ctx, pr.settle)
	for _, inst := range insts {
		row.rssKiB = append(row.rssKiB, inst.rss())
		row.diskB = append(row.diskB, diskBytes(inst.dir))
	}
	w.record()
	type ev struct {
		name string
		at   time.Time
		win  time.Duration
	}
	var evs []ev
	step := func(name string, win time.Duration, do func() error) bool {
		at := time.Now()
		if err := do(); err != nil {
			row.err = name + ": " + err.Error()
			return false
		}
		fmt.Fprintf(os.Stderr, "bench: pause %s: %s\n", c.name, name)
		evs = append(evs, ev{name, at, win})
		sleepCtx(ctx, win)
		return ctx.Err() == nil
	}
	_ = step("none", pr.quiet, func() error { return nil }) &&
		step("kill", pr.wins["kill"], func() error { return insts[3].cmd.Process.Kill() }) &&
		step("add", pr.wins["add"], func() error {
			inst, err := pr.startInstance(c, run, 4, in, out)
			if err == nil {
				insts = append(insts, inst)
			}
			return err
		}) &&
		step("stop", pr.wins["stop"], func() error { return insts[0].cmd.Process.Signal(syscall.SIGTERM) })
	arr := w.snapshot()
	for _, e := range evs {
		r := measure(arr, e.name, e.at, e.win)
		fmt.Fprintf(os.Stderr, "bench: pause %s: %s: p50 %s max %s, all moving %s after, %d stuck\n",
			c.name, e.name, r.p50().Round(time.Millisecond), r.max().Round(time.Millisecond), r.resumed.Round(time.Millisecond), r.stuck)
		row.events = append(row.events, r)
	}
	return row
}

// pauseRun runs the scenario when -pause is set and reports whether it did
// (main then returns).
func pauseRun(ctx context.Context, h *harness, brokerDesc string, quick bool, outDir string) bool {
	if !*pauseOn {
		return false
	}
	pr := &pauseRunner{h: h, keys: 1_000_000, rate: *pauseRate, session: *pauseSession, beat: *pauseBeat,
		settle: 30 * time.Second, quiet: 10 * time.Second}
	if quick {
		pr.keys, pr.settle = 50_000, 20*time.Second
	}
	if *pauseKeys > 0 {
		pr.keys = *pauseKeys
	}
	pr.wins = map[string]time.Duration{
		"kill": pr.session + 20*time.Second,
		"add":  40 * time.Second,
		"stop": pr.session + 20*time.Second,
	}
	var rows []pauseRow
	for _, name := range strings.Split(*pauseSystems, ",") {
		if name == "" || ctx.Err() != nil {
			continue
		}
		c, err := parsePauseConfig(name)
		if err != nil {
			fatal(err)
		}
		if c.kstreams && h.ksJar == "" {
			if why, ok := h.skip["pause-kstreams"]; ok {
				rows = append(rows, pauseRow{cfg: c, skip: why})
				continue
			}
			jar, why := builtKStreams()
			if why == "" && h.embedded {
				why = kstreamsEmbeddedWordCount
			}
			if why != "" {
				h.skip["pause-kstreams"] = why
				rows = append(rows, pauseRow{cfg: c, skip: why})
				continue
			}
			h.ksJar = jar
		}
		r := pr.runConfig(ctx, c)
		if r.err != "" {
			fmt.Fprintf(os.Stderr, "bench: pause %s: FAILED: %s\n", name, r.err)
		}
		rows = append(rows, r)
	}
	md := renderPause(rows, pr, brokerDesc, quick)
	fmt.Print(md)
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outDir, "latest.md"), []byte(md), 0o644); err != nil {
		fatal(err)
	}
	if err := writePauseChart(filepath.Join(outDir, "pause.png"), rows); err != nil {
		fatal(err)
	}
	return true
}

// builtKStreams is buildKStreams, but takes a jar newer than the app's
// sources and pom.xml as it is (Maven's own check takes minutes of JVM
// start-up on a loaded machine).
func builtKStreams() (jar, skip string) {
	jar, err := filepath.Abs(filepath.Join("kstreams", "target", "kstreams-bench.jar"))
	if err != nil {
		return "", err.Error()
	}
	ji, err := os.Stat(jar)
	if err != nil {
		return buildKStreams("kstreams")
	}
	for _, src := range []string{"kstreams/pom.xml", "kstreams/src/main/java/weirbench/Bench.java"} {
		if si, err := os.Stat(src); err != nil || si.ModTime().After(ji.ModTime()) {
			return buildKStreams("kstreams")
		}
	}
	return jar, ""
}

// heartbeat is the instances' heartbeat interval: -pause-heartbeat, or
// the session timeout's fifteenth (at least 100 ms): the ratio of both
// systems' defaults (heartbeat.interval.ms 3 s of session.timeout.ms 45 s;
// weir's WithHeartbeatInterval and WithSessionTimeout alike). Survivors
// hear of a dead member's expiry at their next heartbeat, so the interval
// is part of a kill's pause; Kafka's documented bound is a third.
func (pr *pauseRunner) heartbeat() time.Duration {
	if pr.beat > 0 {
		return pr.beat
	}
	return max(pr.session/15, 100*time.Millisecond)
}
