package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/eapache/go-resiliency/breaker"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Classifiers of delivery errors (a *PartitionError's cause), so that the
// runtime can tell what an output failure means without seeing a client:
// each knows sarama's errors and franz-go's (Kafka's error codes through
// hasCode, kgo's own errors), bare or wrapped.

// BreakerOpen reports that the producer gave up on a record without a
// cause from the cluster: sarama's "circuit breaker is open" (after three
// failures in a row to find a topic's partitions or a partition's leader,
// sarama's producer fails every record of it at once for 10 s, without
// asking the cluster), or franz-go's delivery timeout or retry limit
// (kgo.ErrRecordTimeout, kgo.ErrRecordRetries). It says nothing of the
// cause; the sarama [Producer] reports the failure that opened the
// breaker instead, and kgo wraps the last error it saw, which the other
// classifiers read.
func BreakerOpen(err error) bool {
	return errors.Is(err, breaker.ErrBreakerOpen) ||
		errors.Is(err, kgo.ErrRecordTimeout) || errors.Is(err, kgo.ErrRecordRetries)
}

// UnknownTopicOrPartition reports Kafka's UNKNOWN_TOPIC_OR_PARTITION (or
// UNKNOWN_TOPIC_ID): the topic does not exist, or the broker asked does
// not know it yet.
func UnknownTopicOrPartition(err error) bool {
	return errors.Is(err, ErrUnknownTopic) || hasCode(err, codeUnknownTopicOrPartition, codeUnknownTopicID)
}

// AuthorizationFailed reports Kafka's authorization errors: an ACL denies
// the operation, which no retry changes.
func AuthorizationFailed(err error) bool {
	return hasCode(err, codeTopicAuthorizationFailed, codeClusterAuthorizationFailed,
		codeTransactionalIDAuthorizationFailed, codeGroupAuthorizationFailed)
}

// RecordRejected reports a record the broker refuses whatever the retries:
// larger than the topic's max.message.bytes, or invalid.
func RecordRejected(err error) bool {
	return errors.Is(err, ErrRecordTooLarge) ||
		hasCode(err, codeMessageTooLarge, codeRecordListTooLarge, codeInvalidRecord)
}

// UnknownTopicBound is how long [Admin.TopicMissing] asks the cluster
// before it concludes that a topic does not exist: a broker that has not
// caught up with a topic just created answers UNKNOWN_TOPIC_OR_PARTITION
// for a moment, a deleted topic stays unknown.
var UnknownTopicBound = 3 * time.Second

// TopicMissing reports whether topic does not exist: every metadata answer
// for UnknownTopicBound says it is unknown. An answer that lists it, or an
// error, ends the wait.
func (a *Admin) TopicMissing(ctx context.Context, topic string) (bool, error) {
	start := time.Now()
	for attempt := 0; ; attempt++ {
		found, err := a.describe(ctx, []string{topic})
		if err != nil {
			return false, err
		}
		if _, ok := found[topic]; ok {
			return false, nil
		}
		if time.Since(start) >= UnknownTopicBound {
			return true, nil
		}
		_ = a.client.RefreshMetadata()
		if err := Pause(ctx, min(Backoff(attempt+2), UnknownTopicBound-time.Since(start))); err != nil {
			return false, fmt.Errorf("kafka: is topic %q missing: %w", topic, err)
		}
	}
}

// causes remembers, per topic, the last delivery error that was not the
// breaker's, to report it in the breaker's place.
type causes struct {
	mu   sync.Mutex
	last map[string]error
}

// explain returns err, or for a breaker error the failure that opened it.
func (c *causes) explain(topic string, err error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !BreakerOpen(err) {
		if c.last == nil {
			c.last = map[string]error{}
		}
		c.last[topic] = err
		return err
	}
	if cause := c.last[topic]; cause != nil {
		return fmt.Errorf("%w (the producer stopped trying for a while after repeated failures)", cause)
	}
	return fmt.Errorf("the producer stopped trying after repeated failures to find the topic's partitions or leaders (%w)", err)
}
