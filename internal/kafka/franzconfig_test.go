package kafka

import (
	"bytes"
	"crypto/tls"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
)

// FranzOpts is read back through a kgo client's OptValue: every setting of
// a Config lands in the option it names, over weir's defaults (which are
// not kgo's where kgo's would change what weir writes).
func TestFranzOpts(t *testing.T) {
	base := Config{Brokers: []string{"a:9092", "b:9092"}}
	with := func(f func(*Config)) Config {
		c := base
		f(&c)
		return c
	}
	tlsCfg := &tls.Config{ServerName: "kafka.example", MinVersion: tls.VersionTLS12}
	for _, tc := range []struct {
		name string
		cfg  Config
		want map[string]any // kgo option name → value
		sasl string         // mechanism name, "" for none
		err  bool
	}{
		{name: "defaults", cfg: base, want: map[string]any{
			"SeedBrokers":              []string{"a:9092", "b:9092"},
			"ClientID":                 "weir",
			"ProducerBatchCompression": []kgo.CompressionCodec{kgo.NoCompression()},
			"ProducerLinger":           time.Duration(0),
			"ProducerBatchMaxBytes":    int32(MaxMessageBytes),
			"FetchMaxWait":             DefaultFetchMaxWait,
			"FetchMaxPartitionBytes":   int32(DefaultMaxPartitionFetchBytes),
			"FetchMinBytes":            int32(1),
			"DisableClientMetrics":     true,
			"MetadataMinAge":           FranzMetadataMinAge,
			"AllowAutoTopicCreation":   false,
			"DialTLS":                  false,
		}},
		{name: "client id", cfg: with(func(c *Config) { c.ClientID = "app" }), want: map[string]any{"ClientID": "app"}},
		{name: "tls", cfg: with(func(c *Config) { c.TLS = tlsCfg }), want: map[string]any{"DialTLS": true}},
		{name: "plain", cfg: with(func(c *Config) { c.SASL = &SASL{Mechanism: SASLPlain, User: "u", Password: "p"} }), sasl: "PLAIN"},
		{name: "scram-256", cfg: with(func(c *Config) { c.SASL = &SASL{Mechanism: SASLScramSHA256, User: "u", Password: "p"} }), sasl: "SCRAM-SHA-256"},
		{name: "scram-512", cfg: with(func(c *Config) { c.SASL = &SASL{Mechanism: SASLScramSHA512, User: "u", Password: "p"} }), sasl: "SCRAM-SHA-512"},
		{name: "gzip level", cfg: with(func(c *Config) { c.Tuning.Compression, c.Tuning.CompressionLevel = CompressionGZIP, 9 }),
			want: map[string]any{"ProducerBatchCompression": []kgo.CompressionCodec{kgo.GzipCompression().WithLevel(9)}}},
		{name: "gzip", cfg: with(func(c *Config) { c.Tuning.Compression = CompressionGZIP }),
			want: map[string]any{"ProducerBatchCompression": []kgo.CompressionCodec{kgo.GzipCompression()}}},
		{name: "snappy", cfg: with(func(c *Config) { c.Tuning.Compression = CompressionSnappy }),
			want: map[string]any{"ProducerBatchCompression": []kgo.CompressionCodec{kgo.SnappyCompression()}}},
		{name: "lz4", cfg: with(func(c *Config) { c.Tuning.Compression = CompressionLZ4 }),
			want: map[string]any{"ProducerBatchCompression": []kgo.CompressionCodec{kgo.Lz4Compression()}}},
		{name: "zstd", cfg: with(func(c *Config) { c.Tuning.Compression = CompressionZSTD }),
			want: map[string]any{"ProducerBatchCompression": []kgo.CompressionCodec{kgo.ZstdCompression()}}},
		{name: "zstd level 19", cfg: with(func(c *Config) { c.Tuning.Compression, c.Tuning.CompressionLevel = CompressionZSTD, 19 }),
			want: map[string]any{"ProducerBatchCompression": []kgo.CompressionCodec{kgo.ZstdCompression().WithLevel(4)}}},
		{name: "zstd level -5", cfg: with(func(c *Config) { c.Tuning.Compression, c.Tuning.CompressionLevel = CompressionZSTD, -5 }),
			want: map[string]any{"ProducerBatchCompression": []kgo.CompressionCodec{kgo.ZstdCompression().WithLevel(1)}}},
		{name: "none", cfg: with(func(c *Config) { c.Tuning.Compression = CompressionNone }),
			want: map[string]any{"ProducerBatchCompression": []kgo.CompressionCodec{kgo.NoCompression()}}},
		{name: "linger", cfg: with(func(c *Config) { c.Tuning.Linger = 5 * time.Millisecond }),
			want: map[string]any{"ProducerLinger": 5 * time.Millisecond}},
		{name: "max request size", cfg: with(func(c *Config) { c.Tuning.MaxRequestSize = 4 << 20 }),
			want: map[string]any{"ProducerBatchMaxBytes": int32(4 << 20)}},
		{name: "fetch", cfg: with(func(c *Config) {
			c.Tuning.FetchMinBytes, c.Tuning.FetchMaxWait, c.Tuning.MaxPartitionFetchBytes = 1024, 250*time.Millisecond, 8<<20
		}), want: map[string]any{
			"FetchMinBytes":          int32(1024),
			"FetchMaxWait":           250 * time.Millisecond,
			"FetchMaxPartitionBytes": int32(8 << 20),
		}},
		{name: "no brokers", cfg: Config{}, err: true},
		{name: "bad compression", cfg: with(func(c *Config) { c.Tuning.Compression = "brotli" }), err: true},
		{name: "lz4 level", cfg: with(func(c *Config) { c.Tuning.Compression, c.Tuning.CompressionLevel = CompressionLZ4, 3 }), err: true},
		{name: "bad sasl", cfg: with(func(c *Config) { c.SASL = &SASL{Mechanism: "GSSAPI", User: "u", Password: "p"} }), err: true},
		{name: "bad client", cfg: with(func(c *Config) { c.Client = "confluent" }), err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts, err := FranzOpts(tc.cfg)
			if tc.err {
				require.ErrorIs(t, err, ErrConfig)
				return
			}
			require.NoError(t, err)
			cl, err := kgo.NewClient(opts...) // connects lazily: no broker needed
			require.NoError(t, err)
			defer cl.Close()
			for opt, want := range tc.want {
				require.Equal(t, want, cl.OptValue(opt), "%T %v", want, want)
			}
			require.Equal(t, tc.sasl, saslName(cl))
		})
	}
}

// saslName returns the name of the client's SASL mechanism, "" if none.
func saslName(cl *kgo.Client) string {
	mechs, _ := cl.OptValue(kgo.SASL).([]sasl.Mechanism)
	if len(mechs) == 0 {
		return ""
	}
	return mechs[0].Name()
}

// kgo's logger lines reach the Config's logger; its info lines at debug.
func TestFranzLogger(t *testing.T) {
	var buf bytes.Buffer
	l := slogLogger{slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	require.Equal(t, kgo.LogLevelWarn, l.Level())
	l.Log(kgo.LogLevelWarn, "request failed", "broker", 1)
	l.Log(kgo.LogLevelInfo, "metadata refresh")
	require.Contains(t, buf.String(), "kafka: franz-go: request failed")
	require.Contains(t, buf.String(), "broker=1")
	require.NotContains(t, buf.String(), "metadata refresh")

	debug := slogLogger{slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug - 4}))}
	require.Equal(t, kgo.LogLevelDebug, debug.Level())
	none := slogLogger{slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelError + 1}))}
	require.Equal(t, kgo.LogLevelNone, none.Level())
}
