package kafka

import (
	"testing"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
)

// javaVectors were computed by the Java client's algorithm
// (org.apache.kafka.common.utils.Utils.murmur2 and toPositive, compiled
// with javac 17): key (UTF-8), murmur2, partition of 3, partition of 12.
var javaVectors = []struct {
	key     string
	hash    int32
	mod3    int32
	mod12   int32
	comment string
}{
	{"", 275646681, 0, 9, "empty key is hashed, unlike a null key"},
	{"a", -1563381124, 1, 4, ""},
	{"21", -973932308, 0, 0, "the well-known vector"},
	{"abc", 479470107, 0, 3, ""},
	{"abcd", -1323649548, 2, 8, "one full word, no tail"},
	{"foobar", -790332482, 0, 6, ""},
	{"hello world", 1221641059, 1, 7, ""},
	{"weir-key-0001", -1902596673, 2, 11, ""},
	{"\u00e9t\u00e9", -2101193575, 1, 1, "bytes >= 0x80 are unsigned"},
	{"0123456789abcdef", 1438427052, 0, 0, ""},
}

func TestMurmur2MatchesJava(t *testing.T) {
	for _, v := range javaVectors {
		require.Equal(t, v.hash, Murmur2([]byte(v.key)), "murmur2(%q) %s", v.key, v.comment)
		p3, err := PartitionForKey([]byte(v.key), 3)
		require.NoError(t, err)
		require.Equal(t, v.mod3, p3, "partition of %q in 3", v.key)
		p12, err := PartitionForKey([]byte(v.key), 12)
		require.NoError(t, err)
		require.Equal(t, v.mod12, p12, "partition of %q in 12", v.key)
	}
	// Bytes 0xff 0x80 0x00 0x7f 0xfe: sign extension must not leak in.
	require.Equal(t, int32(768357719), Murmur2([]byte{0xff, 0x80, 0x00, 0x7f, 0xfe}))
}

func TestToPositiveIsNotAbs(t *testing.T) {
	require.Equal(t, int32(0x7fffffff), toPositive(-1))
	require.Equal(t, int32(0), toPositive(-2147483648))
	require.Equal(t, int32(5), toPositive(5))
}

func TestPartitionForKeyRejectsNoPartitions(t *testing.T) {
	_, err := PartitionForKey([]byte("k"), 0)
	require.Error(t, err)
}

func TestKeyPartitioner(t *testing.T) {
	p := NewKeyPartitioner("t")
	dyn := p.(sarama.DynamicConsistencyPartitioner)

	explicit := &sarama.ProducerMessage{Topic: "t", Partition: 2}
	got, err := p.Partition(explicit, 4)
	require.NoError(t, err)
	require.Equal(t, int32(2), got)
	require.True(t, dyn.MessageRequiresConsistency(explicit))

	_, err = p.Partition(&sarama.ProducerMessage{Topic: "t", Partition: 4}, 4)
	require.ErrorIs(t, err, sarama.ErrInvalidPartition)

	keyed := &sarama.ProducerMessage{Topic: "t", Partition: PartitionByKey, Key: sarama.StringEncoder("21")}
	got, err = p.Partition(keyed, 12)
	require.NoError(t, err)
	require.Equal(t, int32(0), got)
	require.True(t, dyn.MessageRequiresConsistency(keyed))

	null := &sarama.ProducerMessage{Topic: "t", Partition: PartitionByKey}
	require.False(t, dyn.MessageRequiresConsistency(null))
	seen := map[int32]bool{}
	for range 6 {
		got, err := p.Partition(null, 3)
		require.NoError(t, err)
		seen[got] = true
	}
	require.Len(t, seen, 3, "null keys go round robin")
}

// The Java vectors also agree with sarama's own murmur2 partitioner.
func TestMurmur2AgreesWithSarama(t *testing.T) {
	sp := sarama.NewMurmur2Partitioner("t")
	for _, v := range javaVectors {
		got, err := sp.Partition(&sarama.ProducerMessage{Key: sarama.StringEncoder(v.key)}, 12)
		require.NoError(t, err)
		require.Equal(t, v.mod12, got, "sarama partition of %q", v.key)
	}
}
