package topology_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
	"github.com/weirstream/weir/topologytest"
)

// suppressed builds the table of "prices" suppressed as s, written to "out".
func suppressed(t *testing.T, s topology.Suppression) *topology.Topology {
	t.Helper()
	b := topology.NewBuilder()
	prices := topology.NewTable(b, "prices", serde.String(), serde.String())
	prices.Suppress(s, topology.Materialized("held")).ToStream().To("out")
	topo, err := b.Build()
	require.NoError(t, err)
	return topo
}

func TestSuppressUntilTimeLimit(t *testing.T) {
	d, err := topologytest.New(suppressed(t, topology.UntilTimeLimit(10*time.Millisecond, topology.Unbounded())), topologytest.Config{})
	require.NoError(t, err)
	defer d.Close()
	in := topologytest.Input(d, "prices", serde.String(), serde.String())
	out := topologytest.Output(d, "out", serde.String(), serde.String())
	require.NoError(t, in.Pipe("ann", "1", ms(100)))
	require.NoError(t, in.Pipe("ann", "2", ms(105))) // held in ann's place (100)
	require.NoError(t, in.Pipe("bob", "1", ms(109)))
	got, err := out.ReadKeyValues()
	require.NoError(t, err)
	require.Empty(t, got, "nothing is due before stream time 110")
	require.NoError(t, in.Pipe("cat", "1", ms(110)))
	recs, err := out.ReadRecords()
	require.NoError(t, err)
	require.Len(t, recs, 1)
	require.Equal(t, "ann", recs[0].Key)
	require.Equal(t, "2", recs[0].Value, "the latest update of the key")
	require.Equal(t, int64(105), recs[0].Timestamp.UnixMilli(), "stamped with the latest update's timestamp")
}

func TestSuppressShutDownWhenFullStopsWithAnErrorNamingTheStore(t *testing.T) {
	buf := topology.BufferMaxRecords(1).ShutDownWhenFull()
	topo := suppressed(t, topology.UntilTimeLimit(time.Second, buf))
	// Even a policy that skips bad records does not skip a full buffer.
	d, err := topologytest.New(topo, topologytest.Config{OnError: func(*processor.RecordError) error { return nil }})
	require.NoError(t, err)
	defer d.Close()
	in := topologytest.Input(d, "prices", serde.String(), serde.String())
	require.NoError(t, in.Pipe("ann", "1", ms(1)))
	require.NoError(t, in.Pipe("ann", "2", ms(2)), "updating a held key does not fill the buffer")
	err = in.Pipe("bob", "1", ms(3))
	require.ErrorIs(t, err, topology.ErrSuppressBufferFull)
	require.ErrorIs(t, err, processor.ErrStop)
	require.ErrorContains(t, err, `store "held" holds 2/1 records`)
}

func TestSuppressEmitEarlyWhenFullEmitsTheOldest(t *testing.T) {
	topo := suppressed(t, topology.UntilTimeLimit(time.Second, topology.BufferMaxBytes(2*(28+3+1))))
	d, err := topologytest.New(topo, topologytest.Config{})
	require.NoError(t, err)
	defer d.Close()
	in := topologytest.Input(d, "prices", serde.String(), serde.String())
	require.NoError(t, in.Pipe("bob", "1", ms(2)))
	require.NoError(t, in.Pipe("ann", "1", ms(2)))
	require.NoError(t, in.Pipe("cat", "1", ms(1)))
	got, err := topologytest.Output(d, "out", serde.String(), serde.String()).ReadKeyValues()
	require.NoError(t, err)
	require.Equal(t, []processor.KeyValue[string, string]{{Key: "cat", Value: "1"}}, got, "the oldest held time goes first")
}

func TestSuppressHeldUpdatesSurviveARestart(t *testing.T) {
	topo := suppressed(t, topology.UntilTimeLimit(10*time.Millisecond, topology.Unbounded()))
	d, err := topologytest.New(topo, topologytest.Config{ApplicationID: "app"})
	require.NoError(t, err)
	in := topologytest.Input(d, "prices", serde.String(), serde.String())
	require.NoError(t, in.Pipe("ann", "1", ms(100)))
	require.NoError(t, in.Pipe("bob", "1", ms(104)))
	require.NoError(t, d.PipeRaw("prices", []byte("ann"), nil, ms(105)))

	// The buffer is restored from its changelog: the held tombstone and
	// update come out when the new task's stream time reaches them.
	d, err = d.Restart()
	require.NoError(t, err)
	defer d.Close()
	before := len(d.Topic("out"))
	require.NoError(t, topologytest.Input(d, "prices", serde.String(), serde.String()).Pipe("cat", "1", ms(114)))
	require.Equal(t, []string{"ann ", "bob 1"}, sinkRecords(d.Topic("out")[before:]))
}

func TestSuppressBuildErrors(t *testing.T) {
	b := topology.NewBuilder()
	prices := topology.NewTable(b, "prices", serde.String(), serde.String())
	prices.Suppress(topology.UntilWindowCloses(topology.Unbounded()))
	prices.Suppress(topology.UntilTimeLimit(time.Second, topology.BufferConfig{}))
	prices.Suppress(topology.UntilTimeLimit(-time.Second, topology.BufferMaxRecords(-1)))
	clicks := topology.NewStream(b, "clicks", serde.String(), serde.String())
	topology.WindowedBy(clicks.GroupByKey(), topology.TumblingWindows(time.Second)).Count().
		Suppress(topology.UntilWindowCloses(topology.BufferMaxRecords(10)))
	_, err := b.Build()
	require.ErrorIs(t, err, topology.ErrInvalidTopology)
	for _, msg := range []string{"UntilWindowCloses needs a table of a windowed aggregation", "buffer without a bound",
		"negative buffer bound", "negative time limit", "must not emit early"} {
		require.ErrorContains(t, err, msg)
	}
}

func TestSuppressUntilWindowClosesOnSessions(t *testing.T) {
	b := topology.NewBuilder()
	clicks := topology.NewStream(b, "clicks", serde.String(), serde.String())
	counts := topology.SessionWindowedBy(clicks.GroupByKey(), topology.SessionWindowsWithGap(10*time.Millisecond)).Count()
	final := counts.Suppress(topology.UntilWindowCloses(topology.Unbounded()))
	topology.Map(final.ToStream(), func(k topology.Windowed[string], n int64) (string, int64) { return k.String(), n }).To("counts")
	topo, err := b.Build()
	require.NoError(t, err)
	d, err := topologytest.New(topo, topologytest.Config{})
	require.NoError(t, err)
	defer d.Close()
	pipeClicks(t, d, click{"ann", 0}, click{"ann", 5}, click{"bob", 20}, click{"ann", 30})
	require.Equal(t, []kv{{Key: "ann@[0,5)", Value: 2}, {Key: "bob@[20,20)", Value: 1}}, readCounts(t, d),
		"a session closes at its end + gap: ann's merged session once, no tombstone")
}
