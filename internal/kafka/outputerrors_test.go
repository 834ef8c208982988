package kafka

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/IBM/sarama"
	"github.com/eapache/go-resiliency/breaker"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestOutputErrorClassifiers(t *testing.T) {
	wrap := func(err error) error {
		return &PartitionError{Topic: "t", Partition: 0, Err: fmt.Errorf("produce: %w", err)}
	}
	for _, tc := range []struct {
		err                          error
		breaker, unknown, auth, rejd bool
	}{
		{err: wrap(breaker.ErrBreakerOpen), breaker: true},
		{err: wrap(sarama.ErrUnknownTopicOrPartition), unknown: true},
		{err: fmt.Errorf("%w: %q", ErrUnknownTopic, "t"), unknown: true},
		{err: wrap(sarama.ErrTopicAuthorizationFailed), auth: true},
		{err: wrap(sarama.ErrTransactionalIDAuthorizationFailed), auth: true},
		{err: wrap(sarama.ErrClusterAuthorizationFailed), auth: true},
		{err: wrap(sarama.ErrMessageSizeTooLarge), rejd: true},
		{err: wrap(sarama.ErrInvalidRecord), rejd: true},
		{err: fmt.Errorf("%w: 2 MiB", ErrRecordTooLarge), rejd: true},
		{err: wrap(sarama.ErrNotEnoughReplicas)},
		{err: wrap(sarama.ErrNotLeaderForPartition)},
		{err: errors.New("circuit breaker is open")}, // text is never consulted

		// franz-go: kerr's broker errors, and kgo's own as its promises
		// give them (a timeout wraps the last error seen).
		{err: wrap(kerr.UnknownTopicOrPartition), unknown: true},
		{err: wrap(kerr.UnknownTopicID), unknown: true},
		{err: wrap(kerr.TopicAuthorizationFailed), auth: true},
		{err: wrap(kerr.ClusterAuthorizationFailed), auth: true},
		{err: wrap(kerr.TransactionalIDAuthorizationFailed), auth: true},
		{err: wrap(kerr.GroupAuthorizationFailed), auth: true},
		{err: wrap(kerr.MessageTooLarge), rejd: true},
		{err: wrap(fmt.Errorf("%w (uncompressed_bytes=%d)", kerr.MessageTooLarge, 2<<20)), rejd: true},
		{err: wrap(kerr.RecordListTooLarge), rejd: true},
		{err: wrap(kerr.InvalidRecord), rejd: true},
		{err: wrap(kgo.ErrRecordTimeout), breaker: true},
		{err: wrap(kgo.ErrRecordRetries), breaker: true},
		{err: wrap(fmt.Errorf("%w, last err: %w", kgo.ErrRecordTimeout, kerr.NotLeaderForPartition)), breaker: true},
		{err: wrap(fmt.Errorf("%w, last err: %w", kgo.ErrRecordTimeout, kerr.UnknownTopicOrPartition)), breaker: true, unknown: true},
		{err: wrap(kerr.NotEnoughReplicas)},
		{err: wrap(kerr.NotLeaderForPartition)},
		{err: wrap(kerr.CorruptMessage)},
		{err: wrap(kgo.ErrClientClosed)},
		{err: wrap(fmt.Errorf("%w 5: topic %q has 2 partitions", ErrInvalidPartition, "t"))},
	} {
		t.Run(tc.err.Error(), func(t *testing.T) {
			require.Equal(t, tc.breaker, BreakerOpen(tc.err), "BreakerOpen")
			require.Equal(t, tc.unknown, UnknownTopicOrPartition(tc.err), "UnknownTopicOrPartition")
			require.Equal(t, tc.auth, AuthorizationFailed(tc.err), "AuthorizationFailed")
			require.Equal(t, tc.rejd, RecordRejected(tc.err), "RecordRejected")
		})
	}
}

// The producer reports the failure that opened sarama's circuit breaker
// in the breaker's place: "circuit breaker is open" names no cause (issue
// 23: an at-least-once application writing to a missing topic stopped
// with "kafka: o-iq2/-1: circuit breaker is open").
func TestCausesReplaceTheBreaker(t *testing.T) {
	var c causes
	first := c.explain("out", breaker.ErrBreakerOpen)
	require.True(t, BreakerOpen(first), "with no cause seen the breaker error is kept, explained")
	require.True(t, strings.Contains(first.Error(), "stopped trying after repeated failures"), first.Error())

	require.Equal(t, sarama.ErrUnknownTopicOrPartition, c.explain("out", sarama.ErrUnknownTopicOrPartition))
	got := c.explain("out", breaker.ErrBreakerOpen)
	require.ErrorIs(t, got, sarama.ErrUnknownTopicOrPartition)
	require.False(t, BreakerOpen(got))
	require.False(t, strings.Contains(got.Error(), "circuit breaker"), got.Error())

	other := c.explain("other", breaker.ErrBreakerOpen) // causes are per topic
	require.True(t, BreakerOpen(other))
}
