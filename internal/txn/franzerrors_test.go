package txn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/internal/kafka"
)

// TestClassifyFranz checks the franz-go error classifier case by case,
// with why: the same kinds as sarama's (TestClassify) for the same Kafka
// errors, and franz-go's own sentinel errors.
func TestClassifyFranz(t *testing.T) {
	for _, tc := range []struct {
		err      error
		ioFailed bool
		want     error
		why      string
	}{
		{kerr.ProducerFenced, false, ErrFenced, "another producer with this transactional id"},
		{kerr.InvalidProducerEpoch, false, ErrFenced, "an old epoch: fenced, or the transaction timed out"},
		{kerr.InvalidProducerIDMapping, false, ErrFenced, "the broker aborted the transaction at its timeout"},
		{fmt.Errorf("partition in-0: %w", kerr.IllegalGeneration), false, ErrFenced, "the member's generation is over (KIP-447)"},
		{kerr.UnknownMemberID, false, ErrFenced, "the member left the group"},
		{kerr.FencedInstanceID, false, ErrFenced, "another member with this static id"},
		{fmt.Errorf("producer ID has a fatal, unrecoverable error, err: %w", kerr.ProducerFenced), false, ErrFenced, "kgo's BeginTransaction wraps it"},
		{kerr.ProducerFenced, true, ErrFenced, "fenced wins over a failed connection"},

		{kerr.NotEnoughReplicas, true, ErrIndefinite, "a connection failed while the operation ran: a request may still land"},
		{io.EOF, false, ErrIndefinite, "a lost connection: the request may have reached the broker"},
		{syscall.ECONNRESET, false, ErrIndefinite, "a reset connection"},
		{&net.OpError{Op: "read", Net: "tcp", Err: syscall.ETIMEDOUT}, false, ErrIndefinite, "a read timeout"},
		{kerr.RequestTimedOut, false, ErrIndefinite, "the broker timed out: the write may still complete"},
		{kgo.ErrClientClosed, false, ErrIndefinite, "the client closed under the request"},
		{kerr.InvalidTxnState, false, ErrIndefinite, "the broker's transaction is not the producer's: only a new epoch settles it"},
		{context.DeadlineExceeded, false, ErrIndefinite, "a timeout: outcome unknown"},
		{errors.New("a failure nobody classified"), false, ErrIndefinite, "unknown: never assume it did not commit"},

		{kerr.TransactionalIDAuthorizationFailed, false, ErrFatal, "an ACL: redoing fails the same way"},
		{kerr.TopicAuthorizationFailed, false, ErrFatal, "an ACL on an output topic"},
		{kerr.GroupAuthorizationFailed, false, ErrFatal, "an ACL on the group"},
		{fmt.Errorf("%w (uncompressed_bytes=2, compressed_bytes=2)", kerr.MessageTooLarge), false, ErrFatal, "a record too large is too large again"},
		{kerr.InvalidTransactionTimeout, false, ErrFatal, "the broker's transaction.max.timeout.ms"},
		{kerr.UnsupportedVersion, false, ErrFatal, "the broker is too old"},
		{&kafka.PartitionError{Topic: "out", Partition: 7, Err: fmt.Errorf("%w: 7", errPartitionOutOfRange)}, false, ErrFatal, "an explicit partition out of range"},

		{kerr.UnknownProducerID, false, ErrAbortable, "the broker forgot the producer: abort (kgo bumps the epoch) and redo"},
		{kerr.TransactionAbortable, false, ErrAbortable, "the broker says abort"},
		{kerr.OperationNotAttempted, false, ErrAbortable, "kgo did not send the commit: abort"},
		{kgo.ErrAborting, false, ErrAbortable, "records failed by an abort"},
		{kgo.ErrRecordRetries, false, ErrAbortable, "kgo gave up on a record known unwritten"},
		{fmt.Errorf("%w, last err: %w", kgo.ErrRecordTimeout, kerr.NotEnoughReplicas), false, ErrAbortable, "kgo's delivery timeout: known unwritten"},

		{kerr.NotCoordinator, false, errTransient, "the coordinator moved: resend"},
		{kerr.CoordinatorNotAvailable, false, errTransient, "the coordinator is down"},
		{kerr.CoordinatorLoadInProgress, false, errTransient, "the coordinator is loading"},
		{kerr.ConcurrentTransactions, false, errTransient, "the previous transaction is completing"},
		{kerr.UnstableOffsetCommit, false, errTransient, "an offset of an open transaction"},
		{fmt.Errorf("commit: %w", kerr.NotEnoughReplicas), false, errTransient, "answered, wrapped: resend"},
	} {
		require.Equal(t, tc.want, classifyFranz(tc.err, tc.ioFailed), "%v (io failed %v): %s", tc.err, tc.ioFailed, tc.why)
		require.Equal(t, tc.want, classifyFranz(bridge(tc.err), tc.ioFailed), "bridged %v: %s", tc.err, tc.why)
	}
	require.Equal(t, ErrAbortable, deliveryKindFranz(kerr.NotEnoughReplicas), "a record refused after the retries")
	require.Equal(t, ErrFenced, deliveryKindFranz(kerr.InvalidProducerEpoch))
}

// TestBridge checks that a franz-go Kafka error, bridged, matches its
// kerr error and sarama's KError of the same code, so that the checks
// written for either client see it, and that KafkaCode reads its code.
func TestBridge(t *testing.T) {
	err := bridge(fmt.Errorf("partition in-0: %w", kerr.IllegalGeneration))
	require.ErrorIs(t, err, kerr.IllegalGeneration)
	require.ErrorIs(t, err, sarama.ErrIllegalGeneration)
	require.NotErrorIs(t, err, sarama.ErrUnknownMemberId)
	require.True(t, kafka.GroupMoved(err), "the runtime's check, written for sarama")
	code, ok := KafkaCode(err)
	require.True(t, ok)
	require.Equal(t, kerr.IllegalGeneration.Code, code)
	require.Same(t, err, bridge(err), "bridged once")
	plain := errors.New("no code")
	require.Equal(t, plain, bridge(plain))
	require.NoError(t, bridge(nil))

	wrapped := &Error{Op: "commit", Kind: ErrFenced, Err: err}
	require.ErrorIs(t, wrapped, sarama.ErrIllegalGeneration)
}

// TestRecordRetries checks that the franz-go session retries a record
// within the sarama session's window, and that a commit waits for records
// at least that long plus a produce request before it calls them unsettled.
func TestRecordRetries(t *testing.T) {
	require.Equal(t, 12550*time.Millisecond, retryWindow)
	require.Equal(t, 12, recordRetries())
	cfg := Config{TransactionTimeout: 3 * time.Second, RequestTimeout: 30 * time.Second}
	require.Equal(t, retryWindow+10*time.Second, cfg.unsettledAfter())
	cfg.TransactionTimeout = time.Minute
	require.Equal(t, time.Minute, cfg.unsettledAfter())
}
