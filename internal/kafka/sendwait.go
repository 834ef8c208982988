package kafka

import (
	"context"
	"fmt"

	"github.com/IBM/sarama"
)

// SendWait implements [Producer.SendWait].
func (p *saramaProducer) SendWait(ctx context.Context, recs ...Record) error {
	return sendWait(ctx, recs, p.sendOwn)
}

// sendOwn hands recs to sarama as w's, after what the linger holds (so that
// they keep their place in their partitions).
func (p *saramaProducer) sendOwn(ctx context.Context, w *ownDeliveries, recs []Record) error {
	p.g.mu.RLock()
	defer p.g.mu.RUnlock()
	if p.g.closed {
		return errSendClosed()
	}
	if err := p.handHeld(ctx); err != nil {
		return fmt.Errorf("kafka: send: %w", err)
	}
	for _, r := range recs {
		if r.Topic == "" {
			return fmt.Errorf("%w: record without topic", ErrConfig)
		}
	}
	for _, r := range recs {
		msg := MessageFromRecord(r)
		own := &ownRecord{seq: p.t.register(), of: w}
		msg.Metadata = own
		if err := p.input(ctx, msg); err != nil {
			p.t.complete(own.seq, nil)
			return fmt.Errorf("kafka: send to %q: %w", r.Topic, err)
		}
	}
	return nil
}

// ownRecord is the sarama Metadata of a record SendWait sent: its
// sequence number, and the deliveries it reports to.
type ownRecord struct {
	seq uint64
	of  *ownDeliveries
}

// delivered records the outcome of msg (err nil: acknowledged) with the
// tracker, or with its SendWait if it is one of those.
func (p *saramaProducer) delivered(msg *sarama.ProducerMessage, err error) {
	switch m := msg.Metadata.(type) {
	case *ownRecord:
		p.t.complete(m.seq, nil)
		m.of.complete(err)
	case uint64:
		p.t.complete(m, err)
	default:
		p.t.complete(0, err)
	}
}
