package topology_test

import (
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/statestore"
	"github.com/weirstream/weir/topology"
	"github.com/weirstream/weir/topologytest"
)

func TestBranch(t *testing.T) {
	b := topology.NewBuilder()
	amounts := topology.NewStream(b, "amounts", serde.String(), serde.Int64())
	routes := amounts.Split(topology.Named("amount-")).
		Branch("negative", func(_ string, n int64) bool { return n < 0 }).
		Branch("large", func(_ string, n int64) bool { return n >= 1000 }).
		Default("normal")
	require.Len(t, routes, 3)
	for name, s := range routes {
		s.To(name)
	}
	d := newDriver(t, b)
	in := topologytest.Input(d, "amounts", serde.String(), serde.Int64())
	for i, n := range []int64{5, -3, 2000, 999, 1000, -1} {
		require.NoError(t, in.Pipe(strconv.Itoa(i), n, ms(int64(i))))
	}
	read := func(topic string) []kv {
		got, err := topologytest.Output(d, topic, serde.String(), serde.Int64()).ReadKeyValues()
		require.NoError(t, err)
		return got
	}
	require.Equal(t, []kv{{Key: "1", Value: -3}, {Key: "5", Value: -1}}, read("amount-negative"))
	require.Equal(t, []kv{{Key: "2", Value: 2000}, {Key: "4", Value: 1000}}, read("amount-large"))
	require.Equal(t, []kv{{Key: "0", Value: 5}, {Key: "3", Value: 999}}, read("amount-normal"))
}

// sessionizer is a custom processor: it sums amounts per key in a store and
// emits the sums every 10ms of stream time, and a heartbeat with the number
// of keys every second of wall-clock time.
type sessionizer struct {
	sums *statestore.KV[string, int64]
}

func (s *sessionizer) Init(ctx processor.Context[string, string]) error {
	kv, err := processor.KeyValueStore(ctx, "sums", serde.String(), serde.Int64())
	if err != nil {
		return err
	}
	s.sums = kv
	if _, err := ctx.Schedule(10*time.Millisecond, processor.StreamTime, func(ts time.Time) error {
		it, err := s.sums.All()
		if err != nil {
			return err
		}
		defer it.Close()
		for it.Next() {
			if err := ctx.Forward(processor.Record[string, string]{
				Key: it.Key(), Value: fmt.Sprintf("sum=%d at %d", it.Value(), ts.UnixMilli()), Timestamp: ts,
			}); err != nil {
				return err
			}
		}
		return it.Err()
	}); err != nil {
		return err
	}
	_, err = ctx.Schedule(time.Second, processor.WallClockTime, func(ts time.Time) error {
		n, err := s.sums.Store().ApproximateNumEntries()
		if err != nil {
			return err
		}
		return ctx.Forward(processor.Record[string, string]{Key: "heartbeat", Value: fmt.Sprintf("%d keys at %d", n, ts.UnixMilli()), Timestamp: ts})
	})
	return err
}

func (s *sessionizer) Process(_ processor.Context[string, string], r processor.Record[string, int64]) error {
	sum, _, err := s.sums.Get(r.Key)
	if err != nil {
		return err
	}
	return s.sums.Put(r.Key, sum+r.Value)
}

func TestCustomProcessorWithPunctuators(t *testing.T) {
	b := topology.NewBuilder()
	b.AddStore(statestore.Spec{Name: "sums", Kind: statestore.KindKeyValue, Logged: true})
	amounts := topology.NewStream(b, "amounts", serde.String(), serde.Int64())
	topology.Process(amounts, func() processor.Processor[string, int64, string, string] { return &sessionizer{} },
		topology.WithStores("sums")).To("reports")
	d := newDriver(t, b)
	in := topologytest.Input(d, "amounts", serde.String(), serde.Int64())
	out := topologytest.Output(d, "reports", serde.String(), serde.String())

	// The first record fires the stream-time punctuator after processing
	// (like Kafka Streams: stream-time schedules start at 0).
	require.NoError(t, in.Pipe("a", 1, ms(3)))
	require.NoError(t, in.Pipe("b", 2, ms(8)))  // 8 < 3+10: no punctuation
	require.NoError(t, in.Pipe("a", 4, ms(13))) // 13 ≥ 13: fires
	require.NoError(t, in.Pipe("a", 1, ms(14)))
	got, err := out.ReadKeyValues()
	require.NoError(t, err)
	require.Equal(t, []pair{
		{Key: "a", Value: "sum=1 at 3"},
		{Key: "a", Value: "sum=5 at 13"}, {Key: "b", Value: "sum=2 at 13"},
	}, got)

	require.NoError(t, d.AdvanceWallClock(999*time.Millisecond))
	require.True(t, out.IsEmpty())
	require.NoError(t, d.AdvanceWallClock(time.Millisecond))
	got, err = out.ReadKeyValues()
	require.NoError(t, err)
	require.Equal(t, []pair{{Key: "heartbeat", Value: "2 keys at 1000"}}, got)

	// The store is logged: each write went to its changelog.
	require.Len(t, d.Topic("weir-test-sums-changelog"), 4)
}

func TestStatelessOperations(t *testing.T) {
	b := topology.NewBuilder()
	in := topology.NewStream(b, "in", serde.String(), serde.String())
	evens := topology.MapValues(in, func(v string) int64 { n, _ := strconv.ParseInt(v, 10, 64); return n }).
		Filter(func(_ string, n int64) bool { return n%2 == 0 })
	odds := topology.MapValues(in, func(v string) int64 { n, _ := strconv.ParseInt(v, 10, 64); return n }).
		FilterNot(func(_ string, n int64) bool { return n%2 == 0 })
	var peeked []int64
	topology.FlatMap(evens.Merge(odds).Peek(func(_ string, n int64) { peeked = append(peeked, n) }),
		func(k string, n int64) []processor.KeyValue[string, string] {
			out := make([]processor.KeyValue[string, string], 0, 2)
			for i := int64(0); i < n%3; i++ {
				out = append(out, processor.KeyValue[string, string]{Key: k + strconv.FormatInt(i, 10), Value: strconv.FormatInt(n, 10)})
			}
			return out
		}).To("out")
	d := newDriver(t, b)
	src := topologytest.Input(d, "in", serde.String(), serde.String())
	for i, v := range []string{"1", "2", "3", "4", "5"} {
		require.NoError(t, src.Pipe("k", v, ms(int64(i))))
	}
	require.Equal(t, []int64{1, 2, 3, 4, 5}, peeked)
	require.Equal(t, []pair{
		{Key: "k0", Value: "1"}, {Key: "k0", Value: "2"}, {Key: "k1", Value: "2"},
		{Key: "k0", Value: "4"}, {Key: "k0", Value: "5"}, {Key: "k1", Value: "5"},
	}, readPairs(t, d, "out"))
}

func TestTableFilterAndMapValues(t *testing.T) {
	b := topology.NewBuilder()
	prices := topology.NewTable(b, "prices", serde.String(), serde.Int64())
	cheap := prices.Filter(func(_ string, p int64) bool { return p < 100 }, topology.Materialized("cheap"))
	topology.MapTableValues(cheap, func(k string, p int64) string { return fmt.Sprintf("%s costs %d", k, p) }).
		ToStream().To("cheap-labels")
	d := newDriver(t, b)
	in := topologytest.Input(d, "prices", serde.String(), serde.Int64())
	require.NoError(t, in.Pipe("tea", 5, ms(1)))
	require.NoError(t, in.Pipe("car", 9000, ms(2)))
	require.NoError(t, in.Pipe("tea", 500, ms(3))) // no longer cheap: deleted
	out, err := topologytest.Output(d, "cheap-labels", serde.String(), serde.String()).ReadRecords()
	require.NoError(t, err)
	// car was never cheap: as in Kafka Streams, its update is no delete
	// (issue 21; weir used to forward a tombstone for it).
	require.Len(t, out, 2)
	require.Equal(t, "tea costs 5", out[0].Value)
	require.True(t, out[1].Tombstone)
	require.Equal(t, "tea", out[1].Key)
	cheapStore, err := topologytest.KeyValueStore(d, "cheap", serde.String(), serde.Int64())
	require.NoError(t, err)
	n, err := cheapStore.Store().ApproximateNumEntries()
	require.NoError(t, err)
	require.Zero(t, n)
}

func TestAggregateAndReduce(t *testing.T) {
	type stats struct{ Count, Sum, Max int64 }
	b := topology.NewBuilder()
	amounts := topology.NewStream(b, "amounts", serde.String(), serde.Int64())
	topology.Aggregate(amounts.GroupByKey(), func() stats { return stats{} },
		func(_ string, n int64, s stats) stats {
			return stats{Count: s.Count + 1, Sum: s.Sum + n, Max: max(s.Max, n)}
		}, serde.JSON[stats](), topology.Materialized("stats")).ToStream().To("stats")
	amounts.GroupByKey().Reduce(func(a, v int64) int64 { return min(a, v) }).ToStream().To("mins")
	d := newDriver(t, b)
	in := topologytest.Input(d, "amounts", serde.String(), serde.Int64())
	require.NoError(t, in.Pipe("x", 5, ms(1)))
	require.NoError(t, in.Pipe("x", 9, ms(2)))
	require.NoError(t, in.Pipe("x", 2, ms(3)))
	got, err := topologytest.Output(d, "stats", serde.String(), serde.JSON[stats]()).ReadKeyValues()
	require.NoError(t, err)
	require.Equal(t, []processor.KeyValue[string, stats]{
		{Key: "x", Value: stats{1, 5, 5}}, {Key: "x", Value: stats{2, 14, 9}}, {Key: "x", Value: stats{3, 16, 9}},
	}, got)
	mins, err := topologytest.Output(d, "mins", serde.String(), serde.Int64()).ReadKeyValues()
	require.NoError(t, err)
	require.Equal(t, []kv{{Key: "x", Value: 5}, {Key: "x", Value: 5}, {Key: "x", Value: 2}}, mins)
}

func TestBadInputIsARecordError(t *testing.T) {
	b := topology.NewBuilder()
	topology.NewStream(b, "nums", serde.String(), serde.Int64()).
		Filter(func(_ string, n int64) bool {
			if n == 13 {
				panic("unlucky")
			}
			return true
		}).To("out")
	topo, err := b.Build()
	require.NoError(t, err)

	var skipped []*processor.RecordError
	d, err := topologytest.New(topo, topologytest.Config{OnError: func(e *processor.RecordError) error {
		skipped = append(skipped, e)
		return nil
	}})
	require.NoError(t, err)
	defer d.Close()
	require.NoError(t, d.PipeRaw("nums", []byte("k"), []byte("not eight bytes"), ms(1)))
	in := topologytest.Input(d, "nums", serde.String(), serde.Int64())
	require.NoError(t, in.Pipe("k", 13, ms(2)))
	require.NoError(t, in.Pipe("k", 7, ms(3)))
	one, err := serde.Int64().Serialize("nums", 1)
	require.NoError(t, err)
	require.NoError(t, d.PipeRaw("nums", []byte("k"), one, time.Time{}))

	require.Len(t, skipped, 3)
	require.Equal(t, processor.DeserializationError, skipped[0].Kind)
	require.ErrorIs(t, skipped[0], serde.ErrDeserialize)
	require.Equal(t, int64(0), skipped[0].Offset)
	require.Equal(t, processor.ProcessingError, skipped[1].Kind)
	require.ErrorIs(t, skipped[1], processor.ErrPanic)
	require.Equal(t, "KSTREAM-FILTER-0000000001", skipped[1].Node)
	require.Equal(t, processor.DeserializationError, skipped[2].Kind, "a record without a timestamp is bad input")
	got, err := topologytest.Output(d, "out", serde.String(), serde.Int64()).ReadKeyValues()
	require.NoError(t, err)
	require.Equal(t, []kv{{Key: "k", Value: 7}}, got)

	// Without a handler the driver fails, naming the record.
	strict, err := topologytest.New(topo, topologytest.Config{})
	require.NoError(t, err)
	defer strict.Close()
	err = strict.PipeRaw("nums", []byte("k"), []byte{1}, ms(1))
	var re *processor.RecordError
	require.True(t, errors.As(err, &re))
	require.Contains(t, err.Error(), "nums/0@0")
}
