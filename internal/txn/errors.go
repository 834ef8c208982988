package txn

import (
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
)

// The kinds of transaction failure. Every error of New, Begin, Send,
// Commit, Abort and Reset is an [*Error] whose Kind is one of these, except
// usage errors (ErrConfig, ErrNoTransaction, ErrTransactionOpen,
// ErrClosed, an invalid argument) and a ctx that ended before Send or
// Abort did anything. Switch on them with errors.Is:
//
//	switch err := s.Commit(ctx, offsets, gm); {
//	case err == nil:
//	case errors.Is(err, txn.ErrAbortable):  // Abort, rewind, redo
//	case errors.Is(err, txn.ErrFenced):     // rejoin, Reset, rewind
//	case errors.Is(err, txn.ErrIndefinite): // Reset, re-read offsets
//	default:                                        // ErrFatal or a bug: stop
//	}
var (
	// ErrAbortable: the transaction did not commit and will not, and the
	// producer is usable. Call Abort, rewind every task to its last
	// committed offset, drop staged state, and redo the work. Examples: a
	// record the broker kept rejecting (NOT_ENOUGH_REPLICAS after the
	// retries), UNKNOWN_PRODUCER_ID, ctx ending before the commit was sent.
	ErrAbortable = errors.New("transaction abortable")

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
	ErrFenced = errors.New("producer fenced")

	// ErrIndefinite: the outcome is unknown — a request of the commit (or a
	// Produce) timed out or lost its connection, or the producer reached a
	// state only a new producer id epoch can clear. Never retry the commit:
	// call Reset, which re-initializes the same transactional id and so
	// completes or aborts whatever was in flight and fences any request
	// still on the wire; then re-read the stable committed offsets and
	// treat the epoch or batch as unknown (committed if the offsets moved
	// to its end, else redo it).
	ErrIndefinite = errors.New("transaction outcome unknown")

	// ErrFatal: redoing the work would fail the same way — an
	// authorization failure, an unsupported version, a record too large,
	// an invalid transaction timeout. Abort if the session allows it,
	// Close, and stop with the error.
	ErrFatal = errors.New("unrecoverable error")
)

// Usage errors.
var (
	// ErrNoTransaction is returned by Send and Commit when no transaction
	// is open (Begin was not called, or Commit or Abort already started).
	ErrNoTransaction = errors.New("exactlyonce: no open transaction")
	// ErrTransactionOpen is returned by Begin while a transaction is
	// open: Commit or Abort it first.
	ErrTransactionOpen = errors.New("exactlyonce: transaction already open")
	// ErrClosed is returned by every method of a closed Session.
	ErrClosed = errors.New("exactlyonce: session closed")
)

// Error is a failed transactional operation. errors.Is(err, Kind) and
// errors.Is / errors.As on the cause both work: the cause of a broker error
// is its Kafka error (a sarama.KError, matchable with errors.Is), the cause
// of a failed record names its partition (a *kafka.PartitionError). On
// franz-go a Kafka error matches both its *kerr.Error and sarama's KError
// of the same code.
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

func newError(op string, kind, cause error) *Error {
	return &Error{Op: op, Kind: kind, Err: cause}
}

// errTransient is classify's answer for errors worth retrying as they are:
// the broker answered, so nothing is left on the wire.
var errTransient = errors.New("transient")

// classify returns the kind of err, an error of sarama's transactional
// producer. status is the producer's transaction status after the failure;
// ioFailed reports that a connection of the producer failed while the
// operation ran (a request of it may still reach the broker). Only Kafka
// error codes, sarama's status flags and Go error types are consulted,
// never message text.
func classify(err error, status sarama.ProducerTxnStatusFlag, ioFailed bool) error {
	switch {
	case fencedError(err):
		return ErrFenced
	case ioFailed || networkError(err):
		return ErrIndefinite
	case errors.Is(err, sarama.ErrInvalidTxnState):
		// The broker's view of the transaction is not the producer's: it
		// was aborted behind its back (a fence, the timeout), or the
		// producer is confused. Only a new epoch settles it.
		return ErrIndefinite
	case permanentError(err):
		return ErrFatal
	case status&sarama.ProducerTxnFlagFatalError != 0:
		// sarama will not go on: only a new epoch clears it.
		return ErrIndefinite
	case status&sarama.ProducerTxnFlagAbortableError != 0:
		return ErrAbortable
	case retriableError(err):
		return errTransient
	default:
		return ErrIndefinite
	}
}

// Kafka error codes by what they mean for a transaction, one table for
// both clients: sarama's classifier matches them as sarama.KError,
// franz-go's as the *kerr.Error values listed.
var (
	// fencedCodes: this producer epoch or this group member generation is
	// over.
	fencedCodes = []*kerr.Error{
		kerr.ProducerFenced, kerr.InvalidProducerEpoch, kerr.InvalidProducerIDMapping,
		kerr.IllegalGeneration, kerr.UnknownMemberID, kerr.FencedInstanceID,
	}
	// timedOutCodes: the broker answered that it timed out, or lost a
	// connection of its own; the write may still complete.
	timedOutCodes = []*kerr.Error{kerr.RequestTimedOut, kerr.NetworkException}
	// permanentCodes: redoing the same work cannot cure them.
	permanentCodes = []*kerr.Error{
		kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidRecord,
		kerr.InvalidRequiredAcks, kerr.UnsupportedForMessageFormat,
		kerr.UnsupportedCompressionType, kerr.UnsupportedVersion,
		kerr.InvalidTransactionTimeout, kerr.OffsetMetadataTooLarge,
		kerr.TopicAuthorizationFailed, kerr.GroupAuthorizationFailed,
		kerr.ClusterAuthorizationFailed, kerr.TransactionalIDAuthorizationFailed,
	}
)

// isSaramaCode reports whether err matches one of codes as sarama's KError.
func isSaramaCode(err error, codes []*kerr.Error) bool {
	for _, k := range codes {
		if errors.Is(err, sarama.KError(k.Code)) {
			return true
		}
	}
	return false
}

// isFranzCode reports whether err matches one of codes as franz-go's
// *kerr.Error.
func isFranzCode(err error, codes []*kerr.Error) bool {
	for _, k := range codes {
		if errors.Is(err, k) {
			return true
		}
	}
	return false
}

// brokenConnection reports the Go errors of a connection that broke or
// timed out, after which a request may or may not have reached the broker.
func brokenConnection(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) ||
		errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE)
}

// fencedError reports the Kafka errors that mean this producer epoch or
// this group member generation is over.
func fencedError(err error) bool { return isSaramaCode(err, fencedCodes) }

// networkError reports failures after which a request may or may not have
// reached the broker: a broken or timed-out connection, or a broker that
// answered that it timed out (REQUEST_TIMED_OUT: the write may still
// complete).
func networkError(err error) bool {
	return brokenConnection(err) ||
		isSaramaCode(err, timedOutCodes) ||
		errors.Is(err, sarama.ErrNotConnected) ||
		errors.Is(err, sarama.ErrOutOfBrokers) ||
		errors.Is(err, sarama.ErrClosedClient)
}

// permanentError reports errors that redoing the same work cannot cure.
func permanentError(err error) bool {
	var ce sarama.ConfigurationError
	var pe sarama.PacketEncodingError
	return errors.As(err, &ce) || errors.As(err, &pe) ||
		errors.Is(err, sarama.ErrInvalidPartition) || // an explicit partition out of range
		isSaramaCode(err, permanentCodes)
}

// retriableError reports the Kafka errors sarama retries itself on
// transactional requests (and gave up on after Transaction.Retry.Max):
// the coordinator moved, is loading, or is finishing the previous
// transaction. The broker answered, so resending is safe.
func retriableError(err error) bool { return isSaramaCode(err, saramaRetriedCodes) }

// saramaRetriedCodes are the codes retriableError takes.
var saramaRetriedCodes = []*kerr.Error{
	kerr.NotCoordinator, kerr.CoordinatorNotAvailable, kerr.CoordinatorLoadInProgress,
	kerr.ConcurrentTransactions, kerr.UnknownTopicOrPartition, kerr.NotEnoughReplicas,
	kerr.NotEnoughReplicasAfterAppend, kerr.LeaderNotAvailable, kerr.NotLeaderForPartition,
	kerr.KafkaStorageError, kerr.ThrottlingQuotaExceeded, kerr.UnstableOffsetCommit,
}

// KafkaCode returns the Kafka error code of err when err itself is one a
// broker answered with (sarama's KError, franz-go's *kerr.Error, or the
// session's bridge of the latter), for callers that may not see
// sarama's types.
func KafkaCode(err error) (code int16, ok bool) {
	switch e := err.(type) {
	case sarama.KError:
		return int16(e), true
	case *codeError:
		return e.code, true
	case *kerr.Error:
		return e.Code, true
	}
	return 0, false
}

// errPartitionOutOfRange is wrapped by the error of a record sent to a
// partition its topic does not have (franz-go's own error has no type).
var errPartitionOutOfRange = errors.New("exactlyonce: partition out of range")

// errUnsettled is wrapped by the error of a commit whose records the
// client still retries, unsure whether they were written.
var errUnsettled = errors.New("exactlyonce: records still without an outcome")

// ErrConfig is wrapped by every error about an invalid [Config]. Errors
// from the Kafka part also wrap kafka.ErrConfig.
var ErrConfig = errors.New("exactlyonce: invalid configuration")
