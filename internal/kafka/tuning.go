package kafka

import (
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"
)

// Tuning holds the producer and consumer settings, in Kafka's vocabulary,
// that users of weir may change. The zero value is weir's defaults. It is
// applied to every sarama client weir creates: the admin (and so the
// changelog restore reader), the at-least-once producer, the consumer
// group, and the transactional producers of internal/txn
// ([Config.ApplyTuning]).
type Tuning struct {
	// Compression is compression.type: "none" (the default, also for ""),
	// "gzip", "snappy", "lz4" or "zstd".
	Compression string
	// CompressionLevel is compression.gzip.level (1–9) or
	// compression.zstd.level (-131072–22, negative levels are faster);
	// zero takes the codec's default. sarama has no levels for lz4 and
	// snappy, so a level with them (or with none) is invalid.
	CompressionLevel int
	// Linger is linger.ms: how long a producer may hold records to send
	// them in a fuller request. Zero (the default) sends as soon as the
	// previous request to the broker is answered, which batches by itself
	// under load and adds no latency — except that the producers (the
	// at-least-once Producer, internal/txn's Session) then linger by
	// themselves while they are loaded (AdaptiveLinger).
	Linger time.Duration
	// BatchSize is, with a Linger, the bytes buffered for one broker that
	// send a request before the linger expires (sarama's Flush.Bytes: a
	// broker's request, where Kafka's batch.size is one partition's
	// batch). Zero means DefaultBatchSize. Without a Linger it plays no
	// part.
	BatchSize int
	// MaxRequestSize is max.request.size: the largest record batch a
	// producer sends to one partition (sarama's Producer.MaxMessageBytes).
	// Zero means [MaxMessageBytes]. Raising it needs the topics'
	// max.message.bytes raised too; single records stay bounded by
	// [MaxRecordBytes].
	MaxRequestSize int
	// FetchMinBytes is fetch.min.bytes: the bytes a fetch waits for (up to
	// FetchMaxWait) before the broker answers. Zero means 1.
	FetchMinBytes int32
	// MaxPartitionFetchBytes is max.partition.fetch.bytes: the bytes
	// asked per partition and fetch. Zero means
	// DefaultMaxPartitionFetchBytes for the group's consumer and
	// readFetchBytes for the restore reader.
	MaxPartitionFetchBytes int32
	// FetchMaxWait is fetch.max.wait.ms for the consumer group when
	// GroupConfig.FetchMaxWait is zero. Zero means DefaultFetchMaxWait.
	FetchMaxWait time.Duration
}

// Compression types accepted by [Tuning].Compression (Kafka's
// compression.type values).
const (
	CompressionNone   = "none"
	CompressionGZIP   = "gzip"
	CompressionSnappy = "snappy"
	CompressionLZ4    = "lz4"
	CompressionZSTD   = "zstd"
)

// Defaults and bounds of [Tuning].
const (
	// DefaultBatchSize is Tuning.BatchSize when none is set.
	DefaultBatchSize = 1 << 20
	// DefaultMaxPartitionFetchBytes is the consumer group's
	// max.partition.fetch.bytes when none is set (Kafka's default).
	DefaultMaxPartitionFetchBytes = 1 << 20
	// MaxLinger bounds Tuning.Linger: a longer one holds every epoch end
	// of the continuous mode as long.
	MaxLinger = 10 * time.Second
	// MaxFetchBytes bounds BatchSize, MaxRequestSize, FetchMinBytes and
	// MaxPartitionFetchBytes: sarama's limit on a whole request or
	// response (sarama.MaxRequestSize, sarama.MaxResponseSize).
	MaxFetchBytes = 100 << 20
	// MinMaxPartitionFetchBytes is the least MaxPartitionFetchBytes.
	MinMaxPartitionFetchBytes = 1 << 10
	// MaxFetchMaxWait bounds FetchMaxWait: a fetch the broker holds longer
	// would outlast sarama's read timeout (30 s) on a loaded broker, and
	// metadata requests queue behind it on the fetch connection.
	MaxFetchMaxWait = 10 * time.Second
)

// CheckCompression reports whether codec and level are a valid
// compression.type and level (see [Tuning]). Errors wrap [ErrConfig].
func CheckCompression(codec string, level int) error {
	switch codec {
	case "", CompressionNone, CompressionSnappy, CompressionLZ4:
		if level != 0 {
			return fmt.Errorf("%w: compression level %d with compression %q, which has no levels (gzip and zstd do)", ErrConfig, level, codecName(codec))
		}
	case CompressionGZIP:
		if level != 0 && (level < 1 || level > 9) {
			return fmt.Errorf("%w: gzip compression level %d is not within 1 and 9", ErrConfig, level)
		}
	case CompressionZSTD:
		if level < -131072 || level > 22 {
			return fmt.Errorf("%w: zstd compression level %d is not within -131072 and 22", ErrConfig, level)
		}
	default:
		return fmt.Errorf("%w: compression %q is not none, gzip, snappy, lz4 or zstd", ErrConfig, codec)
	}
	return nil
}

func codecName(codec string) string {
	if codec == "" {
		return CompressionNone
	}
	return codec
}

// CheckBytes reports whether n, the value of the byte setting named
// setting, is zero (the default) or within lo and [MaxFetchBytes].
func CheckBytes(setting string, n int64, lo int64) error {
	if n != 0 && (n < lo || n > MaxFetchBytes) {
		return fmt.Errorf("%w: %s %d is not within %d and %d", ErrConfig, setting, n, lo, MaxFetchBytes)
	}
	return nil
}

// CheckDuration reports whether d, the value of the setting named
// setting, is zero (the default) or within lo and hi.
func CheckDuration(setting string, d, lo, hi time.Duration) error {
	if d != 0 && (d < lo || d > hi) {
		return fmt.Errorf("%w: %s %v is not within %v and %v", ErrConfig, setting, d, lo, hi)
	}
	return nil
}

// Validate reports every invalid setting of t. Errors wrap [ErrConfig].
func (t Tuning) Validate() error {
	return errors.Join(
		CheckCompression(t.Compression, t.CompressionLevel),
		CheckDuration("linger", t.Linger, time.Millisecond, MaxLinger),
		CheckBytes("batch size", int64(t.BatchSize), 1),
		CheckBytes("max request size", int64(t.MaxRequestSize), MaxMessageBytes),
		CheckBytes("fetch min bytes", int64(t.FetchMinBytes), 1),
		CheckBytes("max partition fetch bytes", int64(t.MaxPartitionFetchBytes), MinMaxPartitionFetchBytes),
		CheckDuration("fetch max wait", t.FetchMaxWait, time.Millisecond, MaxFetchMaxWait),
	)
}

// ApplyTuning sets in sc what every weir client shares — no go-metrics
// registry — and c.Tuning's producer and
// consumer settings, over weir's defaults (a producer's MaxMessageBytes
// is [Tuning.MessageBytes]). c must be valid.
func (c Config) ApplyTuning(sc *sarama.Config) {
	// weir reads none of sarama's metrics (its own are in internal/metrics),
	// and by default each client updates meters and histograms on every
	// request and response; a registry per client keeps the user's other
	// sarama clients (and go-metrics' global switch) untouched.
	sc.MetricRegistry = nilRegistry{}
	// sarama's ChannelBufferSize stays 256: 1,024 showed no CPU or
	// throughput difference in the benchmark (bench/README.md).
	t := c.Tuning
	switch t.Compression {
	case CompressionGZIP:
		sc.Producer.Compression = sarama.CompressionGZIP
	case CompressionSnappy:
		sc.Producer.Compression = sarama.CompressionSnappy
	case CompressionLZ4:
		sc.Producer.Compression = sarama.CompressionLZ4
	case CompressionZSTD:
		sc.Producer.Compression = sarama.CompressionZSTD
	}
	if t.CompressionLevel != 0 {
		sc.Producer.CompressionLevel = t.CompressionLevel
	}
	if t.Linger > 0 {
		sc.Producer.Flush.Frequency = t.Linger
		sc.Producer.Flush.Bytes = DefaultBatchSize
		if t.BatchSize > 0 {
			sc.Producer.Flush.Bytes = t.BatchSize
		}
	}
	if t.FetchMinBytes > 0 {
		sc.Consumer.Fetch.Min = t.FetchMinBytes
	}
	sc.Consumer.Fetch.Default = DefaultMaxPartitionFetchBytes
	if t.MaxPartitionFetchBytes > 0 {
		sc.Consumer.Fetch.Default = t.MaxPartitionFetchBytes
	}
}

// MessageBytes is a producer's sarama Producer.MaxMessageBytes:
// MaxRequestSize, or [MaxMessageBytes] by default.
func (t Tuning) MessageBytes() int {
	if t.MaxRequestSize > 0 {
		return t.MaxRequestSize
	}
	return MaxMessageBytes
}
