package kafka

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/embedded"
)

func TestTransactionSupport(t *testing.T) {
	all := map[int16]int16{apiInitProducerID: 4, apiAddPartitionsTxn: 3, apiAddOffsetsToTxn: 3, apiEndTxn: 3, apiTxnOffsetCommit: 3}
	without := func(key int16) map[int16]int16 {
		m := map[int16]int16{}
		for k, v := range all {
			if k != key {
				m[k] = v
			}
		}
		return m
	}
	for _, tc := range []struct {
		name     string
		versions map[int16]int16
		want     string // "" for no error
	}{
		{"Kafka 2.5 and later", all, ""},
		{"no transactional APIs (Kafka 0.10)", map[int16]int16{0: 2, 1: 3, 3: 1}, "does not offer [InitProducerId AddPartitionsToTxn AddOffsetsToTxn EndTxn TxnOffsetCommit]: it is too old for transactions"},
		{"no EndTxn", without(apiEndTxn), "does not offer [EndTxn]"},
		{"TxnOffsetCommit v2 (Kafka 2.4)", map[int16]int16{apiInitProducerID: 2, apiAddPartitionsTxn: 1, apiAddOffsetsToTxn: 1, apiEndTxn: 1, apiTxnOffsetCommit: 2}, "serves TxnOffsetCommit up to v2; exactly-once needs v3 (KIP-447, Kafka 2.5 or later)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := transactionSupport("b1:9092", tc.versions)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrTransactionsUnavailable)
			require.True(t, strings.Contains(err.Error(), tc.want), err.Error())
			require.True(t, strings.Contains(err.Error(), "b1:9092"), err.Error())
		})
	}
}

// TopicFacts reports the partition count of every topic, 0 for a missing
// one, and the cleanup.policy of those asked; CheckTransactions passes on
// a broker with transactions (kfake).
func TestTopicFactsAndTransactions(t *testing.T) {
	b, err := embedded.Start(t.Context(), embedded.Options{Topics: map[string]int32{"in": 3}})
	require.NoError(t, err)
	defer b.Close()
	a, err := NewAdmin(Config{Brokers: b.Addrs()})
	require.NoError(t, err)
	defer a.Close()
	require.NoError(t, a.EnsureTopics(t.Context(), []TopicSpec{{Name: "log", Partitions: 2, Config: map[string]string{"cleanup.policy": "compact"}}}))
	facts, err := a.TopicFacts(t.Context(), []string{"in", "log", "nope"}, []string{"in", "log", "nope"})
	require.NoError(t, err)
	require.Equal(t, map[string]TopicFacts{
		"in":   {Partitions: 3, CleanupPolicy: "delete"},
		"log":  {Partitions: 2, CleanupPolicy: "compact"},
		"nope": {},
	}, facts)
	require.NoError(t, a.CheckTransactions(t.Context(), "app-1"))
}
