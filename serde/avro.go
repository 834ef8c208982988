package serde

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/linkedin/goavro/v2"
)

// NewAvro returns a Serde for Avro binary data (no header, no framing) in
// goavro's native form. The schema is the JSON text of an Avro schema whose
// top-level type is a record or a map; anything else, or a schema goavro
// rejects, is an error wrapping ErrInvalidSchema.
//
// Values are what goavro's Codec.NativeFromBinary returns and
// Codec.BinaryFromNative accepts: a record or map is a map[string]any, a long
// an int64, an int an int32, a float a float32, bytes and fixed a []byte, an
// enum a string, an array a []any, a non-null union branch a single-entry
// map[string]any keyed by the branch's type name (nil for null), and logical
// types their Go types (time.Time, time.Duration, *big.Rat). Serialize also
// accepts the looser Go types goavro does (an int for a long, for example) and
// fills in missing record fields that have defaults.
//
// Decoded bytes and fixed values are sub-slices of the input, as goavro
// returns them: do not modify the input while the value is in use, and copy
// such a slice before appending to it.
//
// goavro v2.15.0 mishandles decimals in a fixed: zero fails to encode, and a
// value too large for the fixed encodes as zero without an error. Prefer
// bytes decimals.
//
// A nil map serializes to nil (a tombstone) and a nil input deserializes to a
// nil map with no error. A value that does not match the schema is an error
// wrapping ErrSerialize. Input that is not exactly one value of the schema —
// truncated, malformed or followed by trailing bytes — is an error wrapping
// ErrDeserialize. Before goavro decodes anything the input is checked against
// the schema without allocating, because goavro trusts the block counts of
// arrays and maps: array and map blocks may claim no more items than the bytes
// left can hold, at most 65,536 items of an empty type (such as null) are
// allowed per input, and values may nest at most 10,000 deep.
//
// The returned Serde is safe for concurrent use.
func NewAvro(schema string) (Serde[map[string]any], error) {
	c, err := compileRecordAvro(schema)
	if err != nil {
		return nil, err
	}
	return avroSerde{c: c}, nil
}

// NewAvroTyped returns a Serde for Avro binary data (no header, no framing)
// that converts between Avro and a Go type T through JSON: Serialize encodes
// the value with encoding/json, reads that JSON with goavro's
// Codec.NativeFromTextual and writes Avro binary; Deserialize decodes Avro
// binary to goavro's native form, writes it as JSON with
// Codec.TextualFromNative and decodes that with encoding/json into a T.
//
// The JSON is standard JSON, not the Avro JSON encoding: the codec is goavro's
// NewCodecForStandardJSONFull, so a union value is the bare value rather than
// a {"type": value} object, which lets a pointer field stand for a
// ["null", ...] union. Consequences of going through JSON:
//   - T's JSON may only have fields the schema has (tag others `json:"-"`);
//     missing fields take their schema defaults, if any.
//   - Avro bytes and fixed are JSON strings of one character per byte (code
//     points 0 to 255), so map them to a Go string, not a []byte (which
//     encoding/json writes as base64). goavro keeps only the low byte of a
//     larger code point, without an error.
//   - goavro writes a NaN float as JSON null, which decodes to 0, and an
//     infinity as 1e999, which encoding/json cannot decode into a float.
//   - goavro's JSON reader reads the value of each union again for every
//     union it is nested in, so Serialize takes time quadratic in how deep
//     unions nest: fine for optional fields, slow for long recursive chains
//     (a linked list of a thousand nodes takes seconds). Use NewAvro for
//     those.
//
// Unlike NewAvro, any top-level type is allowed. A nil input deserializes to
// the zero value of T with no error; Serialize always encodes. Errors wrap
// ErrInvalidSchema, ErrSerialize and ErrDeserialize as for NewAvro, and
// decoding checks its input in the same way.
//
// The returned Serde is safe for concurrent use, provided T's own MarshalJSON
// and UnmarshalJSON methods, if any, are.
func NewAvroTyped[T any](schema string) (Serde[T], error) {
	c, err := compileAvro(schema, true)
	if err != nil {
		return nil, err
	}
	return avroTypedSerde[T]{c: c}, nil
}

// avroCodec is a compiled schema: the goavro codec and the shape of its binary
// encoding, used to check input before goavro decodes it (see avroscan.go).
// It is immutable and safe for concurrent use.
type avroCodec struct {
	codec *goavro.Codec
	shape *avroShape
	// patterns is set if the schema uses goavro's "validated-string"
	// logical type; see goavroMu.
	patterns bool
}

// goavroMu guards goavro v2.15.0's one piece of global state: it keeps the
// regular expressions of "validated-string" logical types in a package-level
// map without a lock, writes it while building a codec and reads it while
// decoding such strings, binary or JSON. Unguarded, building a codec while
// another goroutine builds one, or decodes with one that has such strings,
// can end the process with "concurrent map writes" (a fatal error, not a
// panic). So codecs are built holding goavroMu, and codecs with such strings
// decode holding it for reading.
var goavroMu sync.RWMutex

// readLock holds goavroMu for reading if c needs it and returns the unlock.
func (c *avroCodec) readLock() (unlock func()) {
	if !c.patterns {
		return func() {}
	}
	goavroMu.RLock()
	return goavroMu.RUnlock
}

// compileAvro compiles schema with the plain goavro codec, or with the
// standard-JSON one if standardJSON is set. The binary encoding is the same.
func compileAvro(schema string, standardJSON bool) (*avroCodec, error) {
	codec, err := newGoavroCodec(schema, standardJSON)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidSchema, err)
	}
	shape, patterns, err := parseAvroShape(schema)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidSchema, err)
	}
	return &avroCodec{codec: codec, shape: shape, patterns: patterns}, nil
}

// newGoavroCodec calls goavro's codec constructor and turns its panics into
// errors. goavro v2.15.0 panics on some schemas it should reject, with
// unchecked type assertions: a second bytes decimal without "scale" or
// "precision", a validated-string whose pattern is not a string. Schemas
// reach here from constructors and, through a SchemaResolver, from
// Deserialize, where a panic must not escape; recovering is the only guard,
// since the panic happens deep inside goavro.
func newGoavroCodec(schema string, standardJSON bool) (c *goavro.Codec, err error) {
	goavroMu.Lock()
	defer goavroMu.Unlock()
	defer func() {
		if r := recover(); r != nil {
			c, err = nil, fmt.Errorf("goavro panicked: %v", r)
		}
	}()
	if standardJSON {
		return goavro.NewCodecForStandardJSONFull(schema)
	}
	return goavro.NewCodec(schema)
}

// decode decodes b, which must hold exactly one value, to goavro's native form.
// Its errors say what is wrong; callers wrap them with ErrDeserialize.
func (c *avroCodec) decode(b []byte) (any, error) {
	if err := checkAvro(c.shape, b); err != nil {
		return nil, err
	}
	unlock := c.readLock()
	v, rest, err := c.codec.NativeFromBinary(b)
	unlock()
	if err != nil {
		return nil, err
	}
	if len(rest) != 0 { // checkAvro already rules this out; kept as a guard
		return nil, fmt.Errorf("%d trailing bytes after the value", len(rest))
	}
	return v, nil
}

// encode appends the binary encoding of the native value v to dst. The result
// is never nil, not even for a value whose encoding is empty (a record with
// no fields), because nil is a tombstone. Errors wrap ErrSerialize.
func (c *avroCodec) encode(dst []byte, v any) ([]byte, error) {
	b, err := c.codec.BinaryFromNative(dst, v)
	if err != nil {
		return nil, fmt.Errorf("%w: avro: %w", ErrSerialize, err)
	}
	if b == nil {
		b = []byte{}
	}
	return b, nil
}

// compileRecordAvro compiles a schema for goavro's native form, whose values
// must decode to a map[string]any: the top-level type must be a record or a
// map.
func compileRecordAvro(schema string) (*avroCodec, error) {
	c, err := compileAvro(schema, false)
	if err != nil {
		return nil, err
	}
	if k := c.shape.kind; k != avroRecord && k != avroMap {
		return nil, fmt.Errorf("%w: top-level type must be a record or a map", ErrInvalidSchema)
	}
	return c, nil
}

// decodeRecord decodes b to a map[string]any, as decode does.
func (c *avroCodec) decodeRecord(b []byte) (map[string]any, error) {
	v, err := c.decode(b)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok { // compileRecordAvro ruled this out; kept as a guard
		return nil, fmt.Errorf("decoded %T, want a record or a map", v)
	}
	return m, nil
}

var (
	_ Serde[map[string]any] = avroSerde{}
	_ Serde[struct{}]       = avroTypedSerde[struct{}]{}
)

type avroSerde struct{ c *avroCodec }

// Serialize implements Serializer.
func (s avroSerde) Serialize(_ string, v map[string]any) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	return s.c.encode(nil, v)
}

// Deserialize implements Deserializer.
func (s avroSerde) Deserialize(_ string, b []byte) (map[string]any, error) {
	if b == nil {
		return nil, nil
	}
	m, err := s.c.decodeRecord(b)
	if err != nil {
		return nil, fmt.Errorf("%w: avro: %w", ErrDeserialize, err)
	}
	return m, nil
}

type avroTypedSerde[T any] struct{ c *avroCodec }

// Serialize implements Serializer.
func (s avroTypedSerde[T]) Serialize(_ string, v T) ([]byte, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return nil, wrapJSON(ErrSerialize, "avro: ", err)
	}
	unlock := s.c.readLock()
	native, rest, err := s.c.codec.NativeFromTextual(asciiJSON(j))
	unlock()
	if err != nil {
		return nil, fmt.Errorf("%w: avro: %w", ErrSerialize, err)
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return nil, fmt.Errorf("%w: avro: %d bytes of json left over", ErrSerialize, len(rest))
	}
	return s.c.encode(nil, native)
}

// Deserialize implements Deserializer.
func (s avroTypedSerde[T]) Deserialize(_ string, b []byte) (T, error) {
	var v T
	if b == nil {
		return v, nil
	}
	native, err := s.c.decode(b)
	if err != nil {
		return v, fmt.Errorf("%w: avro: %w", ErrDeserialize, err)
	}
	j, err := s.c.codec.TextualFromNative(nil, native)
	if err != nil {
		return v, fmt.Errorf("%w: avro: %w", ErrDeserialize, err)
	}
	if err := json.Unmarshal(j, &v); err != nil {
		var zero T
		return zero, wrapJSON(ErrDeserialize, "avro: ", err)
	}
	return v, nil
}

// asciiJSON returns the JSON text j with every non-ASCII character escaped as
// \uXXXX (a surrogate pair above U+FFFF), which means the same JSON. goavro
// v2.15.0 reads a raw non-ASCII character in a JSON string as its UTF-8
// bytes: right for an Avro string, but wrong for bytes and fixed, whose JSON
// form has one code point per byte, so that "\u00ff" (what goavro writes for
// the byte 0xff) decoded and encoded again would become the bytes c3 bf. It
// reads \u00XX as the byte XX in bytes and fixed, and as the character in a
// string. j must be valid UTF-8, as json.Marshal makes it.
func asciiJSON(j []byte) []byte {
	i := 0
	for i < len(j) && j[i] < utf8.RuneSelf {
		i++
	}
	if i == len(j) {
		return j
	}
	const hex = "0123456789abcdef"
	u := func(out []byte, r rune) []byte {
		return append(out, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
	}
	out := make([]byte, 0, len(j)+len(j)/2)
	out = append(out, j[:i]...)
	for rest := j[i:]; len(rest) > 0; {
		r, n := utf8.DecodeRune(rest)
		rest = rest[n:]
		switch {
		case r < utf8.RuneSelf:
			out = append(out, byte(r))
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			out = u(u(out, r1), r2)
		default:
			out = u(out, r)
		}
	}
	return out
}
