package txn

import (
	"errors"
	"syscall"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// classifyFranz returns the kind of err, an error of the franz-go session
// (bridged: see bridge); ioFailed reports that a connection failed while
// the operation ran. The kinds are sarama's (classify): only Kafka error
// codes, franz-go's sentinel errors and Go error types are consulted,
// never message text.
func classifyFranz(err error, ioFailed bool) error {
	switch {
	case fencedErrorFranz(err):
		return ErrFenced
	case errors.Is(err, kgo.ErrRecordTimeout), errors.Is(err, kgo.ErrRecordRetries):
		// kgo gives up on a record only when it knows the record was not
		// written (it never fails one whose produce request has no
		// answer): not committed, abortable.
		return ErrAbortable
	case ioFailed || networkErrorFranz(err):
		return ErrIndefinite
	case errors.Is(err, kerr.InvalidTxnState):
		// The broker's view of the transaction is not the producer's:
		// only a new epoch settles it.
		return ErrIndefinite
	case permanentErrorFranz(err):
		return ErrFatal
	case errors.Is(err, kerr.UnknownProducerID),
		errors.Is(err, kerr.TransactionAbortable),
		errors.Is(err, kerr.OperationNotAttempted),
		errors.Is(err, kgo.ErrAborting):
		// Answered, not committed; kgo re-initializes the producer id
		// (KIP-360) on the abort.
		return ErrAbortable
	case retriableErrorFranz(err):
		return errTransient
	default:
		return ErrIndefinite
	}
}

// deliveryKindFranz classifies a failed record or offsets request:
// nothing of the commit was sent, so a retriable error only makes the
// transaction abortable.
func deliveryKindFranz(err error) error {
	kind := classifyFranz(err, false)
	if kind == errTransient {
		kind = ErrAbortable
	}
	return kind
}

func fencedErrorFranz(err error) bool { return isFranzCode(err, fencedCodes) }

// networkErrorFranz reports failures after which a request may or may not
// have reached the broker, or a record may or may not have been written.
func networkErrorFranz(err error) bool {
	return brokenConnection(err) ||
		isFranzCode(err, timedOutCodes) ||
		errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, kgo.ErrClientClosed)
}

func permanentErrorFranz(err error) bool {
	return errors.Is(err, errPartitionOutOfRange) ||
		errors.Is(err, ErrConfig) ||
		isFranzCode(err, permanentCodes)
}

// retriableErrorFranz reports the Kafka errors worth resending as they
// are: the broker answered (the coordinator moved, is loading, or is
// finishing the previous transaction; a partition has no leader).
func retriableErrorFranz(err error) bool {
	var ke *kerr.Error
	return errors.As(err, &ke) && ke.Retriable ||
		errors.Is(err, kerr.ConcurrentTransactions) ||
		errors.Is(err, kerr.UnstableOffsetCommit) ||
		errors.Is(err, kerr.ThrottlingQuotaExceeded)
}

// codeError is an error of franz-go carrying a Kafka error code (a
// *kerr.Error in its chain). It also matches sarama's KError of the same
// code under errors.Is, so that the predicates written for either client
// (kafka.GroupMoved, kafka.AuthorizationFailed, …) and KafkaCode see it.
type codeError struct {
	err  error
	code int16
}

func (e *codeError) Error() string { return e.err.Error() }
func (e *codeError) Unwrap() error { return e.err }

// Is reports whether target is sarama's KError of e's code.
func (e *codeError) Is(target error) bool {
	k, ok := target.(sarama.KError)
	return ok && int16(k) == e.code
}

// bridge returns err as a *codeError when a Kafka error code is in its
// chain, else err.
func bridge(err error) error {
	var ke *kerr.Error
	if err == nil || !errors.As(err, &ke) {
		return err
	}
	var ce *codeError
	if errors.As(err, &ce) {
		return err
	}
	return &codeError{err: err, code: ke.Code}
}
