package kafka_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
)

// BenchmarkReadRange reads one partition of 100,000 records of 100 bytes
// (a changelog's restore) on each client, from kfake:
//
//	go test -run '^$' -bench ReadRange ./internal/kafka
func BenchmarkReadRange(b *testing.B) {
	env := kafkatest.Kfake(b, embeddedDefaults)
	topic := kafkatest.Topic(b)
	kafkatest.CreateTopic(b, env, topic, 1)
	const n = 100_000
	p, err := kafka.NewProducer(env.Config())
	require.NoError(b, err)
	value := make([]byte, 100)
	for i := range n {
		require.NoError(b, p.Send(b.Context(), kafka.Record{Topic: topic, Partition: 0, Key: fmt.Appendf(nil, "k%d", i), Value: value}))
	}
	require.NoError(b, p.Flush(b.Context()))
	require.NoError(b, p.Close())
	for _, c := range clients {
		b.Run(string(c), func(b *testing.B) {
			cfg := env.Config()
			cfg.Client = c
			a, err := kafka.NewAdmin(cfg)
			require.NoError(b, err)
			defer a.Close()
			b.ResetTimer()
			for range b.N {
				got := 0
				require.NoError(b, a.ReadRange(b.Context(), topic, 0, 0, n, true, func(kafka.Record) error { got++; return nil }))
				require.Equal(b, n, got)
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
