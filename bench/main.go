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
	"runtime/pprof"
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
	workloads := flag.String("workloads", wlStateless+","+wlWordCount, "throughput workloads to run")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if *child != "" {
		if d := os.Getenv("WEIR_BENCH_CPUPROFILE"); d != "" {
			// e.g. WEIR_BENCH_CPUPROFILE=/tmp/prof go run . -quick: one CPU profile per child
			f, err := os.Create(filepath.Join(d, *child+"-"+*workload+"-"+filepath.Base(*app)+".pprof"))
			if err == nil && pprof.StartCPUProfile(f) == nil {
				defer func() { pprof.StopCPUProfile(); f.Close() }()
			}
		}
		err := runChild(ctx, childArgs{system: *child, workload: *workload, in: *in, out: *out,
			app: *app, dir: *dir, brokers: strings.Split(*brokers, ",")})
		if err != nil && ctx.Err() == nil {
			fmt.Fprintln(os.Stderr, *child+":", err)
			pprof.StopCPUProfile()
			os.Exit(1)
		}
		return
	}

	p := params{statelessN: 2_000_000, wordLines: 500_000, latRate: 5000, latDur: 10 * time.Second, runTimeout: 15 * time.Minute}
	if *quick {
		p = params{statelessN: 200_000, wordLines: 50_000, latRate: 5000, latDur: 5 * time.Second, runTimeout: 60 * time.Second}
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
		for _, sys := range sysList {
			if sys == "" || ((sys == sysGoka || cached(sys)) && wl != wlWordCount) {
				continue
			}
			if ctx.Err() != nil {
				break
			}
			r := h.throughput(ctx, sys, wl)
			fmt.Fprintf(os.Stderr, "bench: %s/%s: %s\n", wl, sys, r.summary())
			rows = append(rows, r)
		}
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
