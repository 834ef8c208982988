package txn

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/weirstream/weir/internal/kafka"
)

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

// commitPartitions validates the arguments of Commit and returns the
// partitions of offsets, sorted by topic and partition (the order of a
// TxnOffsetCommit request); nil without offsets.
func commitPartitions(offsets map[TopicPartition]int64, gm kafka.GroupMetadata) ([]TopicPartition, error) {
	if len(offsets) == 0 {
		return nil, nil
	}
	if gm.GroupID == "" {
		return nil, fmt.Errorf("exactlyonce: commit: offsets without a group id")
	}
	tps := make([]TopicPartition, 0, len(offsets))
	for tp, off := range offsets {
		if tp.Topic == "" || tp.Partition < 0 || off < 0 {
			return nil, fmt.Errorf("exactlyonce: commit: invalid offset %d for partition %q/%d", off, tp.Topic, tp.Partition)
		}
		tps = append(tps, tp)
	}
	slices.SortFunc(tps, func(a, b TopicPartition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return tps, nil
}

// Session is a transactional producer: one transactional id, one
// transaction at a time. See the package documentation for the protocol.
// The client library under it (sarama or franz-go) is
// kafka.ResolveClient(Config.Kafka.Client)'s choice; its API and its
// errors' kinds are the same on both.
//
// Begin, Commit, Abort, Reset and Close are meant for one goroutine at a
// time and are serialized if called concurrently (Close waits for a
// running Commit). Send may be called from many goroutines at once between
// Begin and Commit or Abort; a Send racing with Commit either joins the
// transaction or fails with ErrNoTransaction.
type Session struct {
	id   string
	impl session
}

// session is what a client library implements under Session; each method
// has the contract of Session's method of the same name.
type session interface {
	Acked() *kafka.AckedOffsets
	Reset(ctx context.Context) error
	Begin(ctx context.Context) error
	Send(ctx context.Context, r kafka.Record) error
	Commit(ctx context.Context, offsets map[TopicPartition]int64, gm kafka.GroupMetadata) error
	Abort(ctx context.Context) error
	Close() error
	// stats returns the producers initialized and the connections that
	// failed in use, for tests and logs.
	stats() (inits int64, connFailures uint64)
}

// New validates cfg and initializes the producer: InitProducerId bumps
// the transactional id's epoch, which fences every older producer with the
// same id and aborts (or, if it was committing, completes) the transaction
// it left open. Coordinator errors are retried until ctx ends.
func New(ctx context.Context, cfg Config) (*Session, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	client, err := kafka.ResolveClient(cfg.Kafka.Client)
	if err != nil {
		return nil, err // Validate checked it
	}
	var impl session
	if client == kafka.ClientFranz {
		impl, err = newFranz(ctx, cfg)
	} else {
		impl, err = newSarama(ctx, cfg)
	}
	if err != nil {
		return nil, err
	}
	return &Session{id: cfg.TransactionalID, impl: impl}, nil
}

// Acked returns the offsets of the records the session's producers had
// acknowledged — written into a transaction, committed or not — for the
// topics it is told to track.
func (s *Session) Acked() *kafka.AckedOffsets { return s.impl.Acked() }

// TransactionalID returns the session's transactional id.
func (s *Session) TransactionalID() string { return s.id }

// Reset discards the producer and initializes a new one with the same
// transactional id, as New does: the new epoch completes or aborts whatever
// the old producer left in flight and fences its requests still on the
// wire. When Reset returns nil the outcome of every earlier transaction is
// decided, so stable offsets read afterwards (OffsetFetch with
// RequireStable) tell whether it committed. An open transaction is
// abandoned (the broker aborts it).
//
// Call it after ErrIndefinite or ErrFenced, or after a failed Abort; Begin
// calls it by itself when the previous transaction saw a connection fail
// (on a broker without KIP-890's epoch bump at every commit). If ctx ends
// first Reset returns an ErrIndefinite error and may be called again.
func (s *Session) Reset(ctx context.Context) error { return s.impl.Reset(ctx) }

// Begin opens a transaction. Before it, if the previous transaction saw a
// connection fail (see Reset), it re-initializes the producer, bounded by
// ctx; otherwise it does no I/O.
func (s *Session) Begin(ctx context.Context) error { return s.impl.Begin(ctx) }

// Send hands r to the open transaction and returns; delivery is
// asynchronous, and Commit waits for it. r.Partition >= 0 is used as is,
// kafka.PartitionByKey partitions like internal/kafka's producer (the Java
// client's murmur2 of the key; round robin for a nil key).
//
// Send fails fast once the transaction has failed (a record was rejected,
// the producer was fenced), with the classified error Commit would return.
// If ctx ends before the client takes r, r is not sent and the transaction
// stays usable.
func (s *Session) Send(ctx context.Context, r kafka.Record) error { return s.impl.Send(ctx, r) }

// Commit commits the open transaction with the consumer offsets of its
// input: offsets maps each input partition to the offset of the next
// record to read (last processed + 1), gm is the consuming member's group
// metadata read now (KIP-447: the broker rejects offsets of a member whose
// generation is over). Offsets are committed even if the transaction
// produced no record — an epoch or batch whose records were all filtered
// out still moves its input forward.
//
// Commit waits for every record sent and commits the offsets in the
// transaction (TxnOffsetCommit), then ends it (EndTxn). Coordinator
// errors (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
// COORDINATOR_NOT_AVAILABLE, CONCURRENT_TRANSACTIONS) are retried until
// ctx ends. Any other failure is an [*Error] of kind ErrAbortable,
// ErrFenced, ErrIndefinite or ErrFatal. If ctx ends while a request is
// out, Commit returns ErrIndefinite at once and the request finishes in
// the background.
//
// Invalid arguments (an empty topic or group id, a negative partition or
// offset) are reported without a kind and leave the transaction open.
func (s *Session) Commit(ctx context.Context, offsets map[TopicPartition]int64, gm kafka.GroupMetadata) error {
	return s.impl.Commit(ctx, offsets, gm)
}

// Abort aborts the open transaction: none of its records become visible
// to read_committed consumers and its offsets are not committed. With no
// open transaction it does nothing. It retries coordinator errors until
// ctx ends.
//
// If ctx ends before the abort is sent, Abort returns ctx's error and the
// transaction stays open: call Abort again, or Reset. Any other failure
// (an [*Error]) leaves the session needing Reset.
func (s *Session) Abort(ctx context.Context) error { return s.impl.Abort(ctx) }

// Close releases the producer and its connections and waits for every
// goroutine of the session. It does not end an open transaction: the
// broker aborts it when the next Session with the same transactional id
// starts, or at TransactionTimeout (read_committed consumers of its
// partitions wait until then) — Abort first for a clean stop. Close may
// wait as long as the client's network timeouts when a broker is
// unreachable. It is idempotent and returns nil; the error is there for
// io.Closer.
func (s *Session) Close() error { return s.impl.Close() }
