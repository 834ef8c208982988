package kafka_test

import (
	"testing"

	"github.com/weirstream/weir/internal/kafka"
)

// The range reader's tests on a real broker (kfake, and Kafka when
// KAFKA_BROKERS is set) run on franz-go too: the same ranges, aborted
// transactions, commit markers, deleted records and errors. (The tests on
// sarama's mock broker are the sarama reader's: the mock speaks only
// sarama's protocol versions.)
func TestReadRangeOnFranzGo(t *testing.T) {
	t.Setenv(kafka.ClientEnv, string(kafka.ClientFranz))
	for _, tc := range []struct {
		name string
		test func(*testing.T)
	}{
		{"ReadRange", TestReadRange},
		{"EndsAtCommitMarker", TestReadRangeEndsAtCommitMarker},
		{"AbortedTransactions", TestReadRangeAbortedTransactions},
		{"DeletedRecords", TestReadRangeDeletedRecords},
		{"SkipsLargeAbortedTransactions", TestReadRangeSkipsLargeAbortedTransactions},
		{"ClosedAdmin", TestReadRangeClosedAdmin},
	} {
		t.Run(tc.name, tc.test)
	}
}
