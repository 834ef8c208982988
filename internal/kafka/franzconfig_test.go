package kafka_test

import (
	"crypto/tls"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/internal/kafka"
)

// TestFranzOpts builds a kgo client (it does not connect) from each
// configuration and reads back what FranzOpts set.
func TestFranzOpts(t *testing.T) {
	client := func(cfg kafka.Config) *kgo.Client {
		t.Helper()
		opts, err := kafka.FranzOpts(cfg)
		require.NoError(t, err)
		cl, err := kgo.NewClient(opts...)
		require.NoError(t, err)
		t.Cleanup(cl.Close)
		return cl
	}
	base := kafka.Config{Brokers: []string{"127.0.0.1:1"}}

	cl := client(base)
	require.Equal(t, "weir", cl.OptValue(kgo.ClientID))
	require.Equal(t, time.Duration(0), cl.OptValue(kgo.ProducerLinger), "weir's zero linger, not kgo's 10 ms")
	require.Equal(t, int32(kafka.MaxMessageBytes), cl.OptValue(kgo.ProducerBatchMaxBytes))
	require.Nil(t, cl.OptValue(kgo.DialTLSConfig))
	require.Empty(t, cl.OptValue(kgo.SASL))

	tuned := base
	tuned.ClientID = "app"
	tuned.TLS = &tls.Config{ServerName: "kafka"}
	tuned.Tuning = kafka.Tuning{Compression: kafka.CompressionZSTD, CompressionLevel: 3, Linger: 5 * time.Millisecond,
		BatchSize: 64 << 10, FetchMinBytes: 10, MaxPartitionFetchBytes: 2 << 20, FetchMaxWait: time.Second}
	cl = client(tuned)
	require.Equal(t, "app", cl.OptValue(kgo.ClientID))
	require.Equal(t, 5*time.Millisecond, cl.OptValue(kgo.ProducerLinger))
	require.Equal(t, int32(64<<10), cl.OptValue(kgo.ProducerBatchMaxBytes), "batch size under a linger")
	require.Equal(t, "kafka", cl.OptValue(kgo.DialTLSConfig).(*tls.Config).ServerName)
	require.Equal(t, []kgo.CompressionCodec{kgo.ZstdCompression().WithLevel(3)}, cl.OptValue(kgo.ProducerBatchCompression))
	require.Equal(t, int32(10), cl.OptValue(kgo.FetchMinBytes))
	require.Equal(t, int32(2<<20), cl.OptValue(kgo.FetchMaxPartitionBytes))
	require.Equal(t, time.Second, cl.OptValue(kgo.FetchMaxWait))

	for _, mech := range []string{kafka.SASLPlain, kafka.SASLScramSHA256, kafka.SASLScramSHA512} {
		c := base
		c.SASL = &kafka.SASL{Mechanism: mech, User: "u", Password: "p"}
		require.Len(t, client(c).OptValue(kgo.SASL), 1, mech)
	}

	bad := base
	bad.SASL = &kafka.SASL{Mechanism: "GSSAPI", User: "u", Password: "p"}
	_, err := kafka.FranzOpts(bad)
	require.ErrorIs(t, err, kafka.ErrConfig)
}
