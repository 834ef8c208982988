package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/examples/orders/pipeline"
	"github.com/weirstream/weir/internal/conformance"
	"github.com/weirstream/weir/topologytest"
)

// readmeScript is the conformance script of the README's input, with
// Kafka Streams' output for it recorded by the oracle.
const readmeScript = "../../internal/conformance/scripts/port-orders/readme.json"

// transcript prints inputs as the demo does, each followed by the outputs
// it caused.
func transcript(inputs []input, outputs func(i int) []output) string {
	var b strings.Builder
	for i, in := range inputs {
		b.WriteString(in.String() + "\n")
		for _, o := range outputs(i) {
			b.WriteString(o.String() + "\n")
		}
	}
	return b.String()
}

// readmeTranscript is the output README.md shows: the text block after the
// marker line.
func readmeTranscript(t *testing.T) string {
	b, err := os.ReadFile("README.md")
	require.NoError(t, err)
	_, after, ok := strings.Cut(string(b), "<!-- the demo's output: main_test.go checks it -->\n```text\n")
	require.True(t, ok, "README.md has no marked output block")
	block, _, ok := strings.Cut(after, "```")
	require.True(t, ok)
	return block
}

// The README's output is Kafka Streams' output on the README's input, as
// the oracle recorded it into the conformance script (the conformance
// command runs Kafka Streams again and checks weir against it).
func TestReadmeShowsKafkaStreamsOutput(t *testing.T) {
	s, err := conformance.Load(readmeScript)
	require.NoError(t, err)
	require.Equal(t, "port-orders", s.Op)
	require.Len(t, s.Inputs, len(demoInput))
	for i, in := range demoInput {
		got := s.Inputs[i]
		require.Equal(t, in.topic, got.Topic, "input #%d", i)
		require.Equal(t, in.key, *got.Key, "input #%d", i)
		require.Equal(t, in.value, got.Value, "input #%d", i)
		require.Equal(t, in.at.UnixMilli(), got.TS, "input #%d", i)
	}
	require.Equal(t, pipeline.Outputs, s.Outputs)
	require.NotNil(t, s.Expect, "the script's Kafka Streams output is not recorded")
	ks := transcript(demoInput, func(i int) []output {
		var outs []output
		for _, o := range s.Expect {
			if o.After == i {
				outs = append(outs, output{topic: o.Topic, key: *o.Key, value: o.Value})
			}
		}
		return outs
	})
	require.Equal(t, ks, readmeTranscript(t))
}

// The README's output is what the pipeline gives in topologytest.
func TestReadmeShowsWeirOutput(t *testing.T) {
	topo, err := pipeline.Topology()
	require.NoError(t, err)
	d, err := topologytest.New(topo, topologytest.Config{})
	require.NoError(t, err)
	defer d.Close()
	read := map[string]int{}
	weir := transcript(demoInput, func(i int) []output {
		in := demoInput[i]
		var v []byte
		if in.value != nil {
			v = []byte(*in.value)
		}
		require.NoError(t, d.PipeRaw(in.topic, []byte(in.key), v, in.at))
		var outs []output
		for _, topic := range pipeline.Outputs {
			all := d.Topic(topic)
			for _, r := range all[read[topic]:] {
				o := output{topic: topic, key: string(r.Key)}
				if r.Value != nil {
					v := string(r.Value)
					o.value = &v
				}
				outs = append(outs, o)
			}
			read[topic] = len(all)
		}
		return outs
	})
	require.Equal(t, weir, readmeTranscript(t))
}

// The README's command: the demo runs on the embedded broker, prints the
// README's output and ends by itself.
func TestDemoRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the application on an embedded broker")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out bytes.Buffer
	require.NoError(t, runDemo(ctx, slog.New(slog.DiscardHandler), &out))
	require.Equal(t, readmeTranscript(t), out.String())
}

// The code README.md shows is the code that runs: every Go block is part
// of pipeline/pipeline.go, every Java block part of the Kafka Streams
// original the conformance oracle runs (lines compared without their
// indentation).
func TestReadmeCodeIsTheCode(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	sources := map[string]string{
		"go":   "pipeline/pipeline.go",
		"java": "../../internal/conformance/kstreams/src/main/java/weirconformance/OrdersPort.java",
	}
	blocks := map[string]int{}
	for lang, file := range sources {
		src, err := os.ReadFile(file)
		require.NoError(t, err)
		for _, block := range fenced(string(readme), lang) {
			blocks[lang]++
			want := strings.TrimRight(unindent(block), "\n")
			require.True(t, strings.Contains(unindent(string(src)), want), "README.md shows %s code that is not in %s:\n%s", lang, file, block)
		}
	}
	require.GreaterOrEqual(t, blocks["go"], 3)
	require.GreaterOrEqual(t, blocks["java"], 3)
}

// fenced returns the fenced blocks of md tagged lang.
func fenced(md, lang string) []string {
	var blocks []string
	var cur *strings.Builder
	for line := range strings.SplitSeq(md, "\n") {
		switch {
		case cur == nil && line == "```"+lang:
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

// Every command README.md shows is exercised: the demo by TestDemoRuns,
// the others' flags exist in the program they run.
func TestReadmeCommands(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	require.NoError(t, err)
	commands := regexp.MustCompile("(?m)^(go (?:run|test) [^#`\n]*?)\\s*(?:#.*)?$|`(go (?:run|test) [^`]+)`").FindAllStringSubmatch(string(readme), -1)
	require.NotEmpty(t, commands)
	for _, m := range commands {
		cmd := m[1] + m[2]
		t.Logf("README.md: %s", cmd)
		words := strings.Fields(cmd)
		var program string
		switch words[2] {
		case "./examples/orders":
			program = "main.go"
			if len(words) == 3 {
				require.Contains(t, readFile(t, "main_test.go"), "\nfunc TestDemoRuns(t *testing.T) {")
			}
		case "./cmd/weir-conformance":
			program = "../../cmd/weir-conformance/main.go"
			require.DirExists(t, "../../internal/conformance/scripts/port-orders")
		case "./internal/conformance":
			require.Equal(t, "go test ./internal/conformance", cmd)
			continue
		default:
			t.Fatalf("README.md shows %q, which no test exercises", cmd)
		}
		src := readFile(t, program)
		for _, w := range words[3:] {
			if name, ok := strings.CutPrefix(w, "-"); ok {
				require.Regexp(t, `flag\.\w+\("`+regexp.QuoteMeta(name)+`"`, src, "%q: %s defines no flag -%s", cmd, program, name)
			}
		}
	}
}

func readFile(t *testing.T, name string) string {
	b, err := os.ReadFile(name)
	require.NoError(t, err)
	return string(b)
}
