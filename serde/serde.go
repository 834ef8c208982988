// Package serde turns typed keys and values into bytes and back.
//
// A Serde[T] pairs a Serializer[T] and a Deserializer[T]. weir ships serdes for
// the common Kafka payloads — String, Bytes, Int64, Float64, JSON[T], Avro
// (through goavro: NewAvro for goavro's native form, NewAvroTyped for Go
// types) — and the Confluent wire format (magic byte + 4-byte schema id)
// around Avro: NewConfluentAvro, with schema ids from a SchemaResolver such as
// NewMemoryRegistry, and the AppendWireHeader and ParseWireHeader helpers.
//
// Every deserializer returns an error on bad bytes; none panics. Errors wrap
// ErrDeserialize so callers can route them (fail, skip or dead-letter):
//
//	s := serde.String()
//	b, _ := s.Serialize("words", "hello")
//	v, err := s.Deserialize("words", b)
//	if errors.Is(err, serde.ErrDeserialize) { /* bad input */ }
//
// A nil input is a Kafka tombstone: every deserializer decodes it without an
// error, to the zero value or a nil map. Only nil is a tombstone; an empty
// non-nil input is decoded like any other, and is an error where the format
// has no empty encoding.
//
// Serdes are pure: no network, no clock. All serdes in this package are safe
// for concurrent use.
package serde

// Serializer encodes values of type T. The topic is the one the bytes are
// written to; most serializers ignore it, schema-registry serializers use it to
// pick a subject.
type Serializer[T any] interface {
	Serialize(topic string, v T) ([]byte, error)
}

// Deserializer decodes values of type T. A nil or empty input is decoded as the
// serde documents it (usually the zero value); malformed input is an error
// wrapping ErrDeserialize.
type Deserializer[T any] interface {
	Deserialize(topic string, b []byte) (T, error)
}

// Serde is a Serializer and a Deserializer for the same type.
type Serde[T any] interface {
	Serializer[T]
	Deserializer[T]
}
