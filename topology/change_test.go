package topology

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/serde"
)

func TestChangeSerdeKafkaFormat(t *testing.T) {
	s := changeSerde[string]{inner: serde.String()}
	for _, tc := range []struct {
		name  string
		c     change[string]
		bytes string
	}{
		{"old", change[string]{oldV: "ab", hasOld: true}, "ab\x00"},
		{"new", change[string]{newV: "cd", hasNew: true}, "cd\x01"},
		{"both", change[string]{newV: "new", oldV: "o", hasNew: true, hasOld: true}, "\x06newo\x02"},
		{"empty values", change[string]{hasNew: true, hasOld: true}, "\x00\x02"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := s.Serialize("t", tc.c)
			require.NoError(t, err)
			require.Equal(t, tc.bytes, string(b))
			got, err := s.Deserialize("t", b)
			require.NoError(t, err)
			require.Equal(t, tc.c, got)
		})
	}
	// Versioned tables' flags carry an is-latest byte.
	for flag, want := range map[string]change[string]{
		"ab\x01\x03":     {oldV: "ab", hasOld: true},
		"cd\x01\x04":     {newV: "cd", hasNew: true},
		"\x02nO\x00\x05": {newV: "n", oldV: "O", hasNew: true, hasOld: true},
	} {
		got, err := s.Deserialize("t", []byte(flag))
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	_, err := s.Serialize("t", change[string]{})
	require.True(t, errors.Is(err, serde.ErrSerialize))
	for _, bad := range []string{"", "x\x09", "\x05", "\x40ab\x02", "\x7f\x02"} {
		_, err := s.Deserialize("t", []byte(bad))
		require.Truef(t, errors.Is(err, serde.ErrDeserialize), "%q: %v", bad, err)
	}
}
