package kafka

import (
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// FranzOpts returns the franz-go (kgo) options every franz-go client of
// weir shares, from cfg: the seed brokers and client id, TLS, SASL (PLAIN,
// SCRAM-SHA-256, SCRAM-SHA-512; franz-go's own SCRAM client), and
// [Tuning]'s producer and fetch settings. Each client adds its own part
// (transactional id, consumer group, acks). Topics are never created by a
// metadata request (kgo's default). Errors wrap [ErrConfig].
func FranzOpts(cfg Config) ([]kgo.Opt, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	id := cfg.ClientID
	if id == "" {
		id = "weir"
	}
	opts := []kgo.Opt{kgo.SeedBrokers(cfg.Brokers...), kgo.ClientID(id)}
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
	return append(opts, franzTuning(cfg.Tuning)...), nil
}

// franzTuning maps t (valid) to kgo options. kgo batches per partition:
// a batch goes out when it reaches ProducerBatchMaxBytes or its linger
// ends, so max.request.size bounds a batch, and with a Linger the batch
// size, if smaller, sends it early (Kafka's batch.size).
func franzTuning(t Tuning) []kgo.Opt {
	var opts []kgo.Opt
	codec := kgo.NoCompression()
	switch t.Compression {
	case CompressionGZIP:
		codec = kgo.GzipCompression()
	case CompressionSnappy:
		codec = kgo.SnappyCompression()
	case CompressionLZ4:
		codec = kgo.Lz4Compression()
	case CompressionZSTD:
		codec = kgo.ZstdCompression()
	}
	if t.CompressionLevel != 0 {
		codec = codec.WithLevel(t.CompressionLevel)
	}
	opts = append(opts, kgo.ProducerBatchCompression(codec))
	// kgo lingers 10 ms by default; weir's zero Linger sends at once.
	opts = append(opts, kgo.ProducerLinger(t.Linger))
	batch := t.MessageBytes()
	if t.Linger > 0 && t.BatchSize > 0 {
		batch = min(batch, t.BatchSize)
	}
	opts = append(opts, kgo.ProducerBatchMaxBytes(int32(batch)))
	if t.FetchMinBytes > 0 {
		opts = append(opts, kgo.FetchMinBytes(t.FetchMinBytes))
	}
	if t.MaxPartitionFetchBytes > 0 {
		opts = append(opts, kgo.FetchMaxPartitionBytes(t.MaxPartitionFetchBytes))
	}
	if t.FetchMaxWait > 0 {
		opts = append(opts, kgo.FetchMaxWait(t.FetchMaxWait))
	}
	return opts
}
