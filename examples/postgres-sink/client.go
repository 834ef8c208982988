package main

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/IBM/sarama"
)

// The example's own Kafka client writes the input, as another service
// would; weir itself is only the processing and the sink.

func newClient(brokers []string) (sarama.Client, error) {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewReferenceHashPartitioner
	c, err := sarama.NewClient(brokers, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to %v: %w", brokers, err)
	}
	return c, nil
}

// ensureTopic creates topic unless it exists.
func ensureTopic(brokers []string, topic string, partitions int32) error {
	c, err := newClient(brokers)
	if err != nil {
		return err
	}
	defer c.Close()
	admin, err := sarama.NewClusterAdminFromClient(c)
	if err != nil {
		return err
	}
	err = admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: -1}, false)
	if err != nil && !errors.Is(err, sarama.ErrTopicAlreadyExists) {
		return fmt.Errorf("create %s: %w", topic, err)
	}
	return nil
}

// produceLines writes the lines, keyed by line number, and returns the
// number of words in them.
func produceLines(brokers []string, topic string, lines []string) (int64, error) {
	c, err := newClient(brokers)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	p, err := sarama.NewSyncProducerFromClient(c)
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

// printTable prints the counts, the most frequent words first.
func printTable(table string, counts map[string]int64) {
	words := make([]string, 0, len(counts))
	for w := range counts {
		words = append(words, w)
	}
	slices.SortFunc(words, func(a, b string) int {
		if counts[a] != counts[b] {
			return int(counts[b] - counts[a])
		}
		return strings.Compare(a, b)
	})
	fmt.Printf("the table %s:\n", table)
	for _, w := range words {
		fmt.Printf("  %-12s %d\n", w, counts[w])
	}
}
