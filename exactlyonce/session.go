package exactlyonce

import (
	"context"
	"crypto/tls"
	"log/slog"
	"strconv"
	"time"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/txn"
)

// Defaults of [Config].
const (
	// DefaultSessionTimeout is the consumer group session timeout assumed
	// when Config.SessionTimeout is zero: Kafka's default, and weir's.
	DefaultSessionTimeout = txn.DefaultSessionTimeout
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
	// Brokers are the bootstrap addresses, host:port. Required.
	Brokers []string
	// ClientID names the client in broker logs and quotas; "weir" if
	// empty.
	ClientID string
	// TLS, if not nil, encrypts the connections with this configuration.
	TLS *tls.Config
	// SASL, if not nil, authenticates the connections.
	SASL *SASL

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

	// RequestTimeout bounds the wait for a broker's answer to one request;
	// zero means DefaultRequestTimeout, and below 10 ms is invalid. A
	// transactional request that times out has an unknown outcome:
	// [ErrIndefinite].
	RequestTimeout time.Duration

	// Logger receives the session's log lines; slog.Default() if nil.
	Logger *slog.Logger
}

// SASL is SASL authentication: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.
type SASL struct {
	// Mechanism is "PLAIN", "SCRAM-SHA-256" or "SCRAM-SHA-512"; empty
	// means "PLAIN".
	Mechanism string
	// User is the SASL user name.
	User string
	// Password is the SASL password.
	Password string
}

// Validate reports whether the configuration can be used (after
// defaults). Errors wrap [ErrConfig].
func (c Config) Validate() error { return public(c.internal().Validate()) }

// internal converts c for package txn.
func (c Config) internal() txn.Config {
	kc := kafka.Config{Brokers: c.Brokers, ClientID: c.ClientID, TLS: c.TLS, Logger: c.Logger}
	if c.SASL != nil {
		mech := c.SASL.Mechanism
		if mech == "" {
			mech = kafka.SASLPlain
		}
		kc.SASL = &kafka.SASL{Mechanism: mech, User: c.SASL.User, Password: c.SASL.Password}
	}
	return txn.Config{
		Kafka:              kc,
		TransactionalID:    c.TransactionalID,
		TransactionTimeout: c.TransactionTimeout,
		SessionTimeout:     c.SessionTimeout,
		RequestTimeout:     c.RequestTimeout,
		Logger:             c.Logger,
	}
}

// PartitionByKey, as a Record's Partition, partitions by key like Kafka's
// Java client (murmur2 of the key; round robin for a nil key).
const PartitionByKey int32 = -1

// Record is a record to produce.
type Record struct {
	// Topic of the record. Required.
	Topic string
	// Partition of the record: used as is when >= 0; PartitionByKey (or
	// any negative value) partitions by key.
	Partition int32
	// Key; nil is a null key.
	Key []byte
	// Value; nil is a null value (a tombstone in a compacted topic).
	Value []byte
	// Headers in order.
	Headers []Header
	// Timestamp of the record; the zero time lets the producer set it.
	Timestamp time.Time
}

// Header is a record header.
type Header struct {
	Key   string
	Value []byte
}

// GroupMetadata is what the broker checks of the consumer group member
// whose offsets a transaction commits (KIP-447): read it from the live
// member just before Commit, so that a member whose generation is over
// cannot commit. Generation -1 with no member id commits without the
// member check, for a group that no member consumes in (as a standalone
// consumer commits).
type GroupMetadata struct {
	// GroupID is the consumer group. Required when there are offsets.
	GroupID string
	// GenerationID is the generation the member is in.
	GenerationID int32
	// MemberID is the member's id in the group.
	MemberID string
	// InstanceID is the static membership id, "" if none.
	InstanceID string
}

// TopicPartition names one partition of a Kafka topic; it is comparable,
// a map key. It has the shape of offsets.TopicPartition, so a value
// converts with a type conversion.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// String returns "topic-partition", as Kafka prints a partition.
func (tp TopicPartition) String() string {
	return tp.Topic + "-" + strconv.FormatInt(int64(tp.Partition), 10)
}

// Session is a transactional producer: one transactional id, one
// transaction at a time. See the package documentation for the protocol.
//
// Begin, Commit, Abort, Reset and Close are meant for one goroutine at a
// time and are serialized if called concurrently (Close waits for a
// running Commit). Send may be called from many goroutines at once between
// Begin and Commit or Abort; a Send racing with Commit either joins the
// transaction or fails with ErrNoTransaction.
type Session struct{ s *txn.Session }

// New validates cfg and initializes the producer: InitProducerId bumps
// the transactional id's epoch, which fences every older producer with the
// same id and aborts (or, if it was committing, completes) the transaction
// it left open. Coordinator errors are retried until ctx ends.
//
// Errors: ErrConfig for an invalid cfg; an [*Error] of kind ErrIndefinite
// when ctx ends first, ErrFatal when the broker refuses the producer (an
// authorization failure, an invalid transaction timeout).
func New(ctx context.Context, cfg Config) (*Session, error) {
	s, err := txn.New(ctx, cfg.internal())
	if err != nil {
		return nil, public(err)
	}
	return &Session{s: s}, nil
}

// TransactionalID returns the session's transactional id.
func (s *Session) TransactionalID() string { return s.s.TransactionalID() }

// Begin opens a transaction. Before it, if the previous transaction saw a
// connection fail (see the package documentation), it re-initializes the
// producer, bounded by ctx; otherwise it does no I/O.
//
// Errors: ErrTransactionOpen while a transaction is open, ErrClosed, the
// [*Error] that left the session needing Reset, or an [*Error] of the
// re-initialization.
func (s *Session) Begin(ctx context.Context) error { return public(s.s.Begin(ctx)) }

// Send hands r to the open transaction and returns; delivery is
// asynchronous, and Commit waits for it. While Sends come fast (20,000 or
// more a second) the session holds records up to 5 ms to send fuller
// requests, and Commit hands what it holds over at once; Abort drops it.
//
// Send fails fast once the transaction has failed (a record was rejected,
// the producer was fenced), with the classified [*Error] Commit would
// return. If ctx ends before the producer takes r, r is not sent, Send
// returns ctx's error and the transaction stays usable. Other errors: a
// record without a topic, ErrNoTransaction, ErrClosed.
func (s *Session) Send(ctx context.Context, r Record) error {
	kr := kafka.Record{
		Topic: r.Topic, Partition: r.Partition, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp,
	}
	if kr.Partition < 0 {
		kr.Partition = kafka.PartitionByKey
	}
	if len(r.Headers) > 0 {
		kr.Headers = make([]kafka.Header, len(r.Headers))
		for i, h := range r.Headers {
			kr.Headers[i] = kafka.Header{Key: h.Key, Value: h.Value}
		}
	}
	return public(s.s.Send(ctx, kr))
}

// Commit commits the open transaction with the consumer offsets of its
// input: offsets maps each input partition to the offset of the next
// record to read (last processed + 1), gm is the consuming member's group
// metadata read now (KIP-447: the broker rejects offsets of a member whose
// generation is over). Offsets are committed even if the transaction
// produced no record — an epoch or batch whose records were all filtered
// out still moves its input forward.
//
// Commit waits for every record sent, then sends AddOffsetsToTxn and
// TxnOffsetCommit (when offsets is not empty) and EndTxn(commit).
// Coordinator errors (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
// COORDINATOR_NOT_AVAILABLE, CONCURRENT_TRANSACTIONS) are retried until
// ctx ends. Any other failure is an [*Error] of kind ErrAbortable,
// ErrFenced, ErrIndefinite or ErrFatal. If ctx ends while a request is
// out, Commit returns ErrIndefinite at once and the request finishes in
// the background.
//
// Invalid arguments (an empty topic or group id, a negative partition or
// offset) are reported without a kind and leave the transaction open;
// ErrNoTransaction and ErrClosed are usage errors.
func (s *Session) Commit(ctx context.Context, offsets map[TopicPartition]int64, gm GroupMetadata) error {
	var offs map[txn.TopicPartition]int64
	if len(offsets) > 0 {
		offs = make(map[txn.TopicPartition]int64, len(offsets))
		for tp, off := range offsets {
			offs[txn.TopicPartition(tp)] = off
		}
	}
	return public(s.s.Commit(ctx, offs, kafka.GroupMetadata(gm)))
}

// Abort aborts the open transaction: none of its records become visible
// to read_committed consumers and its offsets are not committed. With no
// open transaction it does nothing. It retries coordinator errors until
// ctx ends.
//
// If ctx ends before the abort is sent, Abort returns an error wrapping
// ctx's and the transaction stays open: call Abort again, or Reset. Any
// other failure (an [*Error]) leaves the session needing Reset; ErrClosed
// is a usage error.
func (s *Session) Abort(ctx context.Context) error { return public(s.s.Abort(ctx)) }

// Reset discards the producer and initializes a new one with the same
// transactional id, as New does: the new epoch completes or aborts whatever
// the old producer left in flight and fences its requests still on the
// wire. When Reset returns nil the outcome of every earlier transaction is
// decided, so stable offsets read afterwards (OffsetFetch with
// RequireStable) tell whether it committed. An open transaction is
// abandoned (the broker aborts it).
//
// Call it after ErrIndefinite or ErrFenced, or after a failed Abort; Begin
// calls it by itself when the previous transaction saw a connection fail.
// If ctx ends first Reset returns an ErrIndefinite [*Error] and may be
// called again; ErrClosed is a usage error.
func (s *Session) Reset(ctx context.Context) error { return public(s.s.Reset(ctx)) }

// Close releases the producer and its connections and waits for every
// goroutine of the session. It does not end an open transaction: the
// broker aborts it when the next Session with the same transactional id
// starts, or at TransactionTimeout (read_committed consumers of its
// partitions wait until then) — Abort first for a clean stop. Close may
// wait as long as the network timeouts when a broker is unreachable. It is
// idempotent and returns nil; the error is there for io.Closer.
func (s *Session) Close() error { return s.s.Close() }
