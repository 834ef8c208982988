package topology_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
	"github.com/weirstream/weir/topologytest"
)

// atTime reads the timestamp from a value "payload@ms"; a value without one
// takes the partition time.
func atTime(_ string, v string, _, partitionTime time.Time) (time.Time, error) {
	i := strings.LastIndexByte(v, '@')
	if i < 0 {
		return partitionTime, nil
	}
	n, err := strconv.ParseInt(v[i+1:], 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	return time.UnixMilli(n), nil
}

func TestWithTimestampStampsRecords(t *testing.T) {
	b := topology.NewBuilder()
	topology.NewStream(b, "in", serde.String(), serde.String(), topology.WithTimestamp(atTime)).To("out")
	var errs []*processor.RecordError
	d, err := topologytest.New(mustBuild(t, b), topologytest.Config{OnError: func(re *processor.RecordError) error {
		errs = append(errs, re)
		return nil
	}})
	require.NoError(t, err)
	in := topologytest.Input(d, "in", serde.String(), serde.String())
	require.NoError(t, in.Pipe("a", "x@100", ms(5)))   // stamped 100
	require.NoError(t, in.Pipe("a", "no-time", ms(6))) // partition time 100
	require.NoError(t, in.Pipe("a", "y@50", ms(7)))    // out of order: kept
	require.NoError(t, in.Pipe("a", "z@-5", ms(8)))    // invalid: dropped, counted
	require.NoError(t, in.Pipe("a", "w@bad", ms(9)))   // error: bad-record policy
	require.NoError(t, in.PipeTombstone("a", ms(10)))  // "" has no time: partition time 100
	got, err := topologytest.Output(d, "out", serde.String(), serde.String()).ReadRecords()
	require.NoError(t, err)
	var stamps []int64
	for _, r := range got {
		stamps = append(stamps, r.Timestamp.UnixMilli())
	}
	require.Equal(t, []int64{100, 100, 50, 100}, stamps)
	require.Equal(t, int64(1), d.Counters()[processor.MetricDroppedInvalidTimestamp])
	require.Len(t, errs, 1)
	require.Equal(t, processor.DeserializationError, errs[0].Kind)
	require.Equal(t, int64(4), errs[0].Offset)
}

func TestWithTimestampDrivesWindows(t *testing.T) {
	b := topology.NewBuilder()
	in := topology.NewStream(b, "in", serde.String(), serde.String(), topology.WithTimestamp(atTime))
	topology.WindowedBy(in.GroupByKey(), topology.TumblingWindows(10*time.Millisecond)).Count().ToStream().To("out")
	d := newDriver(t, b)
	pipe := topologytest.Input(d, "in", serde.String(), serde.String())
	// Record times run forward; the extracted times decide the windows and
	// that the last record is late.
	for i, v := range []string{"a@1000", "b@1005", "c@1012", "d@1003"} {
		require.NoError(t, pipe.Pipe("k", v, ms(int64(i))))
	}
	got, err := topologytest.Output(d, "out", topology.WindowedSerde(serde.String()), serde.Int64()).ReadRecords()
	require.NoError(t, err)
	var lines []string
	for _, r := range got {
		lines = append(lines, strconv.FormatInt(r.Key.Start.UnixMilli(), 10)+"="+strconv.FormatInt(r.Value, 10)+"@"+strconv.FormatInt(r.Timestamp.UnixMilli(), 10))
	}
	require.Equal(t, []string{"1000=1@1000", "1000=2@1005", "1010=1@1012"}, lines)
	require.Equal(t, int64(1), d.Counters()[processor.MetricDroppedLate])
}

func TestWithTimestampOnTable(t *testing.T) {
	b := topology.NewBuilder()
	topology.NewTable(b, "in", serde.String(), serde.String(), topology.WithTimestamp(atTime)).ToStream().To("out")
	d := newDriver(t, b)
	require.NoError(t, topologytest.Input(d, "in", serde.String(), serde.String()).Pipe("a", "x@42", ms(1)))
	got, err := topologytest.Output(d, "out", serde.String(), serde.String()).ReadRecords()
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, int64(42), got[0].Timestamp.UnixMilli())
}

func TestBuiltInTimestampExtractors(t *testing.T) {
	cases := []struct {
		name    string
		opt     topology.Option
		want    []int64 // output timestamps
		dropped int64
		errs    int
		errIs   error
	}{
		{name: "default fails invalid", opt: nil, want: []int64{10, 20}, errs: 2},
		{name: "log and skip", opt: topology.LogAndSkipOnInvalidTimestamp(), want: []int64{10, 20}, dropped: 2},
		{name: "use partition time", opt: topology.UsePartitionTimeOnInvalidTimestamp(), want: []int64{10, 20, 20}, errs: 1, errIs: topology.ErrNoPartitionTime},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := topology.NewBuilder()
			topology.NewStream(b, "in", serde.String(), serde.String(), c.opt).To("out")
			var errs []error
			d, err := topologytest.New(mustBuild(t, b), topologytest.Config{OnError: func(re *processor.RecordError) error {
				require.Equal(t, processor.DeserializationError, re.Kind)
				errs = append(errs, re)
				return nil
			}})
			require.NoError(t, err)
			for _, ts := range []int64{-1, 10, 20, -1} {
				require.NoError(t, d.PipeRaw("in", []byte("k"), []byte("v"), time.UnixMilli(ts)))
			}
			var got []int64
			for _, o := range d.Topic("out") {
				got = append(got, o.Timestamp.UnixMilli())
			}
			require.Equal(t, c.want, got)
			require.Equal(t, c.dropped, d.Counters()[processor.MetricDroppedInvalidTimestamp])
			require.Len(t, errs, c.errs)
			if c.errIs != nil {
				require.True(t, errors.Is(errs[0], c.errIs), "%v", errs[0])
			}
		})
	}
}

func TestWithTimestampTypeMismatch(t *testing.T) {
	b := topology.NewBuilder()
	extract := func(_ string, n int64, rt, _ time.Time) (time.Time, error) { return rt, nil }
	topology.NewStream(b, "in", serde.String(), serde.String(), topology.WithTimestamp(extract)).To("out")
	_, err := b.Build()
	require.ErrorIs(t, err, topology.ErrInvalidTopology)
	require.ErrorContains(t, err, `NewStream("in"): WithTimestamp's extractor`)
}

func mustBuild(t *testing.T, b *topology.Builder) *topology.Topology {
	t.Helper()
	topo, err := b.Build()
	require.NoError(t, err)
	return topo
}
