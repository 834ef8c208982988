package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/weirstream/weir/offsets"
)

// inspectCommand prints what an application left in its state dir.
var inspectCommand = command{
	name:    "inspect",
	summary: "print the write-ahead log, epoch log and state stores of a state dir",
	run:     runInspect,
}

const inspectSynopsis = `--state-dir DIR [--json]
       weir inspect stores --state-dir DIR [--json]
       weir inspect get --state-dir DIR --store NAME (--partition P | --partitions N) --key KEY

Prints the write-ahead log of every application in the state dir: each
retained batch with its ranges per partition and whether it committed,
then the continuous mode's epoch log. "stores" lists the store partitions
with their row counts and changelog checkpoints; "get" looks a key up
(weir inspect get -h). The application must not be running (Badger locks
the directory).

flags:`

// inspectBatch is one batch as --json prints it.
type inspectBatch struct {
	Batch     int64          `json:"batch"`
	Timestamp time.Time      `json:"timestamp"`
	Trigger   string         `json:"trigger"`
	Watermark time.Time      `json:"watermark"`
	Committed bool           `json:"committed"`
	CommitAt  *time.Time     `json:"committedAt,omitempty"`
	Ranges    []inspectRange `json:"ranges"`
}

type inspectRange struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Start     int64  `json:"start"`
	End       int64  `json:"end"`
}

type inspectEpoch struct {
	Epoch     int64            `json:"epoch"`
	Timestamp time.Time        `json:"timestamp"`
	Offsets   map[string]int64 `json:"offsets"`
}

type inspectApp struct {
	Application string         `json:"application"`
	Batches     []inspectBatch `json:"batches"`
	Epochs      []inspectEpoch `json:"epochs"`
}

func runInspect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "stores":
			return runInspectStores(ctx, args[1:], stdout, stderr)
		case "get":
			return runInspectGet(ctx, args[1:], stdout, stderr)
		}
	}
	fs := newFlagSet("inspect", inspectSynopsis, stderr)
	dir := fs.String("state-dir", "", "the application's state `directory` (WithStateDir)")
	asJSON := fs.Bool("json", false, "print JSON for tools instead of text")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *dir == "" {
		fmt.Fprintln(stderr, "weir inspect: --state-dir is required")
		fs.Usage()
		return errUsage
	}
	walDir := filepath.Join(*dir, "offsets")
	if _, err := os.Stat(walDir); err != nil {
		return fmt.Errorf("no write-ahead log in %s: %w", *dir, err)
	}
	wlog, err := offsets.Open(walDir, offsets.Options{})
	if err != nil {
		return err
	}
	defer wlog.Close()
	apps, err := readApps(ctx, wlog)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(apps)
	}
	printApps(stdout, apps)
	return nil
}

func readApps(ctx context.Context, wlog *offsets.Log) ([]inspectApp, error) {
	names, err := wlog.Namespaces()
	if err != nil {
		return nil, err
	}
	apps := make([]inspectApp, 0, len(names))
	for _, name := range names {
		wal, err := wlog.Namespace(name)
		if err != nil {
			return nil, err
		}
		app := inspectApp{Application: name, Batches: []inspectBatch{}, Epochs: []inspectEpoch{}}
		err = wal.Batches(ctx, func(p offsets.Plan, c *offsets.Commit) error {
			b := inspectBatch{Batch: p.Batch, Timestamp: p.Timestamp, Trigger: p.Trigger, Watermark: p.Watermark, Committed: c != nil, Ranges: []inspectRange{}}
			if c != nil {
				b.CommitAt = &c.Timestamp
			}
			for _, r := range p.Ranges {
				b.Ranges = append(b.Ranges, inspectRange{Topic: r.Topic, Partition: r.Partition, Start: r.Start, End: r.End})
			}
			app.Batches = append(app.Batches, b)
			return nil
		})
		if err != nil {
			return nil, err
		}
		err = wal.Epochs(ctx, func(e offsets.Epoch) error {
			ie := inspectEpoch{Epoch: e.Epoch, Timestamp: e.Timestamp, Offsets: map[string]int64{}}
			for _, o := range e.Offsets {
				ie.Offsets[o.TopicPartition.String()] = o.Next
			}
			app.Epochs = append(app.Epochs, ie)
			return nil
		})
		if err != nil {
			return nil, err
		}
		apps = append(apps, app)
	}
	return apps, nil
}

func printApps(w io.Writer, apps []inspectApp) {
	if len(apps) == 0 {
		fmt.Fprintln(w, "no applications in this write-ahead log")
	}
	for _, app := range apps {
		fmt.Fprintf(w, "application %s: %d batches, %d epochs\n", app.Application, len(app.Batches), len(app.Epochs))
		for _, b := range app.Batches {
			state := "PENDING (no commit: replayed or dropped at the next start)"
			if b.Committed {
				state = "committed " + b.CommitAt.Format(time.RFC3339Nano)
			}
			var rows int64
			for _, r := range b.Ranges {
				rows += r.End - r.Start
			}
			fmt.Fprintf(w, "  batch %d  %s  trigger=%s  offsets=%d  %s\n", b.Batch, b.Timestamp.Format(time.RFC3339Nano), b.Trigger, rows, state)
			for _, r := range b.Ranges {
				fmt.Fprintf(w, "      %s-%d [%d, %d)\n", r.Topic, r.Partition, r.Start, r.End)
			}
		}
		for _, e := range app.Epochs {
			parts := make([]string, 0, len(e.Offsets))
			for tp, next := range e.Offsets {
				parts = append(parts, fmt.Sprintf("%s@%d", tp, next))
			}
			fmt.Fprintf(w, "  epoch %d  %s  %s\n", e.Epoch, e.Timestamp.Format(time.RFC3339Nano), strings.Join(parts, " "))
		}
	}
}
