package kafka

import (
	"context"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// FranzOpts returns the franz-go (kgo) options every franz-go client of
// weir shares, from cfg: the seed brokers, the client id, TLS, SASL, the
// logger, and cfg.Tuning over weir's defaults. It is the franz-go
// counterpart of [Config.saramaConfig]: the producer, the readers, the
// consumer group and the transactional session each add their own options
// after these (later options win). Errors wrap [ErrConfig].
//
// weir's defaults differ from kgo's where kgo's would change what weir
// writes or how long it waits:
//
//   - compression none unless Tuning.Compression says otherwise (kgo
//     prefers snappy);
//   - no linger unless Tuning.Linger sets one (kgo lingers 10 ms);
//   - the largest batch sent to one partition is Tuning.MessageBytes
//     ([MaxMessageBytes] by default), as with sarama;
//   - max.partition.fetch.bytes [DefaultMaxPartitionFetchBytes] and
//     fetch.max.wait [DefaultFetchMaxWait] (kgo waits 5 s);
//   - no KIP-714 client metrics pushed to the brokers: weir reads none,
//     and the sarama clients' metrics are off too (nilRegistry);
//   - metadata refreshed at most every [FranzMetadataMinAge] rather than
//     5 s: kgo retries a partition whose leader refused a request
//     (NOT_LEADER, a broker restarting) after a metadata refresh, and
//     with 5 s between refreshes three refusals in a row held a
//     partition's records for 15 s, where Kafka's Java client backs off
//     100 ms to 1 s (retry.backoff.ms, retry.backoff.max.ms).
//
// Topics are never created by a metadata request: that is kgo's default,
// and weir creates them explicitly (Admin.EnsureTopics) with the partition
// count the topology needs.
//
// Tuning.BatchSize plays no part on franz-go: sarama's Flush.Bytes ends a
// linger once a broker's request holds that many bytes, and kgo has no
// such bound — it ends a partition's linger once the partition's batch is
// full (Tuning.MaxRequestSize), and a smaller batch bound would fail
// records larger than it.
func FranzOpts(cfg Config) ([]kgo.Opt, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	id := cfg.ClientID
	if id == "" {
		id = "weir"
	}
	t := cfg.Tuning
	opts := []kgo.Opt{
		kgo.SeedBrokers(cfg.Brokers...),
		kgo.ClientID(id),
		kgo.WithLogger(slogLogger{cfg.logger()}),
		kgo.DisableClientMetrics(),
		kgo.MetadataMinAge(FranzMetadataMinAge),
		kgo.ProducerBatchCompression(franzCompression(t.Compression, t.CompressionLevel)),
		kgo.ProducerLinger(t.Linger),
		kgo.ProducerBatchMaxBytes(int32(t.MessageBytes())),
		kgo.FetchMaxWait(DefaultFetchMaxWait),
		kgo.FetchMaxPartitionBytes(DefaultMaxPartitionFetchBytes),
	}
	if t.FetchMinBytes > 0 {
		opts = append(opts, kgo.FetchMinBytes(t.FetchMinBytes))
	}
	if t.FetchMaxWait > 0 {
		opts = append(opts, kgo.FetchMaxWait(t.FetchMaxWait))
	}
	if t.MaxPartitionFetchBytes > 0 {
		opts = append(opts, kgo.FetchMaxPartitionBytes(t.MaxPartitionFetchBytes))
	}
	if cfg.TLS != nil {
		opts = append(opts, kgo.DialTLSConfig(cfg.TLS.Clone()))
	}
	if s := cfg.SASL; s != nil {
		switch s.Mechanism {
		case SASLPlain:
			opts = append(opts, kgo.SASL(plain.Auth{User: s.User, Pass: s.Password}.AsMechanism()))
		case SASLScramSHA256:
			opts = append(opts, kgo.SASL(scram.Auth{User: s.User, Pass: s.Password}.AsSha256Mechanism()))
		case SASLScramSHA512:
			opts = append(opts, kgo.SASL(scram.Auth{User: s.User, Pass: s.Password}.AsSha512Mechanism()))
		}
	}
	return opts, nil
}

// FranzMetadataMinAge is the least time between two metadata requests of
// a franz-go client of weir (kgo's MetadataMinAge; see [FranzOpts]).
const FranzMetadataMinAge = 250 * time.Millisecond

// franzCompression is the kgo codec of a valid compression.type and level
// ([CheckCompression]).
func franzCompression(codec string, level int) kgo.CompressionCodec {
	switch codec {
	case CompressionGZIP:
		c := kgo.GzipCompression()
		if level != 0 {
			c = c.WithLevel(level)
		}
		return c
	case CompressionSnappy:
		return kgo.SnappyCompression()
	case CompressionLZ4:
		return kgo.Lz4Compression()
	case CompressionZSTD:
		c := kgo.ZstdCompression()
		if level != 0 {
			c = c.WithLevel(zstdSpeed(level))
		}
		return c
	}
	return kgo.NoCompression()
}

// zstdSpeed maps a zstd compression level (Kafka's
// compression.zstd.level) to the speed of the encoder both clients use
// (klauspost/compress's EncoderLevel, as its EncoderLevelFromZstd does and
// sarama applies): below 3 fastest (1), below 6 default (2), below 10
// better (3), else best (4). kgo takes the encoder's speed, not the level.
func zstdSpeed(level int) int {
	switch {
	case level < 3:
		return 1
	case level < 6:
		return 2
	case level < 10:
		return 3
	}
	return 4
}

// slogLogger carries kgo's log lines to a Config's slog.Logger. kgo's info
// lines (a connection opened, a metadata refresh) are routine and go to
// debug; its warnings and errors keep their level.
type slogLogger struct{ l *slog.Logger }

var _ kgo.Logger = slogLogger{}

func franzLevel(level kgo.LogLevel) slog.Level {
	switch level {
	case kgo.LogLevelError:
		return slog.LevelError
	case kgo.LogLevelWarn:
		return slog.LevelWarn
	case kgo.LogLevelInfo:
		return slog.LevelDebug
	}
	return slog.LevelDebug - 4
}

// Level implements kgo.Logger: the most verbose of kgo's levels the
// slog.Logger takes, so that kgo does not build lines no one reads.
func (s slogLogger) Level() kgo.LogLevel {
	ctx := context.Background()
	for _, l := range []kgo.LogLevel{kgo.LogLevelDebug, kgo.LogLevelInfo, kgo.LogLevelWarn, kgo.LogLevelError} {
		if s.l.Enabled(ctx, franzLevel(l)) {
			return l
		}
	}
	return kgo.LogLevelNone
}

// Log implements kgo.Logger.
func (s slogLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	s.l.Log(context.Background(), franzLevel(level), "kafka: franz-go: "+msg, keyvals...)
}
