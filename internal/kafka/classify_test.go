package kafka

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
)

// The classifiers decide whether the group rejoins or the application
// stops, and whether a read retries or fails: each is tested directly here
// on the errors sarama returns, bare and wrapped as the callers see them, in
// the table style of internal/txn's fault tests.

// wrapped is how errors reach the classifiers: wrapped once by fmt, or
// inside weir's own error types.
func wrapped(err error) []error {
	return []error{
		err,
		fmt.Errorf("join group %q: %w", "app", err),
		&PartitionError{Topic: "in", Partition: 2, Err: err},
		&leaderLookupError{err: err},
	}
}

func TestFatalGroupError(t *testing.T) {
	for _, tc := range []struct {
		err   error
		fatal bool
		why   string
	}{
		{sarama.ConfigurationError("Consumer.Group.Session.Timeout too low"), true, "the same configuration fails the same way"},
		{sarama.ErrInvalidSessionTimeout, true, "the broker's group.min/max.session.timeout.ms refuse it"},
		{sarama.ErrFencedInstancedId, true, "another process joined with this static instance id"},
		{sarama.ErrGroupAuthorizationFailed, true, "an ACL"},
		{sarama.ErrTopicAuthorizationFailed, true, "an ACL"},
		{sarama.ErrSASLAuthenticationFailed, true, "credentials"},
		{sarama.ErrInconsistentGroupProtocol, true, "another application uses the group id"},
		{sarama.ErrInvalidGroupId, true, "the group id"},
		{sarama.ErrGroupMaxSizeReached, true, "group.max.size: more instances than the broker allows"},
		{sarama.ErrUnsupportedVersion, true, "the broker is too old"},

		{sarama.ErrRebalanceInProgress, false, "a rebalance: rejoin"},
		{sarama.ErrIllegalGeneration, false, "a generation ended: rejoin"},
		{sarama.ErrUnknownMemberId, false, "the session expired: rejoin with a new member id"},
		{sarama.ErrNotCoordinatorForConsumer, false, "the coordinator moved"},
		{sarama.ErrConsumerCoordinatorNotAvailable, false, "the coordinator is loading or down"},
		{sarama.ErrOffsetsLoadInProgress, false, "the coordinator is loading"},
		{sarama.ErrRequestTimedOut, false, "a slow broker"},
		{sarama.ErrOutOfBrokers, false, "brokers restart"},
		{sarama.ErrNotConnected, false, "a lost connection"},
		{io.EOF, false, "a lost connection"},
		{syscall.ECONNREFUSED, false, "a broker restarting"},
		{&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, false, "a broker restarting"},
		{context.DeadlineExceeded, false, "a request's deadline"},
		{errors.New("kafka: something sarama did not classify"), false, "unknown: rejoin, never stop on a guess"},
	} {
		for _, err := range wrapped(tc.err) {
			require.Equal(t, tc.fatal, fatalGroupError(err), "%v (%T): %s", err, err, tc.why)
		}
	}
	require.False(t, fatalGroupError(nil))
}

func TestRetriableFetchError(t *testing.T) {
	for _, tc := range []struct {
		err       error
		retriable bool
		why       string
	}{
		{sarama.ErrNotLeaderForPartition, true, "the leader moved: refresh the metadata"},
		{sarama.ErrLeaderNotAvailable, true, "an election"},
		{sarama.ErrReplicaNotAvailable, true, "a replica restarting"},
		{sarama.ErrFencedLeaderEpoch, true, "stale metadata"},
		{sarama.ErrUnknownLeaderEpoch, true, "metadata ahead of the broker"},
		{sarama.ErrOffsetNotAvailable, true, "a new leader's high watermark"},
		{sarama.ErrRequestTimedOut, true, "a slow broker"},
		{sarama.ErrNotConnected, true, "a lost connection"},
		{sarama.ErrUnknownTopicOrPartition, true, "a topic just created, not yet on this broker (the caller bounds the retries)"},
		{sarama.ErrKafkaStorageError, true, "a log directory offline: another replica leads soon"},
		{sarama.ErrFetchSessionIDNotFound, true, "a fetch session evicted"},
		{sarama.ErrInvalidFetchSessionEpoch, true, "a fetch session out of step"},
		{sarama.ErrBrokerNotAvailable, true, "a broker restarting"},
		{io.EOF, true, "transport: a lost connection"},
		{io.ErrUnexpectedEOF, true, "transport: a response cut short"},
		{syscall.ECONNRESET, true, "transport"},
		{&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, true, "transport"},
		{sarama.ErrOutOfBrokers, true, "no broker answers for now"},
		{sarama.ErrIncompleteResponse, true, "a response without the partition"},

		{sarama.ErrClosedClient, false, "the client was closed: the reader is stopping"},
		{sarama.ErrUnsupportedVersion, false, "the broker is too old"},
		{sarama.ErrTopicAuthorizationFailed, false, "an ACL"},
		{sarama.ErrInvalidMessage, false, "CORRUPT_MESSAGE: a retry reads the same record again"},
		{sarama.ErrOffsetOutOfRange, false, "handled before: the log start moved"},
		{sarama.ErrUnknown, false, "an error code the broker does not explain"},
	} {
		for _, err := range wrapped(tc.err) {
			require.Equal(t, tc.retriable, retriableFetchError(err), "%v (%T): %s", err, err, tc.why)
		}
	}
}
