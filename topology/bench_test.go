package topology_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/statestore"
	"github.com/weirstream/weir/topology"
)

// benchRecords processes r, at offsets 0, 1, 2, …, through the task of
// sub-topology 0 of the topology bld builds, for as long as b runs.
func benchRecords(b *testing.B, bld *topology.Builder, r processor.RawRecord) {
	b.Helper()
	task, n := benchTask(b, bld)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r.Offset = int64(i)
		if err := task.Process(r); err != nil {
			b.Fatal(err)
		}
	}
	if *n == 0 {
		b.Fatal("no output")
	}
}

// benchTask is the task of sub-topology 0 of the topology bld builds, its
// outputs counted and dropped.
func benchTask(b *testing.B, bld *topology.Builder) (*processor.Task, *int) {
	b.Helper()
	topo, err := bld.Build()
	if err != nil {
		b.Fatal(err)
	}
	n := new(int)
	task, err := processor.NewTask(topo.Graph(), processor.TaskConfig{
		ApplicationID: "bench", Stores: statestore.NewInMemoryFactory(),
		Emit: func(processor.Output) error { *n++; return nil },
	})
	if err != nil {
		b.Fatal(err)
	}
	return task, n
}

// BenchmarkStatelessRecord is the pure core's cost per record of the
// benchmark's stateless workload (bench/: filter, then map the value to
// upper case): decode, the two nodes, encode — no Kafka.
func BenchmarkStatelessRecord(b *testing.B) {
	bld := topology.NewBuilder()
	s := topology.NewStream(bld, "in", serde.Bytes(), serde.Bytes())
	f := s.Filter(func(_, v []byte) bool { return len(v) > 0 })
	topology.MapValues(f, bytes.ToUpper).To("out")
	benchRecords(b, bld, processor.RawRecord{Topic: "in", Key: []byte("key-000042"), Value: []byte(strings.Repeat("v", 100)), Timestamp: time.UnixMilli(1)})
}

// BenchmarkWordCountSplitLine is the pure core's cost per line of the
// word count's first sub-topology (bench/: split into ten words, each
// re-keyed and written to the repartition topic).
func BenchmarkWordCountSplitLine(b *testing.B) {
	bld := topology.NewBuilder()
	lines := topology.NewStream(bld, "in", serde.String(), serde.String())
	words := topology.FlatMapValues(lines, strings.Fields)
	topology.GroupBy(words, func(_, w string) string { return w }, topology.Named("words")).
		Count(topology.Materialized("counts"))
	benchRecords(b, bld, processor.RawRecord{Topic: "in", Value: []byte("the quick brown fox jumps over the lazy dog again"), Timestamp: time.UnixMilli(1)})
}
