package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"
)

// client is the example's own Kafka client — the producer of the input and
// the reader of the outputs, as other services would be. weir itself is
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

// produce writes one input record with its timestamp.
func (c *client) produce(in input) error {
	p, err := sarama.NewSyncProducerFromClient(c.Client)
	if err != nil {
		return err
	}
	defer p.Close()
	msg := &sarama.ProducerMessage{Topic: in.topic, Key: sarama.StringEncoder(in.key), Timestamp: in.at}
	if in.value != nil {
		msg.Value = sarama.StringEncoder(*in.value)
	}
	if _, _, err := p.SendMessage(msg); err != nil {
		return fmt.Errorf("produce to %s: %w", in.topic, err)
	}
	return nil
}

// waitCommitted waits until group has committed the end offset of
// partition 0 of every topic: everything written to them so far is
// processed, and (at least once) its outputs are written.
func (c *client) waitCommitted(ctx context.Context, group string, topics []string, timeout time.Duration) error {
	admin, err := sarama.NewClusterAdminFromClient(c.Client)
	if err != nil {
		return err
	}
	parts := map[string][]int32{}
	for _, t := range topics {
		parts[t] = []int32{0}
	}
	deadline := time.Now().Add(timeout)
	for {
		if done, err := c.committed(admin, group, parts); err == nil && done {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the application did not commit its input within %v", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (c *client) committed(admin sarama.ClusterAdmin, group string, parts map[string][]int32) (bool, error) {
	resp, err := admin.ListConsumerGroupOffsets(group, parts)
	if err != nil {
		return false, err
	}
	for topic := range parts {
		end, err := c.GetOffset(topic, 0, sarama.OffsetNewest)
		if err != nil {
			return false, err
		}
		if end == 0 {
			continue
		}
		b := resp.GetBlock(topic, 0)
		if b == nil || b.Err != sarama.ErrNoError || b.Offset < end {
			return false, nil
		}
	}
	return true, nil
}

// follower reads the output topics (partition 0 of each) from the start.
type follower struct {
	c        *client
	consumer sarama.Consumer
	topics   []string
	parts    map[string]sarama.PartitionConsumer
	next     map[string]int64
}

func (c *client) follow(topics []string) (*follower, error) {
	consumer, err := sarama.NewConsumerFromClient(c.Client)
	if err != nil {
		return nil, err
	}
	f := &follower{c: c, consumer: consumer, topics: topics, parts: map[string]sarama.PartitionConsumer{}, next: map[string]int64{}}
	for _, t := range topics {
		pc, err := consumer.ConsumePartition(t, 0, sarama.OffsetOldest)
		if err != nil {
			f.Close()
			return nil, err
		}
		f.parts[t] = pc
	}
	return f, nil
}

// readToEnd returns the records written since the last call, topic after
// topic, up to each topic's end offset now.
func (f *follower) readToEnd(ctx context.Context, timeout time.Duration) ([]output, error) {
	var out []output
	deadline := time.After(timeout)
	for _, t := range f.topics {
		end, err := f.c.GetOffset(t, 0, sarama.OffsetNewest)
		if err != nil {
			return nil, err
		}
		for f.next[t] < end {
			select {
			case m := <-f.parts[t].Messages():
				o := output{topic: t, key: string(m.Key)}
				if m.Value != nil {
					v := string(m.Value)
					o.value = &v
				}
				out = append(out, o)
				f.next[t] = m.Offset + 1
			case <-deadline:
				return nil, fmt.Errorf("%s: read up to offset %d of %d within %v", t, f.next[t], end, timeout)
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	return out, nil
}

func (f *follower) Close() {
	for _, pc := range f.parts {
		pc.Close()
	}
	f.consumer.Close()
}
