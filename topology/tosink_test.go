package topology_test

import (
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
	"github.com/weirstream/weir/topologytest"
)

func TestToSinkWritesNoTopicAndReachesTheDriverUnderItsName(t *testing.T) {
	b := topology.NewBuilder()
	lines := topology.NewStream(b, "lines", serde.String(), serde.String())
	lines.ToSink("audit")
	topology.GroupBy(topology.FlatMapValues(lines, strings.Fields), func(_, w string) string { return w }).
		Count().ToStream().ToSink("counts")
	lines.To("copy")
	topo, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if got := topo.ExternalSinks(); len(got) != 2 || got[0] != "audit" || got[1] != "counts" {
		t.Fatalf("ExternalSinks = %v", got)
	}
	if got := topo.SinkTopics(); len(got) != 1 || got[0] != "copy" {
		t.Fatalf("SinkTopics = %v, want only the Kafka topic", got)
	}
	if d := topo.Describe(); !strings.Contains(d, "(external: audit)") || !strings.Contains(d, "(external: counts)") {
		t.Fatalf("Describe does not show the external sinks:\n%s", d)
	}
	d, err := topologytest.New(topo, topologytest.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	in := topologytest.Input(d, "lines", serde.String(), serde.String())
	if err := in.Pipe("1", "a b a", time.UnixMilli(1)); err != nil {
		t.Fatal(err)
	}
	counts, err := topologytest.Output(d, "counts", serde.String(), serde.Int64()).ReadKeyValues()
	if err != nil {
		t.Fatal(err)
	}
	if len(counts) != 3 || counts[2].Key != "a" || counts[2].Value != 2 {
		t.Fatalf("counts = %v", counts)
	}
}

func TestToSinkEmptyName(t *testing.T) {
	b := topology.NewBuilder()
	topology.NewStream(b, "lines", serde.String(), serde.String()).ToSink("")
	if _, err := b.Build(); err == nil || !strings.Contains(err.Error(), "ToSink: empty sink name") {
		t.Fatalf("Build: %v", err)
	}
}
