package exactlyonce

import (
	"reflect"
	"strings"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/txn"
)

// The kinds of transaction failure. Every error of New, Begin, Send,
// Commit, Abort and Reset is an [*Error] whose Kind is one of these, except
// usage errors (ErrConfig, ErrNoTransaction, ErrTransactionOpen,
// ErrClosed, an invalid argument) and a ctx that ended before Send or
// Abort did anything. Switch on them with errors.Is:
//
//	switch err := s.Commit(ctx, offsets, gm); {
//	case err == nil:
//	case errors.Is(err, exactlyonce.ErrAbortable):  // Abort, rewind, redo
//	case errors.Is(err, exactlyonce.ErrFenced):     // rejoin, Reset, rewind
//	case errors.Is(err, exactlyonce.ErrIndefinite): // Reset, re-read offsets
//	default:                                        // ErrFatal or a bug: stop
//	}
var (
	// ErrAbortable: the transaction did not commit and will not, and the
	// producer is usable. Call Abort, rewind every task to its last
	// committed offset, drop staged state, and redo the work. Examples: a
	// record the broker kept rejecting (NOT_ENOUGH_REPLICAS after the
	// retries), UNKNOWN_PRODUCER_ID, ctx ending before the commit was sent.
	ErrAbortable = txn.ErrAbortable

	// ErrFenced: this producer or this group member is not the current one.
	// PRODUCER_FENCED, INVALID_PRODUCER_EPOCH or INVALID_PRODUCER_ID_MAPPING
	// (another Session with the same transactional id started, or the
	// broker aborted the transaction at its timeout), or ILLEGAL_GENERATION,
	// UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID on TxnOffsetCommit (the
	// member's generation is over). The open transaction is or will be
	// aborted — unless the fence raced a commit already sent, so treat the
	// outcome as unknown: drop staged state, rejoin the group (claims then
	// restart at the committed offsets, restoring state from the
	// changelogs), and Reset the session before the next Begin.
	ErrFenced = txn.ErrFenced

	// ErrIndefinite: the outcome is unknown — a request of the commit (or a
	// Produce) timed out or lost its connection, or the producer reached a
	// state only a new producer id epoch can clear. Never retry the commit:
	// call Reset, which re-initializes the same transactional id and so
	// completes or aborts whatever was in flight and fences any request
	// still on the wire; then re-read the stable committed offsets and
	// treat the epoch or batch as unknown (committed if the offsets moved
	// to its end, else redo it).
	ErrIndefinite = txn.ErrIndefinite

	// ErrFatal: redoing the work would fail the same way — an
	// authorization failure, an unsupported version, a record too large,
	// an invalid transaction timeout. Abort if the session allows it,
	// Close, and stop with the error.
	ErrFatal = txn.ErrFatal
)

// Usage errors.
var (
	// ErrConfig is wrapped by every error about an invalid [Config].
	ErrConfig = txn.ErrConfig
	// ErrNoTransaction is returned by Send and Commit when no transaction
	// is open (Begin was not called, or Commit or Abort already started).
	ErrNoTransaction = txn.ErrNoTransaction
	// ErrTransactionOpen is returned by Begin while a transaction is
	// open: Commit or Abort it first.
	ErrTransactionOpen = txn.ErrTransactionOpen
	// ErrClosed is returned by every method of a closed Session.
	ErrClosed = txn.ErrClosed
)

// Error is a failed transactional operation. errors.Is(err, Kind) and
// errors.Is / errors.As on the cause both work: the cause of an error a
// broker answered with holds a [*KafkaError], the cause of a failed record
// a [*RecordError]; context and network errors are kept as they are.
type Error struct {
	// Op is the operation that failed: "init", "begin", "send", "commit"
	// or "abort".
	Op string
	// Kind is ErrAbortable, ErrFenced, ErrIndefinite or ErrFatal.
	Kind error
	// Err is the cause.
	Err error
}

// Error implements error: "exactlyonce: <op>: <kind>: <cause>".
func (e *Error) Error() string {
	return "exactlyonce: " + e.Op + ": " + e.Kind.Error() + ": " + e.Err.Error()
}

// Unwrap returns the kind and the cause, for errors.Is and errors.As.
func (e *Error) Unwrap() []error { return []error{e.Kind, e.Err} }

// KafkaError is an error code a broker answered with: Kafka's protocol
// error codes, such as 19 for NOT_ENOUGH_REPLICAS or 90 for
// PRODUCER_FENCED.
type KafkaError struct {
	// Code is the Kafka protocol error code.
	Code int16
	// Message describes the code.
	Message string
}

// Error implements error.
func (e *KafkaError) Error() string { return e.Message }

// RecordError is a record the broker did not take: it names the record's
// partition and wraps the reason.
type RecordError struct {
	Topic     string
	Partition int32
	Err       error
}

// Error implements error: "topic-partition: reason".
func (e *RecordError) Error() string {
	return TopicPartition{e.Topic, e.Partition}.String() + ": " + e.Err.Error()
}

// Unwrap returns the reason.
func (e *RecordError) Unwrap() error { return e.Err }

// public returns err as callers outside the module may see it: the errors
// of the Kafka client (sarama) and of weir's internal packages in its tree
// are replaced by KafkaError, RecordError or a plain error with the same
// message, so that nothing a caller cannot name leaks out; the sentinels,
// context and network errors are kept.
func public(err error) error {
	if err == nil {
		return nil
	}
	switch e := err.(type) {
	case *txn.Error:
		return &Error{Op: e.Op, Kind: e.Kind, Err: public(e.Err)}
	case *kafka.PartitionError:
		return &RecordError{Topic: e.Topic, Partition: e.Partition, Err: public(e.Err)}
	}
	if code, ok := txn.KafkaCode(err); ok {
		return &KafkaError{Code: code, Message: err.Error()}
	}
	var kids []error
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		if k := u.Unwrap(); k != nil {
			kids = []error{k}
		}
	case interface{ Unwrap() []error }:
		kids = u.Unwrap()
	}
	changed := foreign(err)
	converted := make([]error, len(kids))
	for i, k := range kids {
		converted[i] = public(k)
		changed = changed || converted[i] != k
	}
	if !changed {
		return err
	}
	return &wrapped{msg: err.Error(), errs: converted}
}

// foreign reports whether err's type belongs to the Kafka client or to one
// of weir's internal packages.
func foreign(err error) bool {
	t := reflect.TypeOf(err)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	p := t.PkgPath()
	return strings.HasPrefix(p, "github.com/IBM/sarama") || strings.HasPrefix(p, "github.com/weirstream/weir/internal/")
}

// wrapped keeps the message of an error whose type public replaced, and
// its converted causes.
type wrapped struct {
	msg  string
	errs []error
}

func (w *wrapped) Error() string   { return w.msg }
func (w *wrapped) Unwrap() []error { return w.errs }
