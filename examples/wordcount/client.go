package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/IBM/sarama"

	"github.com/weirstream/weir/serde"
)

// client is the example's own Kafka client — the producer of the input and
// the reader of the output, as another service would be. weir itself is
// only the processing in between.
type client struct {
	sarama.Client
}

func newClient(brokers []string) (*client, error) {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewReferenceHashPartitioner
	cfg.Consumer.IsolationLevel = sarama.ReadCommitted
	c, err := sarama.NewClient(brokers, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to %v: %w", brokers, err)
	}
	return &client{c}, nil
}

func (c *client) ensureTopics(partitions int32, topics ...string) error {
	admin, err := sarama.NewClusterAdminFromClient(c.Client)
	if err != nil {
		return err
	}
	for _, t := range topics {
		err := admin.CreateTopic(t, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: -1}, false)
		if err != nil && !errors.Is(err, sarama.ErrTopicAlreadyExists) {
			return fmt.Errorf("create %s: %w", t, err)
		}
	}
	return nil
}

// produceLines writes the lines, keyed by line number, and returns the
// number of words in them.
func (c *client) produceLines(topic string, lines []string) (int64, error) {
	p, err := sarama.NewSyncProducerFromClient(c.Client)
	if err != nil {
		return 0, err
	}
	defer p.Close()
	var words int64
	for i, line := range lines {
		words += int64(len(strings.Fields(line)))
		_, _, err := p.SendMessage(&sarama.ProducerMessage{
			Topic: topic, Key: sarama.StringEncoder(strconv.Itoa(i)), Value: sarama.StringEncoder(line),
		})
		if err != nil {
			return 0, fmt.Errorf("produce to %s: %w", topic, err)
		}
	}
	return words, nil
}

// readCounts follows the counts topic, keeping the latest count per word,
// until the counts add up to total.
func (c *client) readCounts(ctx context.Context, topic string, total int64, timeout time.Duration) (map[string]int64, error) {
	consumer, err := sarama.NewConsumerFromClient(c.Client)
	if err != nil {
		return nil, err
	}
	defer consumer.Close()
	parts, err := c.Partitions(topic)
	if err != nil {
		return nil, err
	}
	msgs := make(chan *sarama.ConsumerMessage)
	done := make(chan struct{})
	defer close(done)
	for _, p := range parts {
		pc, err := consumer.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			return nil, err
		}
		defer pc.Close()
		go func() {
			for m := range pc.Messages() {
				select {
				case msgs <- m:
				case <-done:
					return
				}
			}
		}()
	}
	counts := map[string]int64{}
	var sum int64
	deadline := time.After(timeout)
	for sum != total {
		select {
		case m := <-msgs:
			n, err := serde.Int64().Deserialize(topic, m.Value)
			if err != nil {
				return nil, fmt.Errorf("bad count for %q: %w", m.Key, err)
			}
			sum += n - counts[string(m.Key)]
			counts[string(m.Key)] = n
		case <-deadline:
			return nil, fmt.Errorf("counts add up to %d of %d words after %v", sum, total, timeout)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return counts, nil
}
