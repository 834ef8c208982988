package serde

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Compile-time checks that the primitive serdes implement Serde.
var (
	_ Serde[string]  = stringSerde{}
	_ Serde[[]byte]  = bytesSerde{}
	_ Serde[int64]   = int64Serde{}
	_ Serde[float64] = float64Serde{}
)

// String returns a Serde for UTF-8 strings, byte for byte like Kafka's
// StringSerializer. Deserialize copies the input into a new string and never
// fails: a nil or empty input decodes to "", and invalid UTF-8 is kept as is.
// Serialize never fails either; "" encodes to an empty, non-nil slice.
//
// The returned Serde is stateless and safe for concurrent use.
func String() Serde[string] { return stringSerde{} }

type stringSerde struct{}

// Serialize implements Serializer.
func (stringSerde) Serialize(_ string, v string) ([]byte, error) {
	return []byte(v), nil
}

// Deserialize implements Deserializer.
func (stringSerde) Deserialize(_ string, b []byte) (string, error) {
	return string(b), nil
}

// Bytes returns a Serde for raw byte slices, like Kafka's BytesSerializer.
// Both directions return the slice they were given, without copying: the
// caller must not modify a slice after handing it over. A nil input decodes to
// nil (a tombstone) and an empty input to an empty slice; nothing fails.
//
// The returned Serde is stateless and safe for concurrent use.
func Bytes() Serde[[]byte] { return bytesSerde{} }

type bytesSerde struct{}

// Serialize implements Serializer.
func (bytesSerde) Serialize(_ string, v []byte) ([]byte, error) { return v, nil }

// Deserialize implements Deserializer.
func (bytesSerde) Deserialize(_ string, b []byte) ([]byte, error) { return b, nil }

// Int64 returns a Serde for int64 values encoded as 8 bytes big-endian, the
// format of Kafka's LongSerializer and LongDeserializer.
//
// A nil input (a tombstone) decodes to 0 with no error. Any input that is not
// nil and not exactly 8 bytes long, including an empty non-nil slice, is an
// error wrapping ErrDeserialize that names the length.
//
// The returned Serde is stateless and safe for concurrent use.
func Int64() Serde[int64] { return int64Serde{} }

type int64Serde struct{}

// Serialize implements Serializer.
func (int64Serde) Serialize(_ string, v int64) ([]byte, error) {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), uint64(v)), nil
}

// Deserialize implements Deserializer.
func (int64Serde) Deserialize(_ string, b []byte) (int64, error) {
	u, err := fixed8(b, "int64")
	return int64(u), err
}

// Float64 returns a Serde for float64 values encoded as 8 bytes big-endian
// IEEE 754, the format of Kafka's DoubleSerializer and DoubleDeserializer.
// Every bit pattern is kept, including NaN payloads and negative zero.
//
// A nil input (a tombstone) decodes to 0 with no error. Any input that is not
// nil and not exactly 8 bytes long, including an empty non-nil slice, is an
// error wrapping ErrDeserialize that names the length.
//
// The returned Serde is stateless and safe for concurrent use.
func Float64() Serde[float64] { return float64Serde{} }

type float64Serde struct{}

// Serialize implements Serializer.
func (float64Serde) Serialize(_ string, v float64) ([]byte, error) {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), math.Float64bits(v)), nil
}

// Deserialize implements Deserializer.
func (float64Serde) Deserialize(_ string, b []byte) (float64, error) {
	u, err := fixed8(b, "float64")
	return math.Float64frombits(u), err
}

// fixed8 reads the 8-byte big-endian word of the Int64 and Float64 formats.
// nil is a tombstone and reads as 0; every other length but 8 is an error.
func fixed8(b []byte, what string) (uint64, error) {
	if b == nil {
		return 0, nil
	}
	if len(b) != 8 {
		return 0, fmt.Errorf("%w: %s: want 8 bytes, got %d", ErrDeserialize, what, len(b))
	}
	return binary.BigEndian.Uint64(b), nil
}
