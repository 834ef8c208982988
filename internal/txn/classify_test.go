package txn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/kafka"
)

// TestClassify checks the error classifier directly, case by case, with
// why; faults_test.go checks the session's reaction to each kind end to end
// on a broker.
func TestClassify(t *testing.T) {
	const (
		abortable = sarama.ProducerTxnFlagInError | sarama.ProducerTxnFlagAbortableError
		fatal     = sarama.ProducerTxnFlagInError | sarama.ProducerTxnFlagFatalError
	)
	for _, tc := range []struct {
		err      error
		status   sarama.ProducerTxnStatusFlag
		ioFailed bool
		want     error
		why      string
	}{
		{sarama.ErrProducerFenced, 0, false, ErrFenced, "another producer with this transactional id"},
		{sarama.ErrInvalidProducerEpoch, fatal, false, ErrFenced, "fenced, even when sarama calls it fatal"},
		{sarama.ErrInvalidProducerIDMapping, 0, false, ErrFenced, "the broker aborted the transaction at its timeout"},
		{sarama.ErrIllegalGeneration, abortable, false, ErrFenced, "the member's generation is over (KIP-447)"},
		{sarama.ErrUnknownMemberId, 0, false, ErrFenced, "the member left the group"},
		{sarama.ErrFencedInstancedId, 0, false, ErrFenced, "another member with this static id"},
		{sarama.ErrProducerFenced, 0, true, ErrFenced, "fenced wins over a failed connection"},

		{sarama.ErrNotEnoughReplicas, 0, true, ErrIndefinite, "a connection failed while the operation ran: a request may still land"},
		{io.EOF, 0, false, ErrIndefinite, "a lost connection: the request may have reached the broker"},
		{syscall.ECONNRESET, 0, false, ErrIndefinite, "a reset connection"},
		{&net.OpError{Op: "read", Net: "tcp", Err: syscall.ETIMEDOUT}, 0, false, ErrIndefinite, "a read timeout"},
		{sarama.ErrRequestTimedOut, 0, false, ErrIndefinite, "the broker timed out: the write may still complete"},
		{sarama.ErrOutOfBrokers, 0, false, ErrIndefinite, "no broker answered"},
		{sarama.ErrInvalidTxnState, abortable, false, ErrIndefinite, "the broker's transaction is not the producer's: only a new epoch settles it"},
		{errors.New("kafka: a failure sarama did not classify"), fatal, false, ErrIndefinite, "sarama will not go on: a new epoch"},
		{errors.New("kafka: a failure nobody classified"), 0, false, ErrIndefinite, "unknown: never assume it did not commit"},

		{sarama.ErrTransactionalIDAuthorizationFailed, 0, false, ErrFatal, "an ACL: redoing fails the same way"},
		{sarama.ErrTopicAuthorizationFailed, abortable, false, ErrFatal, "an ACL, even when sarama calls it abortable"},
		{sarama.ErrMessageSizeTooLarge, abortable, false, ErrFatal, "a record too large is too large again"},
		{sarama.ErrInvalidTransactionTimeout, 0, false, ErrFatal, "the broker's transaction.max.timeout.ms"},
		{sarama.ErrUnsupportedVersion, 0, false, ErrFatal, "the broker is too old"},
		{sarama.ConfigurationError("bad"), 0, false, ErrFatal, "the configuration"},
		{&kafka.PartitionError{Topic: "out", Partition: 99, Err: sarama.ErrInvalidPartition}, abortable, false, ErrFatal, "an explicit partition out of range"},

		{sarama.ErrUnknownProducerID, abortable, false, ErrAbortable, "sarama's abortable flag: abort and redo"},
		{&kafka.PartitionError{Topic: "out", Partition: 0, Err: sarama.ErrNotEnoughReplicas}, abortable, false, ErrAbortable, "a record kept failing: abort and redo"},

		{sarama.ErrNotCoordinatorForConsumer, 0, false, errTransient, "the coordinator moved: resend"},
		{sarama.ErrConsumerCoordinatorNotAvailable, 0, false, errTransient, "the coordinator is loading or down"},
		{sarama.ErrConcurrentTransactions, 0, false, errTransient, "the previous transaction is completing"},
		{sarama.ErrOffsetsLoadInProgress, 0, false, errTransient, "the coordinator is loading"},
		{fmt.Errorf("commit: %w", sarama.ErrNotEnoughReplicas), 0, false, errTransient, "answered, wrapped: resend"},
	} {
		require.Equal(t, tc.want, classify(tc.err, tc.status, tc.ioFailed), "%v (status %v, io failed %v): %s", tc.err, tc.status, tc.ioFailed, tc.why)
	}
}

// TestDeliveryKind checks that a record or an AddOffsetsToTxn refused with
// an error worth a resend only makes the transaction abortable: nothing of
// the commit was sent.
func TestDeliveryKind(t *testing.T) {
	require.Equal(t, ErrAbortable, deliveryKind(sarama.ErrNotEnoughReplicas, 0))
	require.Equal(t, ErrFenced, deliveryKind(sarama.ErrProducerFenced, 0))
	require.Equal(t, ErrFatal, deliveryKind(sarama.ErrMessageSizeTooLarge, 0))
	require.Equal(t, ErrIndefinite, deliveryKind(context.DeadlineExceeded, 0), "a timeout (a net.Error): outcome unknown")
}
