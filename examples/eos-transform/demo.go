package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/IBM/sarama"

	"github.com/weirstream/weir/embedded"
	"github.com/weirstream/weir/serde"
)

// runDemo runs the transform on an embedded broker and verifies its output
// as an independent read_committed consumer.
func runDemo(ctx context.Context, log *slog.Logger) error {
	dlqTopic := inTopic + "-dlq"
	broker, err := embedded.Start(ctx, embedded.Options{
		Topics: map[string]int32{inTopic: partitions, outTopic: partitions},
	})
	if err != nil {
		return err
	}
	defer broker.Close()
	fmt.Printf("embedded Kafka broker on %v\n", broker.Addrs())

	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Consumer.IsolationLevel = sarama.ReadCommitted
	client, err := sarama.NewClient(broker.Addrs(), cfg)
	if err != nil {
		return err
	}
	defer client.Close()

	good, bad := demoOrders()
	producer, err := sarama.NewSyncProducerFromClient(client)
	if err != nil {
		return err
	}
	for i, o := range good {
		if err := send(producer, o.ID, encodeOrder(o)); err != nil {
			return err
		}
		if i%20 == 10 && len(bad) > 0 { // interleave the bad records
			if err := send(producer, fmt.Sprintf("bad-%d", len(bad)), bad[0]); err != nil {
				return err
			}
			bad = bad[1:]
		}
	}
	_, badAll := demoOrders()
	fmt.Printf("wrote %d orders and %d bad records to %s\n", len(good), len(badAll), inTopic)
	_ = producer.Close()

	stateDir, err := os.MkdirTemp("", "weir-eos-transform-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stateDir)
	app, err := newApp(broker.Addrs(), log, stateDir)
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- app.Run(runCtx) }()

	out, dlq, readErr := readAll(ctx, client, len(good), len(badAll), dlqTopic)
	cancel()
	if err := <-done; err != nil {
		return errors.Join(readErr, err)
	}
	if readErr != nil {
		return readErr
	}
	return verify(good, out, dlq)
}

func send(p sarama.SyncProducer, key, value string) error {
	_, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: inTopic, Key: sarama.StringEncoder(key), Value: sarama.StringEncoder(value)})
	return err
}

// readAll reads the output and the dead-letter topic, read_committed, until
// they hold wantOut and wantDLQ records (or a timeout).
func readAll(ctx context.Context, client sarama.Client, wantOut, wantDLQ int, dlqTopic string) ([]*sarama.ConsumerMessage, []*sarama.ConsumerMessage, error) {
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, err := readTopic(client, outTopic)
		if err != nil {
			return nil, nil, err
		}
		dlq, err := readTopic(client, dlqTopic)
		if err != nil && !errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
			return nil, nil, err
		}
		if len(out) >= wantOut && len(dlq) >= wantDLQ {
			return out, dlq, nil
		}
		if time.Now().After(deadline) {
			return nil, nil, fmt.Errorf("after 60s the output holds %d of %d orders and the dead-letter topic %d of %d records", len(out), wantOut, len(dlq), wantDLQ)
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// readTopic reads every committed record of topic, up to its last stable
// offset now.
func readTopic(client sarama.Client, topic string) ([]*sarama.ConsumerMessage, error) {
	if err := client.RefreshMetadata(topic); err != nil {
		return nil, err
	}
	parts, err := client.Partitions(topic)
	if err != nil {
		return nil, err
	}
	consumer, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		return nil, err
	}
	defer consumer.Close()
	var all []*sarama.ConsumerMessage
	for _, p := range parts {
		end, err := client.GetOffset(topic, p, sarama.OffsetNewest)
		if err != nil {
			return nil, err
		}
		pc, err := consumer.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			return nil, err
		}
		for done := false; !done; {
			select {
			case m := <-pc.Messages():
				all = append(all, m)
				done = m.Offset+1 >= end
			case <-time.After(300 * time.Millisecond):
				done = true // the rest are transaction markers or still open
			}
		}
		pc.Close()
	}
	return all, nil
}

// verify checks every good order exactly once, in Avro, and every bad
// record in the dead-letter topic with its error.
func verify(good []Order, out, dlq []*sarama.ConsumerMessage) error {
	avro, err := serde.NewAvro(orderSchema)
	if err != nil {
		return err
	}
	seen := map[string]int{}
	for _, m := range out {
		rec, err := avro.Deserialize(outTopic, m.Value)
		if err != nil {
			return fmt.Errorf("output %s/%d@%d is not an Avro order: %w", m.Topic, m.Partition, m.Offset, err)
		}
		id, _ := rec["id"].(string)
		if id != string(m.Key) {
			return fmt.Errorf("output key %q carries order %q", m.Key, id)
		}
		seen[id]++
	}
	for _, o := range good {
		switch n := seen[o.ID]; n {
		case 1:
		case 0:
			return fmt.Errorf("order %s is missing", o.ID)
		default:
			return fmt.Errorf("order %s appears %d times", o.ID, n)
		}
	}
	if len(out) != len(good) {
		return fmt.Errorf("%d output records for %d orders", len(out), len(good))
	}
	for _, m := range dlq {
		var kind, msg string
		for _, h := range m.Headers {
			switch string(h.Key) {
			case "weir.error.kind":
				kind = string(h.Value)
			case "weir.error.message":
				msg = string(h.Value)
			}
		}
		fmt.Printf("dead letter %-8s %-15s %s\n", string(m.Key), kind, msg)
	}
	fmt.Printf("verified: %d orders, each exactly once in %s (Avro, read_committed); %d bad records in %s-dlq\n",
		len(good), outTopic, len(dlq), inTopic)
	return nil
}
