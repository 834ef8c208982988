// Command bench measures weir against raw sarama ceilings (and goka) on
// the same broker: throughput, CPU, peak RSS and end-to-end latency.
//
//	go run . -quick                      # embedded broker, < 5 minutes
//	go run . -quick -brokers host:port   # an existing cluster
//
// Each system runs in a child process (this binary re-executed with
// -child) so its peak RSS and CPU time come from its own rusage.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/weirstream/weir/embedded"
)

const (
	sysCeilingALO = "ceiling-alo"
	sysCeilingEOS = "ceiling-eos"
	sysWeirALO    = "weir-cont-alo"
	sysWeirEOS    = "weir-cont-eos"
	sysWeirMB     = "weir-mb-eos"
	sysGoka       = "goka-alo"

	wlStateless = "stateless"
	wlWordCount = "wordcount"

	partitions = 8
)

// eos reports whether sys runs exactly-once: every such row's name has
// "-eos" in it (ceiling-eos, ceiling-eos-tuned, franz-eos-lz4, weir-mb-eos, …).
func eos(sys string) bool { return strings.Contains(sys, "-eos") }

func main() {
	child := flag.String("child", "", "internal: run this system as a child process")
	workload := flag.String("workload", "", "internal: child workload")
	in := flag.String("in", "", "internal: child input topic")
	out := flag.String("out", "", "internal: child output topic")
	app := flag.String("app", "", "internal: child application/group id")
	dir := flag.String("dir", "", "internal: child state dir")
	brokers := flag.String("brokers", "", "Kafka bootstrap servers host:port[,...]; empty starts an embedded broker in-process")
	quick := flag.Bool("quick", false, "small sizes: finishes in under 5 minutes")
	all := []string{sysCeilingALO, sysCeilingEOS, sysCeilingALOTuned, sysCeilingEOSTuned, sysFranzALO, sysFranzEOS,
		sysWeirALO, sysWeirEOS, sysWeirMB, sysGoka, sysKStreamsALO, sysKStreamsEOS}
	systems := flag.String("systems", strings.Join(append(slices.Clone(all), cachedSystems...), ","), "systems to run")
	latSystems := flag.String("latency-systems", strings.Join(all, ","), "systems whose stateless latency is measured")
	keep := flag.Bool("keep", false, "keep the temporary directory (child logs, state dirs)")
	outDir := flag.String("results", "results", "directory for latest.md and latency.png")
	workloads := flag.String("workloads", wlStateless+","+wlWordCount, "throughput workloads to run ("+wlPGSink+": the word count into PostgreSQL, WEIR_POSTGRES_DSN's; "+wlRestore+": a store's restore from its changelog, restore.go; not by default)")
	prof := profileFlags{
		cpu:    flag.String("cpuprofile", os.Getenv(envCPUProfile), "directory for a CPU profile of every Go child (also $"+envCPUProfile+")"),
		block:  flag.String("blockprofile", "", "directory for a block profile of every Go child (one event per 10 µs blocked)"),
		mutex:  flag.String("mutexprofile", "", "directory for a mutex contention profile of every Go child (1 event in 5)"),
		trace:  flag.String("trace", "", "directory for an execution trace of every Go child, 5 s from 20 s after its start"),
		phases: flag.String("phases", "", "directory for every weir child's epoch-end phase times (weir_epoch_phase_seconds)"),
	}
	latRate := flag.Int("latency-rate", 5000, "records a second each latency row offers")
	latFor := flag.Duration("latency-for", 0, "how long each latency row offers its load (default 10s, -quick 5s): longer windows rank tails on a noisy machine")
	runs := flag.Int("runs", 1, "how many times each throughput row runs, in rounds that alternate the system order; the table gives each row's median run (a sub-second -quick row varies by 25 % from run to run)")
	txnProbe := flag.Int("txn-probe", 0, "run N short transactions back to back against -brokers and print where their time goes (txnprobe.go), instead of the rows")
	txnProbeRecords := flag.Int("txn-probe-records", 50, "records a -txn-probe transaction produces (50: a 10 ms epoch at 5,000 rec/s)")
	txnProbeWaits := flag.String("txn-probe-waits", "0s,3ms", "waits between a -txn-probe commit and the next transaction's first produce, taken in turn")
	txnProbeCSV := flag.String("txn-probe-csv", "", "file for every -txn-probe transaction's times (ms), one a line")
	alt := flag.String("alt", "", `another build of this bench (e.g. against the library before a change): the rows named "alt.<weir row>" in -systems run their child from it`)
	flag.Parse()
	altBinary = *alt

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if *child != "" {
		stopProfiles := startProfiles(ctx, *child+"-"+*workload+"-"+filepath.Base(*app))
		defer stopProfiles()
		err := runChild(ctx, childArgs{system: *child, workload: *workload, in: *in, out: *out,
			app: *app, dir: *dir, brokers: strings.Split(*brokers, ",")})
		if err != nil && ctx.Err() == nil {
			fmt.Fprintln(os.Stderr, *child+":", err)
			stopProfiles()
			os.Exit(1)
		}
		return
	}

	if *txnProbe > 0 {
		waits, err := parseWaits(*txnProbeWaits)
		if err == nil && *brokers == "" {
			err = fmt.Errorf("bench: -txn-probe needs -brokers (a real broker's coordinator)")
		}
		if err == nil {
			err = runTxnProbe(ctx, os.Stdout, strings.Split(*brokers, ","), *txnProbe, *txnProbeRecords, waits, *txnProbeCSV)
		}
		if err != nil {
			fatal(err)
		}
		return
	}

	if err := prof.setEnv(); err != nil {
		fatal(err)
	}
	p := params{statelessN: 2_000_000, wordLines: 500_000, latRate: 5000, latDur: 10 * time.Second, runTimeout: 15 * time.Minute}
	if *quick {
		p = params{statelessN: 200_000, wordLines: 50_000, latRate: 5000, latDur: 5 * time.Second, runTimeout: 60 * time.Second}
	}
	if *runs < 1 {
		fatal(fmt.Errorf("bench: -runs %d: must be at least 1", *runs))
	}
	p.runs = *runs
	if *latRate < 1 {
		fatal(fmt.Errorf("bench: -latency-rate %d: must be at least 1", *latRate))
	}
	p.latRate = *latRate
	if *latFor < 0 {
		fatal(fmt.Errorf("bench: -latency-for %v: must not be negative", *latFor))
	}
	if *latFor > 0 {
		p.latDur = *latFor
	}
	brokerDesc := ""
	var addrs []string
	if *brokers == "" {
		b, err := embedded.Start(ctx, embedded.Options{Partitions: partitions})
		if err != nil {
			fatal(err)
		}
		defer b.Close()
		addrs = b.Addrs()
		brokerDesc = "embedded broker (kfake, in the parent process) at " + strings.Join(addrs, ",")
	} else {
		addrs = strings.Split(*brokers, ",")
		brokerDesc = "external cluster at " + *brokers
	}
	tmp, err := os.MkdirTemp("", "weir-bench-")
	if err != nil {
		fatal(err)
	}
	if *keep {
		fmt.Fprintln(os.Stderr, "bench: keeping", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}

	h, err := newHarness(addrs, tmp, p)
	if err != nil {
		fatal(err)
	}
	defer h.close()
	h.embedded = *brokers == ""
	fmt.Fprintf(os.Stderr, "bench: %s; %d CPUs; quick=%v\n", brokerDesc, runtime.NumCPU(), *quick)
	if pauseRun(ctx, h, brokerDesc, *quick, *outDir) { // -pause: pause.go
		return
	}

	sysList := strings.Split(*systems, ",")
	latList := strings.Split(*latSystems, ",")
	if slices.ContainsFunc(append(slices.Clone(sysList), latList...), isKStreams) {
		jar, why := buildKStreams("kstreams")
		if why != "" {
			fmt.Fprintln(os.Stderr, "bench: skipping the Kafka Streams rows:", why)
			h.skip[sysKStreamsALO], h.skip[sysKStreamsEOS] = why, why
			h.skip[sysKStreamsEOSCache] = why
		}
		h.ksJar = jar
	}

	var rows []row
	for _, wl := range []string{wlStateless, wlWordCount} {
		if !slices.Contains(strings.Split(*workloads, ","), wl) {
			continue
		}
		var order []string
		for _, sys := range sysList {
			if sys == "" || slices.Contains(pgSystems, sys) || ((sys == sysGoka || cached(sys)) && wl != wlWordCount) {
				continue
			}
			order = append(order, sys)
		}
		rows = append(rows, h.rounds(ctx, wl, order)...)
	}
	var restoreRows []restoreRow // restore.go
	if slices.Contains(strings.Split(*workloads, ","), wlRestore) {
		restoreRows = h.restoreRows(ctx, sysList, *quick)
	}
	var pgRows []pgRow // pgsink.go
	if slices.Contains(strings.Split(*workloads, ","), wlPGSink) {
		pgRows = h.pgRows(ctx, sysList)
	}
	var curves []curve
	for _, sys := range latList {
		if sys == "" || ctx.Err() != nil {
			continue
		}
		lr := h.latency(ctx, sys)
		fmt.Fprintf(os.Stderr, "bench: latency %s: %s\n", sys, lr.summary())
		i := slices.IndexFunc(rows, func(r row) bool { return r.system == sys && r.workload == wlStateless })
		if i < 0 { // e.g. goka: latency of its stateless processor, no throughput row
			rows = append(rows, row{workload: wlStateless, system: sys, latOnly: true})
			i = len(rows) - 1
		}
		rows[i].lat = &lr
		if len(lr.sorted) > 0 {
			curves = append(curves, curve{name: sys, sorted: lr.sorted})
		}
	}

	slices.SortStableFunc(rows, func(a, b row) int { return strings.Compare(a.workload, b.workload) })
	md := renderTable(rows, brokerDesc, p, *quick)
	if len(pgRows) > 0 {
		md += renderPGTable(pgRows)
	}
	if len(restoreRows) > 0 {
		md += renderRestoreTable(restoreRows, *quick)
	}
	fmt.Print(md)
	if err := os.MkdirAll(*outDir, 0o755); err != nil {
		fatal(err)
	}
	if err := os.WriteFile(filepath.Join(*outDir, "latest.md"), []byte(md), 0o644); err != nil {
		fatal(err)
	}
	if len(curves) > 0 {
		if err := writeChart(filepath.Join(*outDir, "latency.png"), curves); err != nil {
			fatal(err)
		}
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}
