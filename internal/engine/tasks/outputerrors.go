package tasks

import (
	"context"
	"errors"
	"fmt"

	"github.com/weirstream/weir/internal/kafka"
)

// explainOutput tells whether a failed output — an undelivered record, or
// a transaction that could not commit because of one — can heal. If not,
// it returns the error to stop with, naming the topic and the cause (an
// output topic that UNKNOWN_TOPIC_OR_PARTITION or sarama's open circuit
// breaker hint at is first looked up: only one that stays unknown for
// kafka.UnknownTopicBound is missing). Otherwise it returns nil.
func (r *Runtime) explainOutput(ctx context.Context, cause error) error {
	var pe *kafka.PartitionError
	if !errors.As(cause, &pe) {
		return nil
	}
	switch {
	case kafka.AuthorizationFailed(pe.Err):
		return fmt.Errorf("%w: topic %q: not authorized to write it (an ACL granting Write on it is needed): %w",
			ErrOutputFatal, pe.Topic, cause)
	case kafka.RecordRejected(pe.Err):
		return fmt.Errorf("%w: topic %q rejects a record (larger than its max.message.bytes, or invalid): %w",
			ErrOutputFatal, pe.Topic, cause)
	case kafka.UnknownTopicOrPartition(pe.Err) || kafka.BreakerOpen(pe.Err):
		missing, err := r.admin.TopicMissing(ctx, pe.Topic)
		if err != nil || !missing {
			return nil
		}
		return fmt.Errorf("%w: topic %q does not exist (deleted, or never created; %v): %w: %w",
			ErrOutputFatal, pe.Topic, kafka.UnknownTopicBound, kafka.ErrUnknownTopic, cause)
	}
	return nil
}

// undelivered sorts a delivery failure of the at-least-once producer: an
// output no retry can deliver returns the error to stop with
// (explainOutput); one that heals — a record the producer gave up on, as
// sarama does at once while its partition has no leader — reports
// heals. Anything else (ctx done: nothing failed) is neither.
func (r *Runtime) undelivered(ctx context.Context, err error) (heals bool, fatal error) {
	if fatal := r.explainOutput(ctx, err); fatal != nil {
		return false, fatal
	}
	var pe *kafka.PartitionError
	return errors.As(err, &pe), nil
}
