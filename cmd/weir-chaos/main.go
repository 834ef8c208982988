// Command weir-chaos runs weir's reliability suite (package
// internal/chaos): for each mode and guarantee, three instances as child
// processes process a workload while they are killed, rebalanced, stalled
// and — on the in-process kfake broker — hit by broker faults, and an
// independent read_committed verifier checks the result. It prints one
// line per scenario and exits 1 if any failed.
//
// Usage:
//
//	go run ./cmd/weir-chaos                                  # short suite, in-process kfake
//	go run ./cmd/weir-chaos -brokers 127.0.0.1:9092          # short suite, a real cluster
//	go run ./cmd/weir-chaos -long                            # 1,000,000 records, 100 kills per scenario
//	go run ./cmd/weir-chaos -brokers $KAFKA_BROKERS -nodes scripts/kafka/node.sh   # a KAFKA_NODES=3 cluster, with broker faults
//	go run ./cmd/weir-chaos -modes continuous -guarantees exactly-once -records 200000 -kills 10 -seed 7
//	go run ./cmd/weir-chaos -queries -kills 20                  # query availability under kills (issue 24)
//	go run ./cmd/weir-chaos -net-faults 3 -disk-faults 3        # network and disk faults too (issue 43)
//	WEIR_CHAOS_POSTGRES=1 WEIR_POSTGRES_DSN=... go run ./cmd/weir-chaos -db-restarts 1   # the PostgreSQL sink too, its database restarted mid-run
//
// With -queries the instances serve interactive queries (with standby
// replicas) while a client asks them every 50 ms, and the events are
// SIGKILLs 2–5 s apart, under exactly-once, with static members (each
// slot's instance restarted with its WithInstanceID, as a deployment that
// keeps its host names would), unless -rebalances, -stalls, -faults,
// -guarantees or -static=false say otherwise; each scenario then prints three more
// lines, "queries ...", the availability of owner-only queries, of queries
// with maxLag, and of owner-only queries that wait up to 4 s for an owner.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/weirstream/weir/embedded"
	"github.com/weirstream/weir/internal/chaos"
	"github.com/weirstream/weir/internal/kafkatest/kfakehook"
	"github.com/weirstream/weir/internal/kafkaverify"
)

func main() {
	if chaos.IsChild() {
		if err := chaos.RunChild(); err != nil {
			fmt.Fprintln(os.Stderr, "weir-chaos child:", err)
			os.Exit(1)
		}
		return
	}
	os.Exit(run())
}

func run() int {
	brokers := flag.String("brokers", "", "comma-separated bootstrap brokers of a real cluster; empty: an in-process kfake with broker faults")
	modes := flag.String("modes", "continuous,micro-batch", "modes to run")
	guarantees := flag.String("guarantees", "at-least-once,exactly-once", "guarantees to run")
	long := flag.Bool("long", false, "the long version: 1,000,000 records, 100 kills, 10 rebalances, 3 stalls, 20 broker faults per scenario")
	records := flag.Int("records", 50_000, "input records per scenario")
	kills := flag.Int("kills", 12, "SIGKILLs (each followed by a restart) per scenario")
	rebalances := flag.Int("rebalances", 4, "membership changes by graceful leaves and joins per scenario")
	stalls := flag.Int("stalls", 1, "members stalled past their session timeout per scenario")
	faults := flag.Int("faults", 5, "broker faults per scenario (on kfake, or on a real cluster with -nodes)")
	netFaults := flag.Int("net-faults", 0, "network faults per scenario, each drawn from the seed: a broker unreachable from one instance only, or delay and loss on one broker's port (the instances then reach the brokers through loopback proxies of the runner)")
	diskFaults := flag.Int("disk-faults", 0, "disk faults per scenario, each drawn from the seed: a stopped instance's state dir damaged (random bytes in .sst/.vlog, files cut to half, MANIFEST overwritten) before its restart, or its volume filled")
	dbRestarts := flag.Int("db-restarts", 0, "with the PostgreSQL branches on (WEIR_CHAOS_POSTGRES=1, WEIR_POSTGRES_DSN): times per scenario the database is taken down for one to three gaps and brought back, through -db-script")
	dbScript := flag.String("db-script", "scripts/postgres/outage.sh", "script that takes the database down and up (`bash script down|up`; scripts/postgres/outage.sh, with the POSTGRES_PORT of the server)")
	nodes := flag.String("nodes", "", "script that controls the brokers of the -brokers cluster (scripts/kafka/node.sh of a KAFKA_NODES=3 cluster): broker faults then kill, stall and restart them")
	gap := flag.Duration("gap", 2*time.Second, "mean time between events (each drawn from the seed between half and one and a half of it)")
	converge := flag.Duration("converge", 3*time.Minute, "bound on the wait for complete output after the last event")
	seed := flag.Uint64("seed", uint64(time.Now().UnixNano()%1_000_000), "seed of the input and the events")
	work := flag.String("workdir", "", "directory for state dirs and child logs (default: a temporary one, removed after a PASS)")
	quiet := flag.Bool("quiet", false, "no progress lines on stderr")
	queries := flag.Bool("queries", false, "query scenarios: instances serve queries with standbys, a client asks one every 50 ms; kills only, 2-5 s apart, exactly-once, static members (unless -rebalances, -stalls, -faults, -guarantees, -static are given)")
	extended := flag.Bool("extended", true, "the workload also has a windowed aggregate, a stream-stream join and a session aggregate (-extended=false: the running aggregate alone; off with -queries unless given)")
	standbys := flag.Int("standbys", -1, "standby replicas per stateful task (WithStandbyReplicas); -1: drawn from each scenario's seed, 0 or 1 (2 with -queries); warm-ups are on in every scenario")
	static := flag.Bool("static", false, "static group members (WithInstanceID, one id per member slot kept across restarts): a restarted instance takes its member's place at once instead of after the killed member's session timeout; on with -queries unless -static=false")
	flag.Parse()
	if *long {
		*records, *kills, *rebalances, *stalls, *faults = 1_000_000, 100, 10, 3, 20
	}
	if *queries {
		set := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
		for name, v := range map[string]*int{"rebalances": rebalances, "stalls": stalls, "faults": faults} {
			if !set[name] {
				*v = 0
			}
		}
		if !set["guarantees"] {
			*guarantees = "exactly-once"
		}
		if !set["static"] {
			*static = true
		}
		if !set["extended"] {
			*extended = false
		}
		if !set["standbys"] {
			*standbys = 2
		}
	}

	// The PostgreSQL branches asked for but without a database would run
	// the suite without them, and a CI line that means to check the sink
	// would pass having checked nothing: refused instead.
	pgOn := os.Getenv(chaos.PostgresEnv) == "1"
	if pgOn && os.Getenv("WEIR_POSTGRES_DSN") == "" {
		fmt.Fprintln(os.Stderr, "weir-chaos: "+chaos.PostgresEnv+"=1 but WEIR_POSTGRES_DSN is not set (bash scripts/postgres/start.sh starts a server and prints it)")
		return 2
	}
	if *dbRestarts > 0 && !pgOn {
		fmt.Fprintln(os.Stderr, "weir-chaos: -db-restarts needs the PostgreSQL branches ("+chaos.PostgresEnv+"=1 and WEIR_POSTGRES_DSN)")
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "weir-chaos:", err)
		return 2
	}
	dir := *work
	if dir == "" {
		if dir, err = os.MkdirTemp("", "weir-chaos-"); err != nil {
			fmt.Fprintln(os.Stderr, "weir-chaos:", err)
			return 2
		}
	}
	base := chaos.Config{
		Name: "kafka", Exe: []string{exe}, WorkDir: dir, Records: *records, Kills: *kills,
		Rebalances: *rebalances, Stalls: *stalls, Faults: *faults, Seed: *seed, Gap: *gap, Converge: *converge,
		Queries: *queries, Static: *static, Extended: *extended, NetFaults: *netFaults, DiskFaults: *diskFaults,
		Standbys: *standbys, DBRestarts: *dbRestarts, DBScript: *dbScript,
	}
	if !*quiet {
		base.Log = os.Stderr
	}
	if *brokers != "" {
		base.Brokers = strings.Split(*brokers, ",")
		if *nodes != "" {
			base.Name, base.Nodes = "cluster", chaos.ScriptNodes{Script: *nodes}
		} else {
			base.Faults = 0
		}
	} else {
		b, err := embedded.Start(ctx, kafkaverify.BrokerOptions())
		if err != nil {
			fmt.Fprintln(os.Stderr, "weir-chaos:", err)
			return 2
		}
		defer b.Close()
		base.Name, base.Brokers, base.Cluster = "kfake", b.Addrs(), kfakehook.Cluster(b)
	}
	// A runner killed during a full-volume disk fault leaves its filler.
	for _, f := range chaos.RemoveLeftovers(dir, *work, os.TempDir()) {
		fmt.Fprintln(os.Stderr, "weir-chaos: removed a volume filler left by an earlier run:", f)
	}
	fmt.Fprintf(os.Stderr, "weir-chaos: brokers %v, seed %d, work dir %s\n", base.Brokers, *seed, dir)
	failed := false
	for _, mode := range strings.Split(*modes, ",") {
		for _, g := range strings.Split(*guarantees, ",") {
			cfg := base
			cfg.Mode, cfg.Guarantee = strings.TrimSpace(mode), strings.TrimSpace(g)
			res := chaos.Run(ctx, cfg)
			fmt.Println(res)
			if res.Queries != nil {
				fmt.Println(res.Queries)
			}
			if !res.Pass() {
				failed = true
				for _, p := range res.Problems {
					fmt.Println("  problem:", p)
				}
				fmt.Println("  child logs:", filepath.Join(dir))
			}
			if ctx.Err() != nil {
				return 1
			}
		}
	}
	if failed {
		return 1
	}
	if *work == "" {
		_ = os.RemoveAll(dir)
	}
	return 0
}
