package kafka_test

import (
	"strings"
	"testing"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/kafka"
)

// RecordSize counts a record the way sarama's producer does for record
// batches (v2), so CheckSize refuses what the producer would refuse.
func TestRecordSizeMatchesSarama(t *testing.T) {
	for _, r := range []kafka.Record{
		{Topic: "t"},
		{Topic: "t", Key: []byte("k"), Value: []byte("value")},
		{Topic: "t", Value: make([]byte, 1000), Headers: []kafka.Header{{Key: "a", Value: []byte("b")}, {Key: "c"}}},
	} {
		msg := &sarama.ProducerMessage{Topic: r.Topic}
		if r.Key != nil {
			msg.Key = sarama.ByteEncoder(r.Key)
		}
		if r.Value != nil {
			msg.Value = sarama.ByteEncoder(r.Value)
		}
		for _, h := range r.Headers {
			msg.Headers = append(msg.Headers, sarama.RecordHeader{Key: []byte(h.Key), Value: h.Value})
		}
		require.Equal(t, msg.ByteSize(2), kafka.RecordSize(r))
	}
}

func TestCheckSize(t *testing.T) {
	fits := kafka.Record{Topic: "t", Value: make([]byte, kafka.MaxRecordBytes-kafka.RecordSize(kafka.Record{}))}
	require.Equal(t, kafka.MaxRecordBytes, kafka.RecordSize(fits))
	require.NoError(t, kafka.CheckSize(fits))
	over := fits
	over.Key = []byte("k")
	err := kafka.CheckSize(over)
	require.ErrorIs(t, err, kafka.ErrRecordTooLarge)
	require.True(t, strings.Contains(err.Error(), `to "t"`), err.Error())
}

// MessageFromRecord is on every output's path: one allocation, with the
// key and value encoders inside it, and the same bytes as sarama's own
// ByteEncoder would give.
func TestMessageFromRecordAllocatesOnce(t *testing.T) {
	r := kafka.Record{Topic: "t", Partition: -1, Key: []byte("k"), Value: []byte("value")}
	m := kafka.MessageFromRecord(r)
	key, err := m.Key.Encode()
	require.NoError(t, err)
	value, err := m.Value.Encode()
	require.NoError(t, err)
	require.Equal(t, []byte("k"), key)
	require.Equal(t, []byte("value"), value)
	require.Equal(t, len("value"), m.Value.Length())
	require.Nil(t, kafka.MessageFromRecord(kafka.Record{Topic: "t"}).Value, "a nil value stays a nil Encoder (a tombstone)")
	allocs := testing.AllocsPerRun(100, func() { _ = kafka.MessageFromRecord(r) })
	require.LessOrEqual(t, allocs, 1.0, "allocations per message")
}
