package topology

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOuterKeyOrder: the shared store's keys sort as Kafka Streams'
// TimestampedKeyAndJoinSide: by timestamp, then right before left, then
// by key; and parse back.
func TestOuterKeyOrder(t *testing.T) {
	type k struct {
		ts   int64
		side int
		key  string
	}
	sorted := []k{{5, 1, "b"}, {5, 0, "a"}, {5, 0, "b"}, {6, 1, "a"}, {6, 0, ""}, {256, 1, "a"}}
	for i, x := range sorted {
		b := outerKey(x.ts, x.side, []byte(x.key))
		ts, side, kb, err := parseOuterKey(b)
		require.NoError(t, err)
		require.Equal(t, x, k{ts, side, string(kb)})
		if i > 0 {
			p := sorted[i-1]
			require.Negative(t, bytes.Compare(outerKey(p.ts, p.side, []byte(p.key)), b), "%v before %v", p, x)
		}
	}
	for _, bad := range [][]byte{nil, make([]byte, 8), append(make([]byte, 8), 2)} {
		_, _, _, err := parseOuterKey(bad)
		require.Error(t, err)
	}
}
