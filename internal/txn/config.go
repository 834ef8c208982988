package txn

import (
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/IBM/sarama"

	"github.com/weirstream/weir/internal/kafka"
)

// protocolVersion is the Kafka protocol version of the transactional
// producer. It must be at least 2.5: from there sarama sends TxnOffsetCommit
// v3, which carries the group metadata (KIP-447), and InitProducerId v3+,
// which can bump the epoch of an existing producer id (KIP-360). 4.3.1 is the
// newest sarama v1.61.1 knows; Kafka 4.4 and kfake serve it.
//
// internal/kafka keeps its own constant (2.5) for the consumer side; the two
// need not match, but one exported constant there would be better.
var protocolVersion = sarama.V4_3_1_0

// Defaults of [Config].
const (
	// DefaultSessionTimeout is the consumer group session timeout assumed
	// when Config.SessionTimeout is zero: kafka.GroupConfig's default.
	DefaultSessionTimeout = kafka.DefaultSessionTimeout
	// DefaultTransactionTimeout is the transaction timeout when
	// Config.TransactionTimeout is zero and the session timeout allows it
	// (Kafka Streams uses the same under exactly-once).
	DefaultTransactionTimeout = 10 * time.Second
	// DefaultRequestTimeout is how long the producer waits for a broker's
	// answer when Config.RequestTimeout is zero.
	DefaultRequestTimeout = 30 * time.Second
)

// Config configures a [Session]. It is a value; share it freely as long as
// no one mutates it.
type Config struct {
	// Kafka says how to reach the cluster: TLS, and SASL PLAIN,
	// SCRAM-SHA-256 or SCRAM-SHA-512 (kafka.Config.ApplySecurity, the same
	// as every other client of weir).
	Kafka kafka.Config

	// TransactionalID identifies the producer across restarts:
	// "<application>-<instance id>" (see [LoadOrCreateInstanceID]), or
	// "<application>-<instance id>-<worker>" with one producer per worker.
	// Required. A new Session with the same id fences every older one.
	TransactionalID string

	// TransactionTimeout is how long the broker lets a transaction stay
	// open before it aborts it (and fences the producer: its next request
	// fails with ErrFenced). It must be below SessionTimeout, so that a
	// member that dies mid-transaction has its transaction aborted before
	// or about when its partitions move. Zero means
	// DefaultTransactionTimeout, or half of SessionTimeout if that is
	// shorter. The broker caps it (transaction.max.timeout.ms, 15 min).
	TransactionTimeout time.Duration

	// SessionTimeout is the session timeout of the consumer group whose
	// offsets the transactions commit; zero means DefaultSessionTimeout.
	// It is only used to validate TransactionTimeout.
	SessionTimeout time.Duration

	// RequestTimeout bounds the wait for a broker's answer to one request
	// (sarama's Net.ReadTimeout); zero means DefaultRequestTimeout. A
	// transactional request that times out has an unknown outcome:
	// [ErrIndefinite].
	RequestTimeout time.Duration

	// Logger receives the session's log lines; Kafka.Logger if nil, then
	// slog.Default().
	Logger *slog.Logger

	// Test knobs, set through export_test.go only.
	txnRetryMax     int           // sarama's Transaction.Retry.Max; 0: 10
	txnRetryBackoff time.Duration // the cap of txnBackoff; 0: 100 ms
	noReinit        bool          // never re-create the producer after a connection failure
	serialOffsets   bool          // franz-go: send the offsets only once every record has its outcome
}

// withDefaults fills the zero fields.
func (c Config) withDefaults() Config {
	if c.SessionTimeout == 0 {
		c.SessionTimeout = DefaultSessionTimeout
	}
	if c.TransactionTimeout == 0 {
		c.TransactionTimeout = min(DefaultTransactionTimeout, c.SessionTimeout/2)
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.Logger == nil {
		c.Logger = c.Kafka.Logger
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.txnRetryMax == 0 {
		c.txnRetryMax = 10
	}
	if c.txnRetryBackoff == 0 {
		c.txnRetryBackoff = 100 * time.Millisecond
	}
	return c
}

// Validate reports whether the configuration can be used (after defaults).
// Errors wrap [ErrConfig].
func (c Config) Validate() error {
	if err := c.Kafka.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if c.TransactionalID == "" {
		return fmt.Errorf("%w: empty transactional id", ErrConfig)
	}
	if c.TransactionTimeout < 0 || c.SessionTimeout < 0 || c.RequestTimeout < 0 {
		return fmt.Errorf("%w: negative timeout", ErrConfig)
	}
	c = c.withDefaults()
	if c.TransactionTimeout < time.Millisecond || c.TransactionTimeout.Milliseconds() > math.MaxInt32 {
		return fmt.Errorf("%w: transaction timeout %v out of range", ErrConfig, c.TransactionTimeout)
	}
	if c.TransactionTimeout >= c.SessionTimeout {
		return fmt.Errorf("%w: transaction timeout %v is not below the group session timeout %v",
			ErrConfig, c.TransactionTimeout, c.SessionTimeout)
	}
	if c.RequestTimeout < 10*time.Millisecond {
		return fmt.Errorf("%w: request timeout %v below 10ms", ErrConfig, c.RequestTimeout)
	}
	_, err := c.saramaConfig(newConnWatch()) // what sarama itself checks
	return err
}

// saramaConfig builds a transactional producer's sarama configuration (a
// new one per producer: sarama's metrics registry lives in it); dialer
// watches its connections. c has its defaults.
func (c Config) saramaConfig(dialer *connWatch) (*sarama.Config, error) {
	sc := sarama.NewConfig()
	sc.Version = protocolVersion
	sc.ClientID = c.Kafka.ClientID
	if sc.ClientID == "" {
		sc.ClientID = "weir"
	}
	// Topics are created explicitly with the partition count the topology
	// needs; a metadata request must never create one behind weir's back.
	sc.Metadata.AllowAutoTopicCreation = false
	sc.Metadata.Full = false
	sc.Metadata.Retry.Backoff = 100 * time.Millisecond
	sc.Metadata.Retry.Max = 5

	sc.Net.ReadTimeout = c.RequestTimeout
	sc.Net.WriteTimeout = c.RequestTimeout
	// sarama dials through Net.Proxy.Dialer when set; TLS is layered on
	// top, so the watch sees every byte-level failure (see connWatch).
	sc.Net.Proxy.Enable = true
	sc.Net.Proxy.Dialer = dialer
	c.Kafka.ApplySecurity(sc)
	c.Kafka.ApplyTuning(sc) // no sarama metrics; compression, linger, fetch sizes

	// Idempotence: acks=all and one request in flight per connection, so
	// retries neither duplicate nor reorder (sarama's Validate insists).
	sc.Net.MaxOpenRequests = 1
	sc.Producer.Idempotent = true
	sc.Producer.RequiredAcks = sarama.WaitForAll
	sc.Producer.Timeout = min(10*time.Second, (c.RequestTimeout * 2 / 3).Truncate(time.Millisecond))
	// Ride out a short leader election (kafka.TransactionalProducerRetries).
	sc.Producer.Retry.Max = kafka.TransactionalProducerRetries
	sc.Producer.Retry.BackoffFunc = kafka.ProducerBackoff
	sc.Producer.Return.Successes = true
	sc.Producer.Return.Errors = true
	sc.Producer.MaxMessageBytes = c.Kafka.Tuning.MessageBytes()
	sc.Producer.Partitioner = kafka.NewKeyPartitioner

	sc.Producer.Transaction.ID = c.TransactionalID
	sc.Producer.Transaction.Timeout = c.TransactionTimeout
	// sarama retries the transactional requests (InitProducerId,
	// AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn) this
	// often on retriable errors and on network errors; Session retries
	// further, bounded by ctx, on retriable errors only.
	sc.Producer.Transaction.Retry.Max = c.txnRetryMax
	sc.Producer.Transaction.Retry.BackoffFunc = c.txnBackoff

	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return sc, nil
}

// firstTxnBackoff is the wait before sarama's first retry of a
// transactional request (txnBackoff).
const firstTxnBackoff = 10 * time.Millisecond

// txnBackoff is the wait before sarama's retry number retries (from 0) of
// a transactional request: firstTxnBackoff doubling to txnRetryBackoff
// (100 ms). The refusal it usually waits out is CONCURRENT_TRANSACTIONS:
// a transaction's first AddPartitionsToTxn or AddOffsetsToTxn, sent right
// after the last transaction's EndTxn returned, reaches the coordinator
// before the last one's markers are written (a few ms). With sarama's
// flat 100 ms each such transaction began 100 ms late; the Java producer
// retries after 20 ms for the same reason (KAFKA-5477), franz-go too.
func (c Config) txnBackoff(retries, _ int) time.Duration {
	return min(firstTxnBackoff<<min(max(retries, 0), 5), c.txnRetryBackoff)
}
