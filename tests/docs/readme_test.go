package docs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMain runs the tests from the repository's root, where the paths the
// docs name (README.md, docs/, .ci/run, examples/) are relative to.
func TestMain(m *testing.M) {
	if err := os.Chdir("../.."); err != nil {
		fmt.Fprintln(os.Stderr, "docs:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// Every command README.md and docs/*.md show is exercised: each one
// matches an entry of docCommands, and the entry's check verifies the
// claim it makes — the test that runs the command's code exists, the CI
// script runs it, or (for the few commands run by hand) every flag it
// uses exists. A command that matches no entry fails this test: add it to
// docCommands with an honest check.
//
// Commands are the lines of fenced code blocks tagged sh (or bash, shell,
// console, or untagged) that start with a command word, and the inline
// code spans that do. The test reads files only: it is fast and needs no
// broker.
func TestDocCommandsAreExercised(t *testing.T) {
	files := docFiles(t)
	seen := map[string]bool{}
	for _, f := range files {
		for _, cmd := range shellCommands(t, f) {
			t.Run(f+": "+cmd, func(t *testing.T) {
				e := matchCommand(cmd)
				require.NotNil(t, e, "%s shows %q, which no test exercises: add it to docCommands in tests/docs/readme_test.go", f, cmd)
				seen[e.pattern] = true
				e.check(t, cmd)
			})
		}
	}
	for _, e := range docCommands {
		if !seen[e.pattern] {
			t.Errorf("docCommands entry %q matches no command of the docs any more: remove it", e.pattern)
		}
	}
}

// The README's test command is the one CI runs (.ci/run adds -race, -count
// and a timeout, and runs the long tests too: it sets WEIR_LONG_TESTS), and
// its first screen keeps both commands.
func TestReadmeFirstScreen(t *testing.T) {
	readme := readFile(t, "README.md")
	lines := strings.Split(readme, "\n")
	first := strings.Join(lines[:min(len(lines), 24)], "\n")
	require.Contains(t, first, "\ngo run ./examples/wordcount ")
	require.Contains(t, first, "\ngo test ./... ")
	ciRuns(t, suiteRun)
	ciRuns(t, `^export WEIR_LONG_TESTS=1$`)
	// Within the first 60 lines: two instances and a query.
	first = strings.Join(lines[:min(len(lines), 60)], "\n")
	require.Contains(t, first, "\ngo run ./examples/dashboard ")
	require.Contains(t, first, "\ncurl -s http://127.0.0.1:8081/stores/counts/keys/stream\n")
}

// The extraction finds commands in sh blocks, in untagged blocks and in
// inline code, and leaves out comments, output and Go; a command that no
// entry covers is reported.
func TestShellCommandsExtraction(t *testing.T) {
	md := filepath.Join(t.TempDir(), "x.md")
	require.NoError(t, os.WriteFile(md, []byte("Run `go run ./examples/wordcount` or `embedded.Start`, then\n"+
		"`CHAOS_SEED=<seed>\nbash .ci/run`.\n\n"+
		"```sh\ngo test ./...   # all\n# a comment\nmake deploy\n```\n\n"+
		"```\nscenario=kfake result=PASS\ncurl -s http://127.0.0.1:8080/healthz\n```\n\n"+
		"```go\ngo func() {}()\n```\n"), 0o644))
	got := shellCommands(t, md)
	require.Equal(t, []string{"go test ./...", "make deploy", "curl -s http://127.0.0.1:8080/healthz",
		"go run ./examples/wordcount", "CHAOS_SEED=<seed> bash .ci/run"}, got)
	require.Nil(t, matchCommand("make deploy"), "a command nothing exercises matches no entry")
	require.NotNil(t, matchCommand("go run ./examples/wordcount"))
}

// suiteRun is .ci/run's run of the whole suite: go test ./... with only
// -race, -count and -timeout added (no -run, no -short).
const suiteRun = `^go test( -race| -count=\d+| -timeout \S+)* \./\.\.\.$`

// Every Go block of README.md and docs/*.md is code that compiles: a part
// of example_test.go (whose Examples go test compiles and runs) or of the
// README's program, examples/quickstart/main.go. Lines are compared
// without their indentation.
func TestDocGoBlocksCompile(t *testing.T) {
	sources := unindent(readFile(t, "example_test.go")) + unindent(readFile(t, "examples/quickstart/main.go"))
	for _, f := range docFiles(t) {
		for _, block := range goBlocks(t, f) {
			want := strings.TrimRight(unindent(block), "\n")
			require.True(t, strings.Contains(sources, want),
				"%s shows Go code that is in no Example of example_test.go nor in examples/quickstart: put it in one, so that it compiles:\n%s", f, block)
		}
	}
}

// Every relative link of README.md and docs/*.md (and CHANGELOG.md) names
// a file of the repository, and an anchor into a Markdown file names one
// of its headings.
func TestDocLinksResolve(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, f := range append(docFiles(t), "CHANGELOG.md") {
		for _, m := range link.FindAllStringSubmatch(readFile(t, f), -1) {
			target := m[1]
			if strings.Contains(target, "://") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			if path == "" {
				path = f
			} else {
				path = filepath.Join(filepath.Dir(f), path)
			}
			_, err := os.Stat(path)
			require.NoError(t, err, "%s links to %s", f, target)
			if anchor != "" {
				require.Contains(t, headingAnchors(t, path), anchor, "%s links to %s: no such heading", f, target)
			}
		}
	}
}

// headingAnchors returns the GitHub anchors of a Markdown file's headings.
func headingAnchors(t *testing.T, file string) []string {
	var anchors []string
	drop := regexp.MustCompile(`[^\p{L}\p{N} _-]`)
	for line := range strings.SplitSeq(readFile(t, file), "\n") {
		if h, ok := strings.CutPrefix(line, "#"); ok {
			h = strings.TrimSpace(strings.TrimLeft(h, "#"))
			anchors = append(anchors, strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(h), ""), " ", "-"))
		}
	}
	return anchors
}

// goBlocks returns the fenced go blocks of a Markdown file.
func goBlocks(t *testing.T, file string) []string {
	var blocks []string
	var cur *strings.Builder
	for line := range strings.SplitSeq(readFile(t, file), "\n") {
		switch {
		case cur == nil && strings.HasPrefix(line, "```go"):
			cur = &strings.Builder{}
		case cur != nil && strings.HasPrefix(line, "```"):
			blocks = append(blocks, cur.String())
			cur = nil
		case cur != nil:
			cur.WriteString(line + "\n")
		}
	}
	return blocks
}

func unindent(s string) string {
	var b strings.Builder
	for line := range strings.SplitSeq(s, "\n") {
		b.WriteString(strings.TrimLeft(line, " \t") + "\n")
	}
	return b.String()
}

// docEntry says how the commands its pattern matches are exercised.
type docEntry struct {
	pattern string // regexp, matched against the whole command
	check   func(t *testing.T, cmd string)
}

var docCommands = []docEntry{
	// Run by tests of go test ./...
	{`go run \./examples/wordcount`, testRuns("examples/wordcount/main_test.go", "TestDemoRuns")},
	{`go run \./examples/dashboard`, testRuns("examples/dashboard/main_test.go", "TestReadmeCurlLines")},
	{`go run \./examples/eos-transform`, testRuns("examples/eos-transform/main_test.go", "TestDemoVerifies")},
	{`go run \./examples/orders`, testRuns("examples/orders/main_test.go", "TestDemoRuns")},
	{`go run \./examples/postgres-sink`, testRuns("examples/postgres-sink/main_test.go", "TestDemoRuns")},
	// Benchmarks of one package: the benchmark exists.
	{`go test( -run '\^\$')? -bench \w+( -benchtime \S+)?( -cpuprofile \S+)? \./\S+`, goBenchmark},
	{`curl -s '?http://127\.0\.0\.1:808[01]/\S+'?`, dashboardCurl},
	{`go run \./cmd/weir (inspect|inspect stores|inspect get|dev-broker)( --?\S+( [^-]\S*)?)*`, weirCommand},
	{`go test -run Example \.`, examplesRun},
	// Kafka 4's group protocols measured (docs/kafka.md); on a broker in CI's go test ./...
	{`go test \./internal/kafka -run TestKIP848 -v`, func(t *testing.T, _ string) {
		testRuns("internal/kafka/kip848_test.go", "TestKIP848ConsumerGroupCoPartitioning")(t, "")
		testRuns("internal/kafka/kip848_streams_test.go", "TestKIP848StreamsGroupStandbys")(t, "")
	}},

	// Run by CI (.ci/run).
	{`go test \./\.\.\.`, func(t *testing.T, _ string) { ciRuns(t, suiteRun) }},
	{`go test -race -count=1 \./\.\.\.`, func(t *testing.T, _ string) { ciRuns(t, `^go test -race -count=1( -timeout \S+)? \./\.\.\.$`) }},
	{`WEIR_LONG_TESTS=1 go test \./\.\.\.`, func(t *testing.T, _ string) {
		ciRuns(t, `^export WEIR_LONG_TESTS=1$`)
		ciRuns(t, suiteRun)
	}},
	{`KAFKA_BROKERS=127\.0\.0\.1:9092 go test \./\.\.\.`, func(t *testing.T, _ string) {
		ciRuns(t, `^export KAFKA_BROKERS$`)
		ciRuns(t, suiteRun)
	}},
	{`go vet`, func(t *testing.T, _ string) { ciRuns(t, `^go vet \./\.\.\.$`) }},
	{`go mod tidy`, func(t *testing.T, _ string) { ciRuns(t, `go mod tidy -diff`) }},
	{`bash scripts/kafka/start\.sh`, func(t *testing.T, _ string) { ciRuns(t, `\$\(bash scripts/kafka/start\.sh </dev/null\)`) }},
	{`(KAFKA_PORT=\d+ )?KAFKA_NODES=3 bash scripts/kafka/start\.sh`, func(t *testing.T, _ string) {
		ciRuns(t, `\$\(KAFKA_NODES=3 bash scripts/kafka/start\.sh </dev/null\)`)
	}},
	{`bash scripts/kafka/stop\.sh`, func(t *testing.T, _ string) { ciRuns(t, `^  bash scripts/kafka/stop\.sh`) }},
	{`bash scripts/postgres/start\.sh`, func(t *testing.T, _ string) { ciRuns(t, `\$\(bash scripts/postgres/start\.sh </dev/null\)`) }},
	{`bash scripts/kafka/start-secure\.sh`, func(t *testing.T, _ string) {
		ciRuns(t, `bash scripts/kafka/start-secure\.sh </dev/null`)
	}},
	{`bash scripts/kafka/stop\.sh secure`, func(t *testing.T, _ string) { ciRuns(t, `^bash scripts/kafka/stop\.sh secure$`) }},
	{`go test -count=1 -run TestSecured -v \./tests`, func(t *testing.T, _ string) {
		ciRuns(t, `go test -count=1 -run 'TestSecured' -v \./tests`)
		testRuns("tests/secured_test.go", "TestSecuredWordCount")(t, "")
		testRuns("tests/secured_test.go", "TestSecuredRefusals")(t, "")
	}},
	// node.sh is what weir-chaos -nodes calls for each broker fault.
	{`bash scripts/kafka/node\.sh \S+ N`, func(t *testing.T, _ string) { ciRuns(t, `-nodes scripts/kafka/node\.sh`) }},
	{`((CI|CHAOS)_SEED=<seed> )?bash \.ci/run`, func(t *testing.T, cmd string) {
		require.FileExists(t, ".ci/run")
		if name, _, ok := strings.Cut(cmd, "=<seed> "); ok {
			ciRuns(t, `^ci_seed=\$\{CI_SEED:-\$\{CHAOS_SEED:-`)
			require.Contains(t, []string{"CI_SEED", "CHAOS_SEED"}, name)
		}
	}},
	// weir-chaos: CI runs the short suite (kfake, the broker, the
	// cluster with -nodes and -faults); the long runs are run by hand.
	{`(\w+=\S+ )*go run \./cmd/weir-chaos( -\S+( [^-]\S*)?)*`, chaosCommand},

	// Benchmarks are commands that print a table, never tests (docs/design.md
	// §10); they take minutes. Checked: every flag exists.
	{`(cd bench && )?go run \.( -\S+( [^-]\S*)?)*`, benchCommand},
}

func matchCommand(cmd string) *docEntry {
	for i := range docCommands {
		if regexp.MustCompile(`^(?:` + docCommands[i].pattern + `)$`).MatchString(cmd) {
			return &docCommands[i]
		}
	}
	return nil
}

// testRuns checks that file holds the test that runs the command's code.
func testRuns(file, test string) func(*testing.T, string) {
	return func(t *testing.T, _ string) {
		require.Contains(t, readFile(t, file), "\nfunc "+test+"(t *testing.T) {", "%s should hold %s", file, test)
	}
}

// ciRuns checks that .ci/run has a line matching re.
func ciRuns(t *testing.T, re string) {
	t.Helper()
	require.True(t, regexp.MustCompile(`(?m)`+re).MatchString(readFile(t, ".ci/run")), ".ci/run has no line matching %s", re)
}

// dashboardCurl: examples/dashboard/main_test.go runs every curl line of
// examples/dashboard/README.md against the example and checks the answer.
func dashboardCurl(t *testing.T, cmd string) {
	testRuns("examples/dashboard/main_test.go", "TestReadmeCurlLines")(t, cmd)
	require.Contains(t, readFile(t, "examples/dashboard/README.md"), "\n"+cmd+"\n",
		"the dashboard's test runs the curl lines of examples/dashboard/README.md: add this one there (and a check of its answer)")
}

// weirCommand: cmd/weir's tests call run with the same subcommand and
// every flag the command uses.
func weirCommand(t *testing.T, cmd string) {
	words := strings.Fields(strings.TrimPrefix(cmd, "go run ./cmd/weir "))
	var want []string
	for i, w := range words {
		if i == 0 || strings.HasPrefix(w, "-") || (i == 1 && !strings.HasPrefix(w, "-")) {
			want = append(want, `"`+w+`"`)
		}
	}
	tests, err := filepath.Glob("cmd/weir/*_test.go")
	require.NoError(t, err)
	for _, f := range tests {
		for line := range strings.SplitSeq(readFile(t, f), "\n") {
			if strings.Contains(line, "run(") && containsAll(line, want) {
				return
			}
		}
	}
	t.Fatalf("no test in cmd/weir calls run with %v", want)
}

// examplesRun: go test of the root package runs the Examples of example_test.go.
func examplesRun(t *testing.T, _ string) {
	src := readFile(t, "example_test.go")
	require.Contains(t, src, "\nfunc ExampleApp_twoInstances() {")
	require.Contains(t, src, "\n\t// Output:")
}

// chaosCommand: every flag exists in cmd/weir-chaos; a command without
// -long is the short suite, which CI builds and runs.
func chaosCommand(t *testing.T, cmd string) {
	flagsDefined(t, cmd, "cmd/weir-chaos/main.go")
	if !strings.Contains(cmd, " -long") {
		ciRuns(t, `^go build -o /tmp/weir-chaos \./cmd/weir-chaos$`)
		ciRuns(t, `^timeout \S+ /tmp/weir-chaos `)
	} else {
		t.Logf("%q: the long run is run by hand (its flags are checked)", cmd)
	}
}

// benchCommand: every flag exists in the bench module's main.go.
func benchCommand(t *testing.T, cmd string) {
	flagsDefined(t, cmd, "bench/*.go")
	t.Logf("%q: a benchmark, run by hand (its flags are checked)", cmd)
}

// flagsDefined checks that every -flag of cmd is defined with the flag
// package in the files the pattern names (test files left out).
func flagsDefined(t *testing.T, cmd, pattern string) {
	files, err := filepath.Glob(pattern)
	require.NoError(t, err)
	var src strings.Builder
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") {
			src.WriteString(readFile(t, f))
		}
	}
	for _, w := range strings.Fields(cmd) {
		if name, ok := strings.CutPrefix(w, "-"); ok && name != "" {
			require.Regexp(t, regexp.MustCompile(`flag\.\w+\("`+regexp.QuoteMeta(name)+`"`), src.String(), "%s defines no flag -%s", pattern, name)
		}
	}
}

// goBenchmark: the package holds a benchmark the -bench pattern matches.
func goBenchmark(t *testing.T, cmd string) {
	m := regexp.MustCompile(`-bench (\w+).* \./(\S+)$`).FindStringSubmatch(cmd)
	require.Len(t, m, 3, "cannot read %q", cmd)
	files, err := filepath.Glob(filepath.Join(m[2], "*_test.go"))
	require.NoError(t, err)
	name := strings.TrimPrefix(m[1], "Benchmark")
	for _, f := range files {
		if regexp.MustCompile(`\nfunc Benchmark\w*` + name + `\w*\(b \*testing\.B\)`).MatchString(readFile(t, f)) {
			return
		}
	}
	t.Fatalf("no benchmark matching %s in ./%s", m[1], m[2])
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	require.NoError(t, err)
	return string(b)
}

// docFiles are README.md and docs/*.md.
func docFiles(t *testing.T) []string {
	docs, err := filepath.Glob("docs/*.md")
	require.NoError(t, err)
	require.NotEmpty(t, docs)
	return append([]string{"README.md"}, docs...)
}

// commandWords start a command; a leading VAR=value is skipped.
var commandWords = []string{"go", "bash", "sh", "curl", "cd", "docker", "docker-compose", "java", "mvn", "make", "kcat", "weir", "weir-chaos", "git"}

var (
	envAssign  = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=\S*$`)
	inlineCode = regexp.MustCompile("`([^`]+)`")
	fence      = regexp.MustCompile("^```\\s*(\\S*)")
)

// shellCommands extracts the commands of one Markdown file.
func shellCommands(t *testing.T, file string) []string {
	var cmds []string
	var prose strings.Builder
	inBlock, shellBlock, lang := false, false, ""
	for line := range strings.SplitSeq(readFile(t, file), "\n") {
		if m := fence.FindStringSubmatch(line); m != nil {
			if inBlock {
				inBlock = false
				continue
			}
			inBlock, lang = true, m[1]
			shellBlock = slices.Contains([]string{"sh", "bash", "shell", "console"}, lang)
			continue
		}
		if !inBlock {
			prose.WriteString(line + "\n")
			continue
		}
		if !shellBlock && lang != "" {
			continue // go, json, text, …
		}
		cmd := strings.TrimSpace(line)
		if i := strings.Index(cmd, " #"); i >= 0 {
			cmd = strings.TrimSpace(cmd[:i])
		}
		if cmd == "" || strings.HasPrefix(cmd, "#") {
			continue
		}
		if shellBlock || isCommand(cmd) {
			cmds = append(cmds, strings.Join(strings.Fields(cmd), " "))
		}
	}
	for _, m := range inlineCode.FindAllStringSubmatch(prose.String(), -1) {
		cmd := strings.Join(strings.Fields(m[1]), " ")
		if strings.Contains(cmd, " ") && isCommand(cmd) {
			cmds = append(cmds, cmd)
		}
	}
	return cmds
}

func isCommand(s string) bool {
	for _, w := range strings.Fields(s) {
		if envAssign.MatchString(w) {
			continue
		}
		return slices.Contains(commandWords, w)
	}
	return false
}
