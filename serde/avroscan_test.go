package serde

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// Each of these inputs makes bare goavro v2.15.0 die with an unrecoverable
// fatal error (out of memory or stack overflow), or loop for minutes; the
// test process surviving them is the test.
func TestAvroHostileInputs(t *testing.T) {
	hugeCount := []byte{0xfe, 0xff, 0xff, 0xff, 0x0f} // zig-zag varint of MaxInt32
	negCount := []byte{0xfd, 0xff, 0xff, 0xff, 0x0f, 0x00}
	for _, tc := range []struct {
		name, schema string
		in           []byte
		wantErr      string
	}{
		{"array block count", `{"type":"record","name":"R","fields":[{"name":"a","type":{"type":"array","items":"long"}}]}`,
			hugeCount, "block of 2147483647 items with 0 bytes left"},
		{"negative array block count", `{"type":"record","name":"R","fields":[{"name":"a","type":{"type":"array","items":"long"}}]}`,
			negCount, "block of 2147483647 items with 0 bytes left"},
		{"map block count", `{"type":"map","values":"long"}`,
			hugeCount, "block of 2147483647 items with 0 bytes left"},
		{"count just over what fits", `{"type":"record","name":"R","fields":[{"name":"a","type":{"type":"array","items":"double"}}]}`,
			append([]byte{0x04}, make([]byte, 15)...), "block of 2 items with 15 bytes left"},
		{"second block", `{"type":"record","name":"R","fields":[{"name":"a","type":{"type":"array","items":"long"}}]}`,
			append([]byte{0x02, 0x00}, hugeCount...), "block of 2147483647 items with 0 bytes left"},
		{"array of null", `{"type":"record","name":"R","fields":[{"name":"a","type":{"type":"array","items":"null"}}]}`,
			hugeCount, "more than 65536 items of zero width"},
		{"array of empty records", `{"type":"record","name":"R","fields":[{"name":"a","type":{"type":"array","items":
			{"type":"record","name":"E","fields":[{"name":"n","type":"null"}]}}}]}`,
			hugeCount, "more than 65536 items of zero width"},
		{"zero width budget is per input", `{"type":"record","name":"R","fields":[{"name":"a","type":{"type":"array","items":"null"}},
			{"name":"b","type":{"type":"array","items":"null"}}]}`,
			[]byte{0x80, 0x80, 0x08, 0x00, 0x02, 0x00}, "more than 65536 items of zero width"},
		{"min count", `{"type":"record","name":"R","fields":[{"name":"a","type":{"type":"array","items":"long"}}]}`,
			[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, "block count -9223372036854775808"},
		{"deep recursion", `{"type":"record","name":"L","fields":[{"name":"next","type":["null","L"]}]}`,
			bytes.Repeat([]byte{0x02}, 20_000), "values nest deeper than 10000"},
		{"overlong varint", `{"type":"record","name":"R","fields":[{"name":"a","type":"long"}]}`,
			bytes.Repeat([]byte{0x80}, 11), "varint longer than 10 bytes"},
		{"bad union index", `{"type":"record","name":"R","fields":[{"name":"a","type":["null","long"]}]}`,
			[]byte{0x04}, "union index 2, want [0, 2)"},
		{"negative union index", `{"type":"record","name":"R","fields":[{"name":"a","type":["null","long"]}]}`,
			[]byte{0x01}, "union index -1"},
		{"bad enum index", `{"type":"record","name":"R","fields":[{"name":"a","type":{"type":"enum","name":"E","symbols":["A"]}}]}`,
			[]byte{0x02}, "enum E index 1, want [0, 1)"},
		{"fixed past the end", `{"type":"record","name":"R","fields":[{"name":"a","type":{"type":"fixed","name":"F","size":16}}]}`,
			[]byte{1, 2}, "fixed F needs 16 bytes, 2 left"},
		{"map key past the end", `{"type":"map","values":"null"}`,
			[]byte{0x02, 0x10, 'a'}, "length 8 with 1 bytes left"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustAvro(t, tc.schema)
			m, err := s.Deserialize("t", tc.in)
			require.Nil(t, m)
			require.ErrorIs(t, err, ErrDeserialize)
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
}

func TestAvroWithinLimits(t *testing.T) {
	t.Run("zero width items up to the budget", func(t *testing.T) {
		s := mustAvro(t, `{"type":"record","name":"R","fields":[{"name":"a","type":{"type":"array","items":"null"}}]}`)
		b := []byte{0x80, 0x80, 0x08, 0x00} // 65536 nulls, then the end
		m, err := s.Deserialize("t", b)
		require.NoError(t, err)
		require.Len(t, m["a"], 1<<16)
	})
	t.Run("deep but allowed recursion", func(t *testing.T) {
		s := mustAvro(t, `{"type":"record","name":"L","fields":[{"name":"next","type":["null","L"]}]}`)
		// Each level is a record and a union: 4,000 levels nest 8,001 deep.
		b := append(bytes.Repeat([]byte{0x02}, 4000), 0x00)
		m, err := s.Deserialize("t", b)
		require.NoError(t, err)
		enc, err := s.Serialize("t", m)
		require.NoError(t, err)
		require.Equal(t, b, enc)
	})
	t.Run("blocks with byte sizes", func(t *testing.T) {
		s := mustAvro(t, `{"type":"record","name":"R","fields":[{"name":"a","type":{"type":"array","items":"int"}}]}`)
		// -2 items in 2 bytes, 1 item, end: [1, 2, 3].
		m, err := s.Deserialize("t", []byte{0x03, 0x04, 0x02, 0x04, 0x02, 0x06, 0x00})
		require.NoError(t, err)
		require.Equal(t, []any{int32(1), int32(2), int32(3)}, m["a"])
	})
}

func TestAvroShapeNames(t *testing.T) {
	for _, tc := range []struct {
		name, schema string
		in           []byte
	}{
		// goavro's own canonical form gets this one wrong at random (it
		// iterates a map to learn names), which is why shapes are built
		// from the schema text.
		{"recursive in a namespace", `{"type":"record","name":"N","namespace":"a.b","fields":[
			{"name":"v","type":"long"},{"name":"next","type":["null","N"]}]}`, []byte{0x02, 0x02, 0x04, 0x00}},
		{"full name reference", `{"type":"record","name":"N","namespace":"a.b","fields":[
			{"name":"next","type":["null","a.b.N"]}]}`, []byte{0x02, 0x00}},
		{"nested namespace", `{"type":"record","name":"R","namespace":"x","fields":[
			{"name":"e","type":{"type":"enum","name":"E","namespace":"y","symbols":["A","B"]}},
			{"name":"f","type":"y.E"}]}`, []byte{0x02, 0x00}},
		{"dotted name sets the namespace", `{"type":"record","name":"p.R","fields":[
			{"name":"f","type":{"type":"fixed","name":"F","size":2}},{"name":"g","type":"p.F"}]}`, []byte{1, 2, 3, 4}},
		{"field-level logical type", `{"type":"record","name":"R","fields":[
			{"name":"t","type":"long","logicalType":"timestamp-millis"}]}`, []byte{0x02}},
		{"unknown logical type", `{"type":"record","name":"R","fields":[
			{"name":"t","type":{"type":"fixed","name":"F","size":1,"logicalType":"nope"}}]}`, []byte{7}},
		{"decimals registered by name", `{"type":"record","name":"R","fields":[
			{"name":"a","type":{"type":"bytes","logicalType":"decimal","precision":4,"scale":1,"name":"Money"}},
			{"name":"b","type":"Money"}]}`, []byte{0x02, 0x01, 0x02, 0x02}},
		{"fixed size as a string", `{"type":"record","name":"R","fields":[
			{"name":"f","type":{"type":"fixed","name":"F","size":"3"}}]}`, []byte{1, 2, 3}},
		{"type object nested in type", `{"type":{"type":"record","name":"R","fields":[{"name":"a","type":{"type":"int"}}]}}`,
			[]byte{0x02}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 20 { // goavro's canonical form can vary; ours must not
				s := mustAvro(t, tc.schema)
				m, err := s.Deserialize("t", tc.in)
				require.NoError(t, err)
				enc, err := s.Serialize("t", m)
				require.NoError(t, err)
				require.Equal(t, tc.in, enc)
			}
		})
	}
}

func TestAvroGoavroPanicsAreErrors(t *testing.T) {
	for _, schema := range []string{
		// goavro asserts precision and scale are float64 when it has seen
		// a bytes decimal before.
		`{"type":"record","name":"R","fields":[
			{"name":"a","type":{"type":"bytes","logicalType":"decimal","precision":4,"scale":1}},
			{"name":"b","type":{"type":"bytes","logicalType":"decimal","precision":4}}]}`,
		`{"type":"record","name":"R","fields":[
			{"name":"a","type":{"type":"string","logicalType":"validated-string","pattern":5}}]}`,
	} {
		_, err := NewAvro(schema)
		require.ErrorIs(t, err, ErrInvalidSchema)
		require.ErrorContains(t, err, "goavro panicked")
	}
}

// TestAvroScanAgreesWithGoavro checks the walk against goavro on every
// prefix of valid encodings: both must find the same end of the value.
func TestAvroScanAgreesWithGoavro(t *testing.T) {
	s := mustAvro(t, fuzzSchema)
	good, err := s.Serialize("t", fuzzSample())
	require.NoError(t, err)
	c := s.(avroSerde).c
	for i := range len(good) + 1 {
		requireScanAgrees(t, c, good[:i])
		requireScanAgrees(t, c, append(good[:i:i], 0xff))
	}
}

// requireScanAgrees checks that checkAvro and goavro agree on where the value
// in b ends: when goavro decodes one, checkAvro accepts b exactly if nothing
// is left over. It calls goavro only on input checkAvro did not find over the
// limits, which goavro could not survive.
func requireScanAgrees(t *testing.T, c *avroCodec, b []byte) {
	t.Helper()
	scanErr := checkAvro(c.shape, b)
	if errors.Is(scanErr, errAvroLimit) {
		return
	}
	_, rest, err := c.codec.NativeFromBinary(b)
	if err != nil {
		return // goavro checks more than the layout (booleans, uuids, map keys)
	}
	if len(rest) == 0 {
		require.NoError(t, scanErr, "the walk rejects a value goavro decodes")
	} else {
		require.ErrorContains(t, scanErr, "trailing bytes")
		require.True(t, strings.HasSuffix(scanErr.Error(), "trailing bytes after the value"))
	}
}

// goavro keeps validated-string patterns in a global map without a lock;
// under -race this test fails if building and decoding are not guarded.
func TestAvroValidatedStringConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 20 {
				s := mustAvro(t, fmt.Sprintf(`{"type":"record","name":"R","fields":[{"name":"a",
					"type":{"type":"string","name":"V","logicalType":"validated-string","pattern":"^x%d_%d$"}}]}`, w, i))
				want := fmt.Sprintf("x%d_%d", w, i)
				b, err := s.Serialize("t", map[string]any{"a": want})
				require.NoError(t, err)
				m, err := s.Deserialize("t", b)
				require.NoError(t, err)
				require.Equal(t, want, m["a"])
				_, err = s.Deserialize("t", []byte{0x02, 'y'})
				require.ErrorIs(t, err, ErrDeserialize)
			}
		})
	}
	wg.Wait()
}
