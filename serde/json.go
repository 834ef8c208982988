package serde

import (
	"encoding/json"
	"fmt"
	"strings"
)

// JSON returns a Serde that encodes values of type T with encoding/json.
//
// Serialize is json.Marshal; a value it cannot encode (a channel, a NaN float,
// a cycle, a failing MarshalJSON) is an error wrapping ErrSerialize and the
// encoding/json error. Serialize always writes a JSON document, so a nil
// pointer, map or slice encodes to "null", not to a tombstone.
//
// Deserialize is json.Unmarshal into a new T. A nil input (a tombstone)
// decodes to the zero value of T with no error. Anything else that is not
// exactly one JSON document of a shape json.Unmarshal accepts for T — empty
// input, malformed or truncated JSON, trailing data, a type mismatch — is an
// error wrapping both ErrDeserialize and the encoding/json error, so
// errors.As(err, new(*json.SyntaxError)) works. As with json.Unmarshal,
// unknown object fields are ignored and invalid UTF-8 in strings is replaced
// by U+FFFD.
//
// The returned Serde is stateless and safe for concurrent use, provided T's
// own MarshalJSON and UnmarshalJSON methods, if any, are.
func JSON[T any]() Serde[T] { return jsonSerde[T]{} }

var _ Serde[struct{}] = jsonSerde[struct{}]{}

type jsonSerde[T any] struct{}

// Serialize implements Serializer.
func (jsonSerde[T]) Serialize(_ string, v T) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, wrapJSON(ErrSerialize, "", err)
	}
	return b, nil
}

// Deserialize implements Deserializer.
func (jsonSerde[T]) Deserialize(_ string, b []byte) (T, error) {
	var v T
	if b == nil {
		return v, nil
	}
	if err := json.Unmarshal(b, &v); err != nil {
		var zero T
		return zero, wrapJSON(ErrDeserialize, "", err)
	}
	return v, nil
}

// wrapJSON wraps an encoding/json error in sentinel, with context (empty or
// ending in ": ") and "json: " in front of it unless the error already starts
// with that, as some encoding/json errors do.
func wrapJSON(sentinel error, context string, err error) error {
	if strings.HasPrefix(err.Error(), "json: ") {
		return fmt.Errorf("%w: %s%w", sentinel, context, err)
	}
	return fmt.Errorf("%w: %sjson: %w", sentinel, context, err)
}
