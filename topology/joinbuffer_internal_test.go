package topology

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/processor"
)

func TestHeldRecordRoundTrip(t *testing.T) {
	cases := []processor.Record[any, any]{
		{},
		{Topic: "orders", Partition: 3, Offset: 42},
		{Topic: "t", Headers: []processor.Header{{Key: "a", Value: []byte("1")}, {Key: "nil"}, {Key: "", Value: []byte{}}}},
	}
	for _, r := range cases {
		got, value, err := decodeHeld(encodeHeld(r, []byte("value")))
		require.NoError(t, err)
		require.Equal(t, "value", string(value))
		require.Equal(t, r.Topic, got.Topic)
		require.Equal(t, r.Partition, got.Partition)
		require.Equal(t, r.Offset, got.Offset)
		require.Equal(t, len(r.Headers), len(got.Headers))
		for i, h := range r.Headers {
			require.Equal(t, h.Key, got.Headers[i].Key)
			require.Equal(t, h.Value == nil, got.Headers[i].Value == nil)
			require.Equal(t, string(h.Value), string(got.Headers[i].Value))
		}
	}
	b := encodeHeld(processor.Record[any, any]{Headers: []processor.Header{{Key: "k", Value: []byte("v")}}}, nil)
	for n := range len(b) { // every cut falls in the header, the value being empty
		_, _, err := decodeHeld(b[:n])
		require.ErrorIs(t, err, errCorruptBuffer, "%d bytes", n)
	}
}
