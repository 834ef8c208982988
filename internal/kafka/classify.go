package kafka

import (
	"errors"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Kafka's error codes that weir's classifiers name. A code is the protocol's
// number, the same on either client: sarama returns it as a sarama.KError,
// franz-go as a *kerr.Error. The tables below and the classifiers built on
// them (group.go, commit.go, outputerrors.go) hold for both clients at
// once, so that a client's code path cannot drift from the other's.
const (
	codeMessageTooLarge                    int16 = 10
	codeRequestTimedOut                    int16 = 7
	codeUnknownTopicOrPartition            int16 = 3
	codeCoordinatorLoadInProgress          int16 = 14
	codeCoordinatorNotAvailable            int16 = 15
	codeNotCoordinator                     int16 = 16
	codeRecordListTooLarge                 int16 = 18
	codeIllegalGeneration                  int16 = 22
	codeInconsistentGroupProtocol          int16 = 23
	codeInvalidGroupID                     int16 = 24
	codeUnknownMemberID                    int16 = 25
	codeInvalidSessionTimeout              int16 = 26
	codeRebalanceInProgress                int16 = 27
	codeTopicAuthorizationFailed           int16 = 29
	codeGroupAuthorizationFailed           int16 = 30
	codeClusterAuthorizationFailed         int16 = 31
	codeUnsupportedVersion                 int16 = 35
	codeTransactionalIDAuthorizationFailed int16 = 53
	codeSASLAuthenticationFailed           int16 = 58
	codeGroupMaxSizeReached                int16 = 81
	codeFencedInstanceID                   int16 = 82
	codeInvalidRecord                      int16 = 87
	codeUnknownTopicID                     int16 = 100
)

// hasCode reports whether err's chain holds a Kafka error of one of codes,
// of either client.
func hasCode(err error, codes ...int16) bool {
	if err == nil {
		return false
	}
	for _, c := range codes {
		if errors.Is(err, sarama.KError(c)) {
			return true
		}
		if ke := kerr.ErrorForCode(c); ke != nil && errors.Is(err, ke) {
			return true
		}
	}
	return false
}

// fatalGroupCodes are the group errors that a new join cannot cure: the
// broker refuses the member's settings, identity or rights the same way
// every time.
var fatalGroupCodes = []int16{
	codeInvalidSessionTimeout, codeFencedInstanceID, codeGroupAuthorizationFailed,
	codeTopicAuthorizationFailed, codeInconsistentGroupProtocol, codeInvalidGroupID,
	codeGroupMaxSizeReached, codeSASLAuthenticationFailed, codeUnsupportedVersion,
}

// fatalGroupError reports group errors that a new join cannot cure, of
// either client: [fatalGroupCodes], and sarama's rejected configuration.
func fatalGroupError(err error) bool {
	var ce sarama.ConfigurationError
	return errors.As(err, &ce) || hasCode(err, fatalGroupCodes...)
}

// commitVerdict is what a committer does with one partition's answer to an
// OffsetCommit.
type commitVerdict int

const (
	// commitAccepted: the offset is committed.
	commitAccepted commitVerdict = iota
	// commitRetry: a passing refusal — the coordinator is loading or
	// timed out, a rebalance is completing, or the coordinator is a
	// generation ahead of the member's session (the member is rejoining
	// while it keeps its claims under the cooperative protocol; a retry
	// carries the session's generation once it moved, for generationWait
	// at most).
	commitRetry
	// commitRetryCoordinator: the coordinator moved; its address is
	// looked up again and the commit retried.
	commitRetryCoordinator
	// commitRetryIfMoved: UNKNOWN_MEMBER_ID, retried only if the member's
	// session has moved on since the request; otherwise the member is out
	// of the group.
	commitRetryIfMoved
	// commitFailed: no retry cures it.
	commitFailed
)

// commitVerdictOf classifies a partition's answer (nil: accepted).
func commitVerdictOf(err error) commitVerdict {
	switch {
	case err == nil:
		return commitAccepted
	case hasCode(err, codeNotCoordinator, codeCoordinatorNotAvailable):
		return commitRetryCoordinator
	case hasCode(err, codeRebalanceInProgress, codeCoordinatorLoadInProgress, codeRequestTimedOut, codeIllegalGeneration):
		return commitRetry
	case hasCode(err, codeUnknownMemberID):
		return commitRetryIfMoved
	default:
		return commitFailed
	}
}
