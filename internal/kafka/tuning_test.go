package kafka

import (
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/rcrowley/go-metrics"
	"github.com/stretchr/testify/require"
)

// Every client's configuration carries the no-op registry and the user's
// tuning; the zero Tuning keeps sarama's producer
// defaults (no compression, no linger) and Kafka's fetch size.
func TestApplyTuningReachesEveryClientConfig(t *testing.T) {
	base := Config{Brokers: []string{"x:1"}}
	sc, err := base.saramaConfig()
	require.NoError(t, err)
	require.IsType(t, nilRegistry{}, sc.MetricRegistry)
	require.Equal(t, sarama.CompressionNone, sc.Producer.Compression)
	require.Zero(t, sc.Producer.Flush.Frequency)
	require.Zero(t, sc.Producer.Flush.Bytes, "no linger: nothing holds a request")
	require.Equal(t, int32(DefaultMaxPartitionFetchBytes), sc.Consumer.Fetch.Default)
	require.Equal(t, MaxMessageBytes, base.Tuning.MessageBytes())

	tuned := base
	tuned.Tuning = Tuning{Compression: CompressionZSTD, CompressionLevel: 3, Linger: 5 * time.Millisecond,
		MaxRequestSize: 2 << 20, FetchMinBytes: 10, MaxPartitionFetchBytes: 2 << 20, FetchMaxWait: 50 * time.Millisecond}
	sc, err = tuned.saramaConfig()
	require.NoError(t, err)
	require.Equal(t, sarama.CompressionZSTD, sc.Producer.Compression)
	require.Equal(t, 3, sc.Producer.CompressionLevel)
	require.Equal(t, 5*time.Millisecond, sc.Producer.Flush.Frequency)
	require.Equal(t, DefaultBatchSize, sc.Producer.Flush.Bytes, "a linger without a batch size takes the default")
	require.Equal(t, int32(10), sc.Consumer.Fetch.Min)
	require.Equal(t, int32(2<<20), sc.Consumer.Fetch.Default)
	require.Equal(t, 2<<20, tuned.Tuning.MessageBytes())

	g, err := NewGroup(GroupConfig{Config: tuned, GroupID: "g", Topics: []string{"a"}})
	require.NoError(t, err)
	gsc, err := g.saramaConfig(sarama.NewBalanceStrategyRange())
	require.NoError(t, err)
	require.Equal(t, 50*time.Millisecond, gsc.Consumer.MaxWaitTime, "Tuning.FetchMaxWait when GroupConfig has none")
	g, err = NewGroup(GroupConfig{Config: tuned, GroupID: "g", Topics: []string{"a"}, FetchMaxWait: 20 * time.Millisecond})
	require.NoError(t, err)
	gsc, err = g.saramaConfig(sarama.NewBalanceStrategyRange())
	require.NoError(t, err)
	require.Equal(t, 20*time.Millisecond, gsc.Consumer.MaxWaitTime, "GroupConfig.FetchMaxWait wins")

	tuned.Tuning.BatchSize = 4096
	sc, err = tuned.saramaConfig()
	require.NoError(t, err)
	require.Equal(t, 4096, sc.Producer.Flush.Bytes)
}

func TestTuningValidate(t *testing.T) {
	for name, tu := range map[string]Tuning{
		"codec":            {Compression: "brotli"},
		"lz4 level":        {Compression: CompressionLZ4, CompressionLevel: 1},
		"gzip level":       {Compression: CompressionGZIP, CompressionLevel: 10},
		"linger":           {Linger: time.Microsecond},
		"batch size":       {BatchSize: -1},
		"max request size": {MaxRequestSize: 1000},
		"fetch min":        {FetchMinBytes: -1},
		"partition fetch":  {MaxPartitionFetchBytes: 100},
		"fetch max wait":   {FetchMaxWait: time.Minute},
	} {
		err := tu.Validate()
		require.ErrorIs(t, err, ErrConfig, name)
		_, err = Config{Brokers: []string{"x:1"}, Tuning: tu}.saramaConfig()
		require.ErrorIs(t, err, ErrConfig, name)
	}
	require.NoError(t, Tuning{Compression: CompressionGZIP, CompressionLevel: 9}.Validate())
	require.NoError(t, Tuning{Compression: CompressionZSTD, CompressionLevel: -5}.Validate())
}

// sarama gets its metrics through go-metrics' GetOrRegister helpers and
// type-asserts what they return; the registry must hand back a metric of
// the asked kind that records nothing.
func TestNilRegistryHandsOutNoOpMetrics(t *testing.T) {
	r := nilRegistry{}
	m := metrics.GetOrRegisterMeter("m", r)
	m.Mark(5)
	require.Zero(t, m.Count())
	h := r.GetOrRegister("h", func() metrics.Histogram {
		return metrics.NewHistogram(metrics.NewExpDecaySample(1028, 0.015))
	}).(metrics.Histogram)
	h.Update(7)
	require.Zero(t, h.Count())
	c := metrics.GetOrRegisterCounter("c", r)
	c.Inc(1)
	require.Zero(t, c.Count())
	require.Nil(t, r.Get("m"))
	require.NotNil(t, r.GetOrRegister("t", metrics.NewTimer).(metrics.Timer))
}

// A restore reader's fetch never asks for more than the user's
// max.partition.fetch.bytes, also below the 64 KiB floor of a sized fetch.
func TestRangeReaderKeepsToMaxPartitionFetchBytes(t *testing.T) {
	a := &Admin{}
	r := &rangeReader{a: a, next: 0, to: 1 << 20, fetchSize: 4 << 10}
	require.Equal(t, int32(4<<10), r.wantBytes())
	r.fetchSize = readFetchBytes
	r.to = 10
	require.Equal(t, int32(readMinFetchBytes), r.wantBytes())
	r.to = 1 << 20
	require.Equal(t, int32(readFetchBytes), r.wantBytes())
}
