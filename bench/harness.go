package main

import (
	"cmp"
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/IBM/sarama"
)

type params struct {
	statelessN, wordLines int
	latRate               int
	latDur, runTimeout    time.Duration
	runs                  int // times each throughput row runs (rounds)
}

// latWarm is how long each latency row offers its load, unmeasured,
// before its window (latency).
const latWarm = 2 * time.Second

type harness struct {
	addrs  []string
	tmp    string
	p      params
	client sarama.Client
	admin  sarama.ClusterAdmin
	seq    int
	// skip maps a system to the reason its rows are not run (e.g. the
	// Kafka Streams rows without java/mvn); ksJar is the built app.
	skip     map[string]string
	ksJar    string
	embedded bool
	inputs   map[string]input // per workload
	// wordCounts is each word's count in the word count's input: the
	// final counts the rows with record caches wait for.
	wordCounts map[string]int64
}

func newHarness(addrs []string, tmp string, p params) (*harness, error) {
	cfg := saramaConfig()
	client, err := sarama.NewClient(addrs, cfg)
	if err != nil {
		return nil, err
	}
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		return nil, err
	}
	return &harness{addrs: addrs, tmp: tmp, p: p, client: client, admin: admin, skip: map[string]string{}, inputs: map[string]input{}}, nil
}

func (h *harness) close() { _ = h.admin.Close() }

func (h *harness) topics(tag string) (run, in, out string, err error) {
	h.seq++
	run = fmt.Sprintf("bench%d-%d-%s", time.Now().Unix()%100000, h.seq, tag)
	in, out = run+"-in", run+"-out"
	for _, t := range []string{in, out} {
		if err = h.createTopic(t); err != nil {
			return
		}
	}
	return
}

// createTopic creates topic and waits until every partition has a leader
// (right after creation a broker may still answer NOT_LEADER).
func (h *harness) createTopic(topic string) error {
	if err := h.admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 1}, false); err != nil {
		return err
	}
	ps, err := partitionsOf(h.client, topic)
	if err != nil {
		return err
	}
	for _, p := range ps {
		for i := 0; ; i++ {
			if _, err := h.client.Leader(topic, p); err == nil {
				break
			} else if i > 50 {
				return fmt.Errorf("leader of %s/%d: %w", topic, p, err)
			}
			_ = h.client.RefreshMetadata(topic)
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

// input is a workload's preloaded input topic, shared by every system's
// throughput run: each reads it from the start with its own group.
type input struct {
	topic                string
	in, outCopy, outProc int
}

// inputFor creates and preloads the workload's input topic once.
func (h *harness) inputFor(wl string) (input, error) {
	if in, ok := h.inputs[wl]; ok {
		return in, nil
	}
	h.seq++
	topic := fmt.Sprintf("bench%d-%d-%s-in", time.Now().Unix()%100000, h.seq, wl[:4])
	if err := h.createTopic(topic); err != nil {
		return input{}, err
	}
	n, outCopy, outProc, err := h.preload(topic, wl)
	if err != nil {
		return input{}, err
	}
	in := input{topic: topic, in: n, outCopy: outCopy, outProc: outProc}
	h.inputs[wl] = in
	return in, nil
}

// value builds a 100-byte value: the send time as 19 ASCII digits, then
// lowercase letters; drop puts a 'z' at byte 19 so the filter drops it.
func value(sendNanos int64, drop bool) []byte {
	v := fmt.Appendf(make([]byte, 0, 100), "%019d", sendNanos)
	for len(v) < 100 {
		v = append(v, 'a'+byte(len(v)%25)) // never 'z'
	}
	if drop {
		v[19] = 'z'
	}
	return v
}

var vocab = func() []string {
	r := rand.New(rand.NewSource(1))
	seen := map[string]bool{}
	var ws []string
	for len(ws) < 1000 {
		n := 3 + r.Intn(6)
		b := make([]byte, n)
		for i := range b {
			b[i] = 'a' + byte(r.Intn(26))
		}
		if !seen[string(b)] {
			seen[string(b)] = true
			ws = append(ws, string(b))
		}
	}
	return ws
}()

// preload writes the workload's input; it returns the input count and
// the output count each kind of system must reach.
func (h *harness) preload(topic, wl string) (in, outCopy, outProc int, err error) {
	cfg := saramaConfig()
	cfg.Producer.RequiredAcks = sarama.WaitForLocal
	cfg.Producer.Flush.Messages = 1000
	cfg.Producer.Flush.Frequency = 5 * time.Millisecond
	prod, err := sarama.NewAsyncProducer(h.addrs, cfg)
	if err != nil {
		return
	}
	var errs atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for e := range prod.Errors() {
			if errs.Add(1) == 1 {
				fmt.Fprintln(os.Stderr, "preload:", e)
			}
		}
	}()
	if wl == wlStateless {
		in = h.p.statelessN
		for i := 0; i < in; i++ {
			drop := i%10 == 0
			if !drop {
				outProc++
			}
			prod.Input() <- &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(fmt.Sprint(i)), Value: sarama.ByteEncoder(value(0, drop))}
		}
	} else {
		in = h.p.wordLines
		h.wordCounts = map[string]int64{}
		r := rand.New(rand.NewSource(2))
		for i := 0; i < in; i++ {
			ws := make([]string, 10)
			for j := range ws {
				ws[j] = vocab[r.Intn(len(vocab))]
			}
			outProc += len(ws)
			for _, w := range ws {
				h.wordCounts[w]++
			}
			prod.Input() <- &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(fmt.Sprint(i)), Value: sarama.StringEncoder(strings.Join(ws, " "))}
		}
	}
	prod.AsyncClose()
	<-done
	if errs.Load() > 0 {
		err = fmt.Errorf("preload: %d errors", errs.Load())
	}
	return in, in, outProc, err
}

// counter reads a topic as a read_committed consumer from the start and
// counts records; with measureFrom set it also records latencies.
type counter struct {
	n, first    atomic.Int64
	measureFrom atomic.Int64
	measured    atomic.Int64
	mu          sync.Mutex
	lat         []time.Duration
	client      sarama.Client
	cons        sarama.Consumer
	pcs         []sarama.PartitionConsumer
	closed      atomic.Bool
	final       *finals // with record caches: the final count of every word
}

func (h *harness) newCounter(topic string, final ...*finals) (*counter, error) {
	cfg := saramaConfig()
	cfg.Consumer.IsolationLevel = sarama.ReadCommitted
	cfg.Consumer.Fetch.Default = 4 << 20
	client, err := sarama.NewClient(h.addrs, cfg)
	if err != nil {
		return nil, err
	}
	cons, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		client.Close()
		return nil, err
	}
	c := &counter{client: client, cons: cons}
	if len(final) > 0 {
		c.final = final[0]
	}
	ps, err := partitionsOf(client, topic)
	if err != nil {
		return nil, err
	}
	for _, p := range ps {
		var pc sarama.PartitionConsumer
		for i := 0; ; i++ { // a leader just elected may still answer NOT_LEADER
			if pc, err = cons.ConsumePartition(topic, p, sarama.OffsetOldest); err == nil {
				break
			} else if i > 50 {
				return nil, err
			}
			_ = client.RefreshMetadata(topic)
			time.Sleep(100 * time.Millisecond)
		}
		c.pcs = append(c.pcs, pc)
		go func() {
			for e := range pc.Errors() {
				if !c.closed.Load() {
					fmt.Fprintln(os.Stderr, "counter:", e)
				}
			}
		}()
		go func() {
			for m := range pc.Messages() {
				now := time.Now()
				if c.n.Add(1) == 1 {
					c.first.Store(now.UnixNano())
				}
				if c.final != nil {
					c.final.see(m.Key, m.Value)
				}
				from := c.measureFrom.Load()
				if from == 0 || len(m.Value) < 19 {
					continue
				}
				var ts int64
				for _, d := range m.Value[:19] {
					ts = ts*10 + int64(d-'0')
				}
				if ts >= from {
					c.measured.Add(1)
					c.mu.Lock()
					c.lat = append(c.lat, now.Sub(time.Unix(0, ts)))
					c.mu.Unlock()
				}
			}
		}()
	}
	return c, nil
}

// done reports whether the output is complete: want records, or with
// record caches every word at its final count.
func (c *counter) done(want int) bool {
	if c.final != nil {
		return c.final.complete()
	}
	return int(c.n.Load()) >= want
}

func (c *counter) close() {
	c.closed.Store(true)
	for _, pc := range c.pcs {
		_ = pc.Close()
	}
	_ = c.cons.Close()
	_ = c.client.Close()
}

type child struct {
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

func (h *harness) startChild(sys, wl, run, in, out string) (*child, error) {
	dir := filepath.Join(h.tmp, run)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	logPath := filepath.Join(h.tmp, run+".log")
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	bin, childSys := os.Args[0], sys
	if base, ok := strings.CutPrefix(sys, altPrefix); ok { // -alt: the other build's child
		bin, childSys = altBinary, base
	}
	cmd := exec.Command(bin, "-child", childSys, "-workload", wl, "-in", in, "-out", out,
		"-app", run, "-dir", dir, "-brokers", strings.Join(h.addrs, ","))
	if isKStreams(sys) {
		if cmd, err = kstreamsCommand(h.ksJar, sys, wl, strings.Join(h.addrs, ","), in, out, run, dir); err != nil {
			lf.Close()
			return nil, err
		}
	}
	cmd.Stdout, cmd.Stderr = lf, lf
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &child{cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); lf.Close(); close(c.done) }()
	return c, nil
}

func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// stop ends the child gracefully (SIGTERM, then SIGKILL after 20 s) and
// returns its peak RSS (KiB) and CPU seconds.
// ru_maxrss is not used for RSS: Linux carries the parent's high-water
// mark across fork+exec, so it would report the parent's (broker's) size.
// VmHWM from /proc, read just before the stop, is the child's own peak.
func (c *child) stop() (rssKiB int64, cpu float64) {
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.cmd.Process.Pid)); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
				rssKiB, _ = strconv.ParseInt(f[1], 10, 64)
			}
		}
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(20 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
	if ru, ok := c.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		cpu = time.Duration(syscall.TimevalToNsec(ru.Utime) + syscall.TimevalToNsec(ru.Stime)).Seconds()
	}
	return
}

func (c *child) tail() string {
	b, _ := os.ReadFile(c.log)
	return lastLines(string(b), 5)
}

// lastLines joins the last n lines of s with " | ".
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

type row struct {
	workload, system string
	in, want, got    int
	wall, steady     time.Duration
	rssKiB           int64
	cpu              float64
	err              string
	skip             string // why the row was not run
	latOnly          bool   // only latency was measured for this system and workload
	lat              *latResult
}

func (r row) rate() float64 {
	if r.err != "" || r.skip != "" || r.wall <= 0 {
		return 0
	}
	return float64(r.in) / r.wall.Seconds()
}

func (r row) summary() string {
	if r.skip != "" {
		return "skipped: " + r.skip
	}
	if r.err != "" {
		return "FAILED: " + r.err
	}
	return fmt.Sprintf("%d in, %d out in %.2fs = %.0f rec/s, rss %d MiB, cpu %.2fs", r.in, r.got, r.wall.Seconds(), r.rate(), r.rssKiB/1024, r.cpu)
}

func (h *harness) throughput(ctx context.Context, sys, wl string) row {
	r := row{workload: wl, system: sys}
	if why := h.skipReason(sys, wl); why != "" {
		r.skip = why
		return r
	}
	inp, err := h.inputFor(wl)
	if err != nil {
		r.err = err.Error()
		return r
	}
	h.seq++
	run := fmt.Sprintf("bench%d-%d-%s-%s", time.Now().Unix()%100000, h.seq, wl[:4], sys)
	in, out := inp.topic, run+"-out"
	if err := h.createTopic(out); err != nil {
		r.err = err.Error()
		return r
	}
	r.in, r.want = inp.in, inp.outProc
	if isCopier(sys) {
		r.want = inp.outCopy
	}
	var final []*finals
	if cached(sys) { // coalesced updates: wait for every word's final count
		final = append(final, newFinals(h.wordCounts))
	}
	cnt, err := h.newCounter(out, final...)
	if err != nil {
		r.err = err.Error()
		return r
	}
	defer cnt.close()
	t0 := time.Now()
	c, err := h.startChild(sys, wl, run, in, out)
	if err != nil {
		r.err = err.Error()
		return r
	}
	deadline := t0.Add(h.p.runTimeout)
	for !cnt.done(r.want) && time.Now().Before(deadline) && !c.exited() && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	tDone := time.Now()
	r.got = int(cnt.n.Load())
	r.wall = tDone.Sub(t0)
	if f := cnt.first.Load(); f > 0 {
		r.steady = tDone.Sub(time.Unix(0, f))
	}
	exited := c.exited()
	r.rssKiB, r.cpu = c.stop()
	switch {
	case cnt.done(r.want):
	case exited:
		r.err = fmt.Sprintf("child exited after %d/%d outputs: %s", r.got, r.want, c.tail())
	default:
		r.err = fmt.Sprintf("timeout after %s with %d/%d outputs: %s", h.p.runTimeout, r.got, r.want, c.tail())
	}
	return r
}

// rounds runs the throughput row of every system in order for workload
// wl, h.p.runs times: in rounds, every other one in reverse order, so
// that no system always runs right after the same one. It returns a row
// per system: its median run by input rate (the lower middle one of an
// even count), or its first failed run if one failed.
func (h *harness) rounds(ctx context.Context, wl string, order []string) []row {
	runs := map[string][]row{}
	for round := range max(h.p.runs, 1) {
		seq := slices.Clone(order)
		if round%2 == 1 {
			slices.Reverse(seq)
		}
		for _, sys := range seq {
			if ctx.Err() != nil {
				break
			}
			if prev := runs[sys]; len(prev) > 0 && prev[0].skip != "" {
				continue
			}
			r := h.throughput(ctx, sys, wl)
			fmt.Fprintf(os.Stderr, "bench: %s/%s (run %d): %s\n", wl, sys, round+1, r.summary())
			runs[sys] = append(runs[sys], r)
		}
	}
	var out []row
	for _, sys := range order {
		if rs := runs[sys]; len(rs) > 0 {
			out = append(out, median(rs))
		}
	}
	return out
}

// median returns the run of rs with the median input rate (the lower
// middle one of an even count), or the first that failed or was skipped.
func median(rs []row) row {
	if i := slices.IndexFunc(rs, func(r row) bool { return r.err != "" || r.skip != "" }); i >= 0 {
		return rs[i]
	}
	sorted := slices.SortedFunc(slices.Values(rs), func(a, b row) int { return cmp.Compare(a.rate(), b.rate()) })
	return sorted[(len(sorted)-1)/2]
}

type latResult struct {
	sent, got int
	sorted    []time.Duration
	err       string
	skip      string
}

func (l latResult) pct(q float64) time.Duration {
	if len(l.sorted) == 0 {
		return 0
	}
	i := int(q * float64(len(l.sorted)))
	if i >= len(l.sorted) {
		i = len(l.sorted) - 1
	}
	return l.sorted[i]
}

func (l latResult) summary() string {
	if l.skip != "" {
		return "skipped: " + l.skip
	}
	if l.err != "" {
		return "FAILED: " + l.err
	}
	return fmt.Sprintf("%d/%d seen; p50 %s p99 %s p99.9 %s", l.got, l.sent, l.pct(.5), l.pct(.99), l.pct(.999))
}

// offer calls send latRate times a second for d (or until ctx is done)
// and returns how often it called it.
func (h *harness) offer(ctx context.Context, d time.Duration, send func()) (sent int) {
	start := time.Now()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for now := range tick.C {
		el := now.Sub(start)
		if el >= d || ctx.Err() != nil {
			return sent
		}
		for due := int(el.Seconds() * float64(h.p.latRate)); sent < due; sent++ {
			send()
		}
	}
	return sent
}

// latency offers the stateless workload at a fixed rate to a running
// system and measures produce-time to read_committed visibility.
func (h *harness) latency(ctx context.Context, sys string) (lr latResult) {
	if why := h.skipReason(sys, wlStateless); why != "" {
		lr.skip = why
		return
	}
	run, in, out, err := h.topics("lat-" + sys)
	if err != nil {
		lr.err = err.Error()
		return
	}
	cnt, err := h.newCounter(out)
	if err != nil {
		lr.err = err.Error()
		return
	}
	defer cnt.close()
	cfg := saramaConfig()
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	prod, err := sarama.NewAsyncProducer(h.addrs, cfg)
	if err != nil {
		lr.err = err.Error()
		return
	}
	go func() {
		for e := range prod.Errors() {
			fmt.Fprintln(os.Stderr, "latency producer:", e)
		}
	}()
	defer prod.AsyncClose()
	c, err := h.startChild(sys, wlStateless, run, in, out)
	if err != nil {
		lr.err = err.Error()
		return
	}
	defer c.stop()
	send := func() {
		prod.Input() <- &sarama.ProducerMessage{Topic: in, Value: sarama.ByteEncoder(value(time.Now().UnixNano(), false))}
	}
	// Warm up until outputs flow.
	warm := time.Now().Add(60 * time.Second)
	for cnt.n.Load() == 0 {
		if time.Now().After(warm) || c.exited() || ctx.Err() != nil {
			lr.err = "no output during warm-up: " + c.tail()
			return
		}
		send()
		time.Sleep(50 * time.Millisecond)
	}
	// Then warm up at the offered rate, unmeasured: a broker's new
	// topics and a child's connections are slow for their first seconds
	// at load (on Kafka 4.4, a second of trickle left 1,000–2,000 records
	// of the next second above 50 ms, for the copies as for weir), and
	// p99 measured the start, not the system.
	h.offer(ctx, latWarm, send)
	start := time.Now()
	cnt.measureFrom.Store(start.UnixNano())
	lr.sent = h.offer(ctx, h.p.latDur, send)
	wait := time.Now().Add(10 * time.Second)
	for int(cnt.measured.Load()) < lr.sent && time.Now().Before(wait) {
		time.Sleep(10 * time.Millisecond)
	}
	cnt.mu.Lock()
	lr.sorted = slices.Clone(cnt.lat)
	cnt.mu.Unlock()
	lr.got = len(lr.sorted)
	slices.Sort(lr.sorted)
	if lr.got < lr.sent {
		lr.err = fmt.Sprintf("only %d of %d records seen", lr.got, lr.sent)
	}
	return
}
