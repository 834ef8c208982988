package weir

import (
	"time"

	"github.com/weirstream/weir/internal/kafka"
)

// The Kafka client options: producer and consumer settings in Kafka's
// vocabulary, applied to every client weir creates — the consumer group,
// the at-least-once producer, the transactional producers of exactly-once,
// and the admin client with its changelog restore reader. Each has weir's
// default when not given (or given 0); New rejects a value out of its
// bounds. There is deliberately no pass-through of arbitrary client
// properties: weir runs on either of two client libraries (WithKafkaClient),
// whose settings are not Kafka's and not each other's, and some Kafka
// settings (acks, enable.idempotence, isolation.level,
// transactional.id) are fixed by the processing guarantee.

// Compression types for WithCompression (Kafka's compression.type values).
const (
	CompressionNone   = kafka.CompressionNone
	CompressionGZIP   = kafka.CompressionGZIP
	CompressionSnappy = kafka.CompressionSnappy
	CompressionLZ4    = kafka.CompressionLZ4
	CompressionZSTD   = kafka.CompressionZSTD
)

// WithCompression sets the compression of every record batch weir
// produces — outputs, repartition and changelog records, dead letters
// (Kafka's compression.type): CompressionNone (the default), "gzip",
// "snappy", "lz4" or "zstd". Compression costs the producer CPU and saves
// network, broker disk and broker CPU; with small records on a busy
// broker lz4 usually wins (see bench/README.md for figures). New rejects
// another value.
func WithCompression(codec string) Option {
	return func(c *config) { c.kafkaTuning.Compression = codec }
}

// WithCompressionLevel sets the level of WithCompression's codec (Kafka's
// compression.gzip.level and compression.zstd.level): gzip 1–9, zstd
// -131072–22 (negative levels are faster). Default (and for 0): the
// codec's default. New rejects a level out of those bounds, and any level
// with none, snappy or lz4, which have no levels in weir's client.
func WithCompressionLevel(level int) Option {
	return func(c *config) { c.kafkaTuning.CompressionLevel = level }
}

// WithLinger lets the producers hold records up to d to send fuller
// requests (Kafka's linger.ms). Default (and for 0): an adaptive linger —
// a producer holds records up to 5 ms only while it is given 20,000 or
// more a second, and hands them over at once when it must deliver them (a
// flush, a commit); below that rate a request leaves as soon as the
// previous one to the broker is answered (docs/kafka.md). A fixed linger
// adds up to d to a record's latency where the broker answers fast, and
// delays every commit by up to d (a commit waits for its outputs; the
// continuous mode's commits run behind processing). New accepts 1 ms to
// 10 s.
func WithLinger(d time.Duration) Option {
	return func(c *config) { c.kafkaTuning.Linger = d }
}

// WithBatchSize sets, with WithLinger, the bytes buffered for one broker
// that send a request before the linger expires (Kafka's batch.size, which
// counts one partition's batch where weir's client counts a broker's
// request). Default (and for 0): 1 MiB. Without a linger it plays no part.
// New accepts 1 byte to 100 MiB.
func WithBatchSize(bytes int) Option {
	return func(c *config) { c.kafkaTuning.BatchSize = bytes }
}

// WithMaxRequestSize sets the largest record batch a producer sends to one
// partition (Kafka's max.request.size). Default (and for 0): 1 MiB.
// Raising it only pays with the topics' max.message.bytes raised too; one
// record stays limited to 1,048,527 bytes, what the broker's default
// max.message.bytes accepts. New accepts 1 MiB to 100 MiB.
func WithMaxRequestSize(bytes int) Option {
	return func(c *config) { c.kafkaTuning.MaxRequestSize = bytes }
}

// WithFetchMinBytes sets the bytes a fetch waits for, up to WithFetchMaxWait,
// before the broker answers (Kafka's fetch.min.bytes). Default (and for 0):
// 1 — answer as soon as anything is there, which the continuous mode's
// latency needs; a larger value trades latency for fewer, fuller fetches.
// New accepts 1 byte to 100 MiB.
func WithFetchMinBytes(bytes int32) Option {
	return func(c *config) { c.kafkaTuning.FetchMinBytes = bytes }
}

// WithMaxPartitionFetchBytes sets the bytes asked per partition and fetch
// (Kafka's max.partition.fetch.bytes), by the consumer group and by the
// changelog restore reader. Default (and for 0): 1 MiB for the group, 4 MiB
// for restores. A record batch larger than it is still fetched whole. New
// accepts 1 KiB to 100 MiB. (Kafka's fetch.max.bytes, the bound on a whole
// response, has no per-client counterpart in weir's client: it is 100 MiB.)
func WithMaxPartitionFetchBytes(bytes int32) Option {
	return func(c *config) { c.kafkaTuning.MaxPartitionFetchBytes = bytes }
}

// WithFetchMaxWait sets how long the broker may hold the consumer group's
// fetch when it has less than WithFetchMinBytes (Kafka's
// fetch.max.wait.ms). Default (and for 0): 100 ms — Kafka's 500 ms makes
// rebalances slower, because weir's client queues metadata requests behind
// a held fetch. Data that arrives ends the wait at once. New accepts 1 ms
// to 10 s.
func WithFetchMaxWait(d time.Duration) Option {
	return func(c *config) { c.kafkaTuning.FetchMaxWait = d }
}

// KafkaClient names the Kafka client library weir's connections run on.
// It is a name, not a client's type: no client's types appear in weir's
// API, and an application changes client by changing this option alone.
type KafkaClient string

// The Kafka clients weir runs on (docs/kafka.md compares them).
const (
	// KafkaClientSarama is github.com/IBM/sarama, the design's client.
	KafkaClientSarama KafkaClient = KafkaClient(kafka.ClientSarama)
	// KafkaClientFranzGo is github.com/twmb/franz-go, the default.
	KafkaClientFranzGo KafkaClient = KafkaClient(kafka.ClientFranz)
)

// WithKafkaClient picks the client library under weir's Kafka connections.
// Without it the environment variable WEIR_KAFKA_CLIENT ("sarama" or
// "franz-go") decides, then weir's default, KafkaClientFranzGo. New rejects
// another name. Behaviour and guarantees are the same on either: the
// engines see only weir's own types.
func WithKafkaClient(client KafkaClient) Option {
	return func(c *config) { c.kafkaClient = kafka.Client(client) }
}

// validateKafka reports the Kafka client options' problems to bad.
func (c *config) validateKafka(bad func(format string, a ...any)) {
	if _, err := kafka.ResolveClient(c.kafkaClient); err != nil {
		bad("WithKafkaClient: %w", err)
	}
	t := c.kafkaTuning
	if err := kafka.CheckCompression(t.Compression, 0); err != nil {
		bad("WithCompression: %w", err)
	} else if err := kafka.CheckCompression(t.Compression, t.CompressionLevel); err != nil {
		bad("WithCompressionLevel: %w", err)
	}
	checks := []struct {
		option string
		err    error
	}{
		{"WithLinger", kafka.CheckDuration("linger", t.Linger, time.Millisecond, kafka.MaxLinger)},
		{"WithBatchSize", kafka.CheckBytes("batch size", int64(t.BatchSize), 1)},
		{"WithMaxRequestSize", kafka.CheckBytes("max request size", int64(t.MaxRequestSize), kafka.MaxMessageBytes)},
		{"WithFetchMinBytes", kafka.CheckBytes("fetch min bytes", int64(t.FetchMinBytes), 1)},
		{"WithMaxPartitionFetchBytes", kafka.CheckBytes("max partition fetch bytes", int64(t.MaxPartitionFetchBytes), kafka.MinMaxPartitionFetchBytes)},
		{"WithFetchMaxWait", kafka.CheckDuration("fetch max wait", t.FetchMaxWait, time.Millisecond, kafka.MaxFetchMaxWait)},
	}
	for _, ch := range checks {
		if ch.err != nil {
			bad(ch.option+": %w", ch.err)
		}
	}
}
