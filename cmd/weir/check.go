package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/kafka"
)

var checkCommand = command{
	name:    "check",
	summary: "check a topology's topics against a cluster (the preflight Run runs at start)",
	run:     runCheck,
}

// runCheck runs the preflight of an application's topics against a
// cluster and prints what it found: every problem (exit status 1), or the
// plan and the topics Run would create.
func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("check", "--brokers HOST:PORT[,...] (--topology FILE | --application-id ID --sources T[,...] [--sinks T[,...]] [--stores S[,...]]) [flags]", stderr)
	brokers := fs.String("brokers", "", "bootstrap brokers, comma-separated (required)")
	topoFile := fs.String("topology", "", "the topics of the topology as JSON, written by weir.TopicRequirements (- for stdin)")
	appID := fs.String("application-id", "", "the application id (with --sources; overrides the file's)")
	sources := fs.String("sources", "", "without --topology: source topics of a one-sub-topology application, comma-separated (they must be co-partitioned)")
	sinks := fs.String("sinks", "", "without --topology: its sink topics, comma-separated")
	stores := fs.String("stores", "", "without --topology: its logged stores (changelog <application id>-<store>-changelog), comma-separated")
	exactlyOnce := fs.Bool("exactly-once", false, "also check the transactional features exactly-once needs")
	deadLetter := fs.Bool("dead-letter", false, "the application dead-letters bad records (checks the <topic>-dlq topics)")
	createSinks := fs.Int("create-sinks", 0, "the application creates missing sink topics with this many partitions (WithCreateSinkTopics)")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	usageErr := func(format string, a ...any) error {
		fmt.Fprintf(stderr, "weir check: "+format+"\n", a...)
		fs.Usage()
		return errUsage
	}
	if *brokers == "" {
		return usageErr("--brokers is required")
	}
	var req tasks.Requirements
	switch {
	case *topoFile != "" && *sources != "":
		return usageErr("--topology and --sources exclude each other")
	case *topoFile != "":
		var err error
		if req, err = readRequirements(*topoFile); err != nil {
			return err
		}
		if *appID != "" && *appID != req.ApplicationID {
			return usageErr("--application-id %q differs from the file's %q: write the file for this application id", *appID, req.ApplicationID)
		}
	case *sources != "":
		if *appID == "" {
			return usageErr("--sources needs --application-id")
		}
		req = tasks.Requirements{ApplicationID: *appID, Subtopologies: []tasks.SubtopologyTopics{{Sources: split(*sources), Sinks: split(*sinks)}}}
		for _, s := range split(*stores) {
			req.Internal = append(req.Internal, tasks.InternalRequirement{Name: *appID + "-" + s + "-changelog", Compacted: true})
		}
	default:
		return usageErr("name the topics: --topology FILE, or --sources")
	}
	if *createSinks < 0 {
		return usageErr("--create-sinks %d: want 1 or more", *createSinks)
	}
	opts := tasks.PreflightOptions{DeadLetter: *deadLetter}
	if *createSinks > 0 {
		opts.CreateSinks = &tasks.SinkTopics{Partitions: int32(*createSinks)}
	}
	txnID := ""
	if *exactlyOnce {
		txnID = req.ApplicationID + "-check"
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	admin, err := kafka.NewAdmin(kafka.Config{Brokers: split(*brokers), ClientID: "weir-check"})
	if err != nil {
		return err
	}
	defer admin.Close()
	plan, create, err := tasks.Check(ctx, admin, req, opts, txnID)
	if err != nil {
		// errors.Join puts one problem a line.
		problems := strings.Split(err.Error(), "\n")
		fmt.Fprintf(stdout, "%d problem(s) with the topics of application %q:\n", len(problems), req.ApplicationID)
		for _, p := range problems {
			fmt.Fprintf(stdout, "  - %s\n", p)
		}
		return errors.New("check failed")
	}
	fmt.Fprintf(stdout, "ok: application %q can start on %s\n", req.ApplicationID, *brokers)
	for i, n := range plan.Partitions {
		fmt.Fprintf(stdout, "  sub-topology %d: %d partitions, reads %s\n", i, n, strings.Join(plan.Sources[i], ", "))
	}
	for _, spec := range create {
		fmt.Fprintf(stdout, "  Run creates %s (%d partitions)\n", spec.Name, spec.Partitions)
	}
	if *exactlyOnce {
		fmt.Fprintln(stdout, "  transactions: available")
	}
	return nil
}

// readRequirements reads the JSON of weir.TopicRequirements.
func readRequirements(name string) (tasks.Requirements, error) {
	var b []byte
	var err error
	if name == "-" {
		b, err = io.ReadAll(os.Stdin)
	} else {
		b, err = os.ReadFile(name)
	}
	if err != nil {
		return tasks.Requirements{}, fmt.Errorf("topology: %w", err)
	}
	var req tasks.Requirements
	if err := json.Unmarshal(b, &req); err != nil {
		return tasks.Requirements{}, fmt.Errorf("topology %s: %w", name, err)
	}
	if req.ApplicationID == "" || len(req.Subtopologies) == 0 {
		return tasks.Requirements{}, fmt.Errorf("topology %s: no application id or no sub-topologies (write it with weir.TopicRequirements)", name)
	}
	return req, nil
}

func split(s string) []string {
	var out []string
	for p := range strings.SplitSeq(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
