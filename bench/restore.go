package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
)

// The restore workload (-workloads restore; not by default): how fast a
// store comes back from its changelog. For each system the harness
// creates a changelog topic of one partition, compacted, named as both
// weir and Kafka Streams name the changelog of a store "store" of their
// application (APP-store-changelog), and fills it with restoreKeys
// distinct keys ("key-0000042", 11 bytes) of 100-byte values; the
// application's input topic (one partition too) stays empty. Then the
// application starts on an empty state dir, and its one task restores the
// changelog before it runs:
//
//   - weir-restore: weir (at-least-once, its default Kafka client) in this
//     process, a GroupByKey().Reduce into the Badger store "store". The
//     restore's records and duration are those of weir's "restored store"
//     log line (the checkpoint lookup to the last Badger write); CPU is
//     this process's from weir.New to that line.
//   - kstreams-restore: Kafka Streams 4.4 (bench/kstreams, class
//     weirbench.Restore), groupByKey().reduce into its default persistent
//     RocksDB store, one stream thread; records and duration from its
//     StateRestoreListener (onRestoreStart to onRestoreEnd); CPU is the
//     JVM's whole life, start-up included.
//
// MiB/s counts the keys' and values' bytes.
const (
	wlRestore         = "restore"
	sysWeirRestore    = "weir-restore"
	sysKStreamsRestor = "kstreams-restore"

	restoreKeys      = 1_000_000
	restoreQuickKeys = 100_000
	restoreValue     = 100
)

// restoreRow is one system's restore.
type restoreRow struct {
	system  string
	records int64
	bytes   int64
	took    time.Duration
	cpu     float64
	err     string
	skip    string
}

// restoreRows runs the restore of each of weir-restore and
// kstreams-restore that systems names (both if it names neither), one
// after the other.
func (h *harness) restoreRows(ctx context.Context, systems []string, quick bool) []restoreRow {
	n := restoreKeys
	if quick {
		n = restoreQuickKeys
	}
	run := []string{sysWeirRestore, sysKStreamsRestor}
	if named := slices.DeleteFunc(slices.Clone(systems), func(s string) bool { return !slices.Contains(run, s) }); len(named) > 0 {
		run = named
	}
	if slices.Contains(run, sysKStreamsRestor) && h.ksJar == "" {
		jar, why := buildKStreams("kstreams")
		if why != "" {
			fmt.Fprintln(os.Stderr, "bench: skipping the Kafka Streams restore:", why)
		}
		h.ksJar = jar
	}
	var rows []restoreRow
	for _, sys := range run {
		if ctx.Err() != nil {
			break
		}
		r := restoreRow{system: sys}
		switch {
		case sys == sysKStreamsRestor && h.ksJar == "":
			r.skip = "no Kafka Streams jar (java and mvn on PATH, run from bench/)"
		case sys == sysKStreamsRestor && h.embedded:
			r.skip = kstreamsEmbeddedWordCount
		default:
			r = h.restore(ctx, sys, n)
		}
		fmt.Fprintf(os.Stderr, "bench: restore %s: %s\n", sys, r.summary())
		rows = append(rows, r)
	}
	return rows
}

func (r restoreRow) rate() float64 { return float64(r.records) / r.took.Seconds() }

func (r restoreRow) mibRate() float64 { return float64(r.bytes) / (1 << 20) / r.took.Seconds() }

func (r restoreRow) summary() string {
	switch {
	case r.skip != "":
		return "skipped: " + r.skip
	case r.err != "":
		return "FAILED: " + r.err
	}
	return fmt.Sprintf("%d records in %.2fs = %.0f records/s, %.1f MiB/s, cpu %.2fs", r.records, r.took.Seconds(), r.rate(), r.mibRate(), r.cpu)
}

// restore fills a changelog for sys's application and times its restore.
func (h *harness) restore(ctx context.Context, sys string, n int) restoreRow {
	r := restoreRow{system: sys}
	h.seq++
	app := fmt.Sprintf("bench%d-%d-%s", time.Now().Unix()%100000, h.seq, sys)
	in, changelog := app+"-in", app+"-store-changelog"
	dir := filepath.Join(h.tmp, app)
	fail := func(err error) restoreRow { r.err = err.Error(); return r }
	if err := h.createRestoreTopic(in, nil); err != nil {
		return fail(err)
	}
	compact := "compact"
	if err := h.createRestoreTopic(changelog, map[string]*string{"cleanup.policy": &compact}); err != nil {
		return fail(err)
	}
	start := time.Now()
	bytes, err := fillChangelog(ctx, h.addrs, changelog, n)
	if err != nil {
		return fail(fmt.Errorf("fill %s: %w", changelog, err))
	}
	fmt.Fprintf(os.Stderr, "bench: restore %s: %d records in %s in %.1fs\n", sys, n, changelog, time.Since(start).Seconds())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail(err)
	}
	if sys == sysWeirRestore {
		r.records, r.took, r.cpu, err = weirRestore(ctx, h.addrs, in, app, dir)
	} else {
		r.records, r.took, r.cpu, err = h.kstreamsRestore(ctx, in, app, dir)
	}
	if err != nil {
		return fail(err)
	}
	if r.records != int64(n) {
		return fail(fmt.Errorf("restored %d records of %d", r.records, n))
	}
	r.bytes = bytes
	return r
}

// createRestoreTopic creates a topic of one partition and waits for its
// leader.
func (h *harness) createRestoreTopic(topic string, configs map[string]*string) error {
	err := h.admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1, ConfigEntries: configs}, false)
	if err != nil {
		return err
	}
	for i := 0; ; i++ {
		if _, err := h.client.Leader(topic, 0); err == nil {
			return nil
		} else if i > 50 {
			return fmt.Errorf("leader of %s/0: %w", topic, err)
		}
		_ = h.client.RefreshMetadata(topic)
		time.Sleep(100 * time.Millisecond)
	}
}

// fillChangelog writes n distinct keys with 100-byte values to partition
// 0 of topic and returns the keys' and values' bytes.
func fillChangelog(ctx context.Context, brokers []string, topic string, n int) (int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchMaxBytes(1<<20),
		kgo.ProducerLinger(5*time.Millisecond), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	value := make([]byte, restoreValue)
	for i := range value {
		value[i] = 'a' + byte(i%26)
	}
	var bytes int64
	var first error
	errc := make(chan error, 1)
	for i := range n {
		key := fmt.Appendf(nil, "key-%07d", i)
		bytes += int64(len(key) + len(value))
		cl.Produce(ctx, &kgo.Record{Key: key, Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				select {
				case errc <- err:
				default:
				}
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, err
	}
	select {
	case first = <-errc:
	default:
	}
	return bytes, first
}

// restoreLog keeps weir's "restored store" log line and passes warnings
// and errors on to stderr.
type restoreLog struct {
	slog.Handler
	restored chan slog.Record
}

func (l *restoreLog) Enabled(context.Context, slog.Level) bool { return true }

func (l *restoreLog) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "weir: restored store" {
		select {
		case l.restored <- r:
		default:
		}
		return nil
	}
	if r.Level < slog.LevelWarn {
		return nil
	}
	return l.Handler.Handle(ctx, r)
}

// weirRestore runs weir on the changelog until its task has restored it.
func weirRestore(ctx context.Context, brokers []string, in, app, dir string) (records int64, took time.Duration, cpu float64, err error) {
	b := topology.NewBuilder()
	topology.NewStream(b, in, serde.Bytes(), serde.Bytes()).GroupByKey().
		Reduce(func(_, v []byte) []byte { return v }, topology.Materialized("store"))
	topo, err := b.Build()
	if err != nil {
		return 0, 0, 0, err
	}
	log := &restoreLog{Handler: slog.NewTextHandler(os.Stderr, nil), restored: make(chan slog.Record, 1)}
	// weir restores in this process: -cpuprofile (and the other profile
	// flags) cover it from weir.New to the "restored store" line.
	stopProfiles := startProfiles(ctx, app+"-"+wlRestore)
	defer func() { stopProfiles() }()
	before := processCPU()
	a, err := weir.New(topo, weir.WithBrokers(brokers...), weir.WithApplicationID(app), weir.WithStateDir(dir),
		weir.WithLogger(slog.New(log)))
	if err != nil {
		return 0, 0, 0, err
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	ran := make(chan error, 1)
	go func() { ran <- a.Run(runCtx) }()
	select {
	case rec := <-log.restored:
		cpu = processCPU() - before
		stopProfiles()
		stopProfiles = func() {}
		rec.Attrs(func(at slog.Attr) bool {
			switch at.Key {
			case "records", "skipped_stale":
				records += at.Value.Int64()
			case "took":
				took = at.Value.Duration()
			}
			return true
		})
	case err = <-ran:
		return 0, 0, 0, fmt.Errorf("weir stopped before it restored: %v", err)
	case <-time.After(10 * time.Minute):
		err = errors.New("no restore in 10 minutes")
	}
	stop()
	if rerr := <-ran; rerr != nil && err == nil && !errors.Is(rerr, context.Canceled) {
		err = rerr
	}
	return records, took, cpu, err
}

// processCPU is this process's CPU seconds so far.
func processCPU() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(syscall.TimevalToNsec(ru.Utime) + syscall.TimevalToNsec(ru.Stime)).Seconds()
}

// kstreamsRestore runs weirbench.Restore and reads its "restored RECORDS
// NANOSECONDS" line.
func (h *harness) kstreamsRestore(ctx context.Context, in, app, dir string) (records int64, took time.Duration, cpu float64, err error) {
	cmd := exec.CommandContext(ctx, "java", "-cp", h.ksJar, "weirbench.Restore", strings.Join(h.addrs, ","), in, app, dir)
	logPath := filepath.Join(h.tmp, app+".log")
	lf, err := os.Create(logPath)
	if err != nil {
		return 0, 0, 0, err
	}
	defer lf.Close()
	cmd.Stderr = lf
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, 0, 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, 0, 0, err
	}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == "restored" {
			records, _ = strconv.ParseInt(f[1], 10, 64)
			ns, _ := strconv.ParseInt(f[2], 10, 64)
			took = time.Duration(ns)
		}
	}
	werr := cmd.Wait()
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		cpu = time.Duration(syscall.TimevalToNsec(ru.Utime) + syscall.TimevalToNsec(ru.Stime)).Seconds()
	}
	if took == 0 {
		b, _ := os.ReadFile(logPath)
		return 0, 0, cpu, fmt.Errorf("kstreams: no restore (%v): %s", werr, lastLines(string(b), 5))
	}
	return records, took, cpu, nil
}

// renderRestoreTable is the restore workload's markdown table.
func renderRestoreTable(rows []restoreRow, quick bool) string {
	var sb strings.Builder
	n := restoreKeys
	if quick {
		n = restoreQuickKeys
	}
	fmt.Fprintf(&sb, "\n### Restore: a changelog of %d keys with %d-byte values into an empty store (one partition)\n\n", n, restoreValue)
	sb.WriteString("| system | store | records | seconds | records/s | MiB/s | CPU s |\n|---|---|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		store := "Badger"
		if r.system == sysKStreamsRestor {
			store = "RocksDB"
		}
		switch {
		case r.skip != "":
			fmt.Fprintf(&sb, "| %s | %s | skipped: %s | | | | |\n", r.system, store, r.skip)
		case r.err != "":
			fmt.Fprintf(&sb, "| %s | %s | FAILED: %s | | | | |\n", r.system, store, r.err)
		default:
			fmt.Fprintf(&sb, "| %s | %s | %d | %.2f | %.0f | %.1f | %.2f |\n", r.system, store, r.records, r.took.Seconds(), r.rate(), r.mibRate(), r.cpu)
		}
	}
	return sb.String()
}
