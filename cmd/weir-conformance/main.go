// Command weir-conformance checks weir's DSL operators against Kafka
// Streams 4.4: it runs every script under internal/conformance/scripts through
// Kafka Streams' TopologyTestDriver (the Java oracle in
// internal/conformance/kstreams, built with Maven) and through weir's topologytest,
// and prints one line per script:
//
//	conformance op=tumbling script=out-of-order-max-ts result=PASS
//
// A script passes when weir's output equals Kafka Streams' and Kafka
// Streams' equals the output recorded in the script — or, for a script
// that names a documented difference ("differs"), when weir's output equals
// the weir output the script records; its line says so. It exits 1 on any
// FAIL. -record writes Kafka Streams' output into the scripts as their
// expected output; -weir-only checks weir against the recorded output
// without Java.
//
//	go run ./cmd/weir-conformance                 # from the repository root
//	go run ./cmd/weir-conformance -run session    # the scripts whose path matches "session"
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/weirstream/weir/internal/conformance"
)

func main() {
	dir := flag.String("dir", "internal/conformance", "the conformance directory: scripts/ and kstreams/")
	run := flag.String("run", "", "only the scripts whose path matches this regular expression")
	record := flag.Bool("record", false, "write Kafka Streams' output into the scripts as their expected output")
	weirOnly := flag.Bool("weir-only", false, "check weir against the recorded output; do not run Kafka Streams")
	verbose := flag.Bool("v", false, "print every difference of a failing script")
	flag.Parse()
	os.Exit(check(*dir, *run, *record, *weirOnly, *verbose))
}

func check(dir, run string, record, weirOnly, verbose bool) int {
	started := time.Now()
	all, err := conformance.Paths(filepath.Join(dir, "scripts"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "weir-conformance:", err)
		return 2
	}
	re, err := regexp.Compile(run)
	if err != nil {
		fmt.Fprintln(os.Stderr, "weir-conformance: -run:", err)
		return 2
	}
	var paths []string
	for _, p := range all {
		if re.MatchString(p) {
			paths = append(paths, p)
		}
	}
	if len(paths) == 0 {
		fmt.Fprintln(os.Stderr, "weir-conformance: no scripts")
		return 2
	}
	var oracle map[string][]conformance.Output
	if !weirOnly {
		cp, err := conformance.BuildOracle(filepath.Join(dir, "kstreams"))
		if err != nil {
			fmt.Fprintln(os.Stderr, "weir-conformance:", err)
			return 2
		}
		oracle, err = conformance.RunOracle(cp, paths)
		if err != nil {
			fmt.Fprintln(os.Stderr, "weir-conformance:", err)
		}
	}
	failed, documented := 0, 0
	perOp := map[string][2]int{}
	for _, p := range paths {
		op := filepath.Base(filepath.Dir(p))
		name := strings.TrimSuffix(filepath.Base(p), ".json")
		problems := checkOne(p, oracle, record, weirOnly)
		result := "PASS"
		if problems != "" {
			result = "FAIL"
			failed++
		}
		c := perOp[op]
		if result == "PASS" {
			c[0]++
		} else {
			c[1]++
		}
		perOp[op] = c
		note := ""
		if s, err := conformance.Load(p); err == nil && s.Differs != "" {
			note = " documented-difference=" + s.Differs
			documented++
		}
		fmt.Printf("conformance op=%s script=%s result=%s%s\n", op, name, result, note)
		if problems != "" && verbose {
			fmt.Print(problems)
		} else if problems != "" {
			fmt.Print(firstLines(problems, 6))
		}
	}
	var summary []string
	for _, p := range paths {
		op := filepath.Base(filepath.Dir(p))
		if c, ok := perOp[op]; ok {
			summary = append(summary, fmt.Sprintf("%s %d/%d", op, c[0], c[0]+c[1]))
			delete(perOp, op)
		}
	}
	fmt.Printf("conformance: %d scripts, %d failed, %d documented differences (%s) in %v\n", len(paths), failed, documented, strings.Join(summary, ", "), time.Since(started).Round(time.Millisecond))
	if failed > 0 {
		return 1
	}
	return 0
}

// checkOne returns what is wrong with one script, or "".
func checkOne(path string, oracle map[string][]conformance.Output, record, weirOnly bool) string {
	s, err := conformance.Load(path)
	if err != nil {
		return "  " + err.Error() + "\n"
	}
	var problems strings.Builder
	want := s.Expect
	if !weirOnly {
		ks, ok := oracle[path]
		if !ok {
			return "  Kafka Streams failed on the script\n"
		}
		switch {
		case record:
			if err := conformance.Record(path, ks); err != nil {
				return "  record: " + err.Error() + "\n"
			}
		case s.Expect == nil:
			problems.WriteString("  no recorded output (run with -record)\n")
		default:
			if d := conformance.Diff(s.Expect, ks); d != "" {
				problems.WriteString("  Kafka Streams' output differs from the recorded one (kafka streams = recorded, weir = now):\n" + d)
			}
		}
		want = ks
	}
	got, err := conformance.RunWeir(s)
	if err != nil {
		return problems.String() + "  weir: " + err.Error() + "\n"
	}
	if d := conformance.Diff(s.WeirWant(want), got); d != "" {
		problems.WriteString(d)
	}
	return problems.String()
}

func firstLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) > n {
		lines = append(lines[:n], "  ... (-v for all)\n")
	}
	return strings.Join(lines, "")
}
