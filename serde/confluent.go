package serde

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
)

// The Confluent wire format frames a payload written by a schema-registry
// aware serializer:
//
//	byte 0      magic byte, always 0x00
//	bytes 1-4   schema id, big-endian int32, as assigned by the registry
//	bytes 5-    the payload (for Avro, the binary encoding without framing)
const (
	// WireMagic is the first byte of every Confluent wire-format record.
	WireMagic byte = 0x00
	// WireHeaderLen is the length of the Confluent wire-format header: the
	// magic byte and the 4-byte schema id.
	WireHeaderLen = 5
)

// AppendWireHeader appends the Confluent wire-format header for schema id to
// dst and returns the extended slice; the payload goes after it.
func AppendWireHeader(dst []byte, id int32) []byte {
	dst = append(dst, WireMagic)
	return binary.BigEndian.AppendUint32(dst, uint32(id))
}

// ParseWireHeader splits a Confluent wire-format record into its schema id
// and payload. The payload aliases b. An input shorter than WireHeaderLen or
// with a first byte other than WireMagic is an error wrapping ErrDeserialize.
// The id is returned as it is; whether a registry knows it is for the caller
// to find out.
func ParseWireHeader(b []byte) (id int32, payload []byte, err error) {
	if len(b) < WireHeaderLen {
		return 0, nil, fmt.Errorf("%w: wire header: want %d bytes, got %d", ErrDeserialize, WireHeaderLen, len(b))
	}
	if b[0] != WireMagic {
		return 0, nil, fmt.Errorf("%w: wire header: magic byte 0x%02x, want 0x%02x", ErrDeserialize, b[0], WireMagic)
	}
	return int32(binary.BigEndian.Uint32(b[1:WireHeaderLen])), b[WireHeaderLen:], nil
}

// SubjectNameStrategy names the registry subject a schema is registered under
// when a record key (isKey) or value is written to topic. It is called from
// Serialize, so it must be safe for concurrent use, and it must be a pure
// function of its arguments: serdes cache the id per subject.
type SubjectNameStrategy func(topic string, isKey bool) string

// TopicNameStrategy is Confluent's default SubjectNameStrategy: the subject is
// the topic name followed by "-key" for keys or "-value" for values.
func TopicNameStrategy(topic string, isKey bool) string {
	if isKey {
		return topic + "-key"
	}
	return topic + "-value"
}

// RecordNameStrategy returns Confluent's RecordNameStrategy for records whose
// schema has the fully-qualified name fullName ("com.example.Click"): the
// subject is fullName, whatever the topic, so that one subject holds the
// schema of a record type wherever it is written. WithRecordNameStrategy
// takes the name from the serde's schema instead.
func RecordNameStrategy(fullName string) SubjectNameStrategy {
	return func(string, bool) string { return fullName }
}

// TopicRecordNameStrategy returns Confluent's TopicRecordNameStrategy for
// records named fullName: the subject is "<topic>-<fullName>", so that a topic
// can hold several record types, each with its own subject.
// WithTopicRecordNameStrategy takes the name from the serde's schema instead.
func TopicRecordNameStrategy(fullName string) SubjectNameStrategy {
	return func(topic string, _ bool) string { return topic + "-" + fullName }
}

// ConfluentOption configures NewConfluentAvro. Options are applied in order.
type ConfluentOption func(*confluentConfig)

// byRecordName says how a subject is named from the schema's record name.
type byRecordName int

const (
	notByRecordName byRecordName = iota
	recordName                   // RecordNameStrategy
	topicRecordName              // TopicRecordNameStrategy
)

type confluentConfig struct {
	strategy SubjectNameStrategy
	byName   byRecordName // if set, overrides strategy once the schema is known
	isKey    bool
	resolve  bool // WithSchemaResolution
}

// WithSubjectNameStrategy sets how subjects are named; the default is
// TopicNameStrategy. A nil strategy keeps the strategy set before.
func WithSubjectNameStrategy(s SubjectNameStrategy) ConfluentOption {
	return func(c *confluentConfig) {
		if s != nil {
			c.strategy, c.byName = s, notByRecordName
		}
	}
}

// WithRecordNameStrategy names subjects with RecordNameStrategy: the subject
// is the fully-qualified name of the serde's record schema
// ("com.example.Click"), the same for every topic and for keys and values.
// NewConfluentAvro fails with an error wrapping ErrInvalidSchema if the
// top-level schema is not a named record.
func WithRecordNameStrategy() ConfluentOption {
	return func(c *confluentConfig) { c.byName = recordName }
}

// WithTopicRecordNameStrategy names subjects with TopicRecordNameStrategy:
// "<topic>-<full name of the serde's record schema>". NewConfluentAvro fails
// with an error wrapping ErrInvalidSchema if the top-level schema is not a
// named record.
func WithTopicRecordNameStrategy() ConfluentOption {
	return func(c *confluentConfig) { c.byName = topicRecordName }
}

// ForKey makes the serde one for record keys: the subject is named with
// isKey set (by default "<topic>-key"). Without it the serde is for values.
func ForKey() ConfluentOption {
	return func(c *confluentConfig) { c.isKey = true }
}

// WithSchemaResolution makes Deserialize return every record in the shape of
// the serde's own schema, the reader's, whichever schema wrote it, as Avro
// schema resolution does for the usual evolutions: a field the writer's
// schema lacks gets the reader's default, a field the reader's schema lacks
// is dropped, nested records alike. Without it a record comes back with the
// fields of the schema that wrote it.
//
// The record is decoded with its writer's schema, then encoded and decoded
// again with the reader's, so each record not written with the serde's own
// schema costs that much more. It follows no aliases (a renamed field is a
// field removed and one added) and converts types only as goavro's encoder
// accepts them (int to long, for example, but not a plain value to a union
// that holds it). A record the reader's schema cannot hold, such as one that
// lacks a field the reader has no default for, is an error wrapping
// ErrDeserialize.
func WithSchemaResolution() ConfluentOption {
	return func(c *confluentConfig) { c.resolve = true }
}

// NewConfluentAvro returns a Serde for Avro records in the Confluent wire
// format, with schema ids from resolver.
//
// Serialize writes with schema, the writer schema: it asks the resolver for
// the schema's id under the subject the strategy names for the topic (once
// per subject; the id is cached), then writes the wire header with that id and
// the Avro binary encoding of the value. Deserialize reads any schema id the
// resolver can resolve and decodes the payload with that writer's schema,
// compiled once per id and cached; it does not project the value onto the
// serde's own schema (goavro does no schema resolution), so values written
// with older schemas come back with their own fields, unless
// WithSchemaResolution asks for that projection.
//
// Values are in goavro's native form as for NewAvro, and schema must be one
// NewAvro accepts; otherwise, or if resolver is nil, NewConfluentAvro returns
// an error (wrapping ErrInvalidSchema for a bad schema). A nil map serializes
// to nil (a tombstone) and a nil input deserializes to a nil map with no
// error. A resolver error on the write path, or a value that does not match
// the schema, is an error wrapping ErrSerialize. A short header, a magic byte
// other than 0x00, an id the resolver cannot resolve (its error is wrapped
// too), a resolved schema that does not compile, and a payload that is not
// exactly one value of its schema are errors wrapping ErrDeserialize; the
// payload is checked as NewAvro describes before goavro decodes it. Failed
// lookups are not cached, so an id registered later resolves then, but every
// record with an unknown id costs a resolver call.
//
// The resolver is called without a context: a resolver that blocks (an HTTP
// client) should bound its own calls. Each subject and each id is resolved
// once per serde and then cached.
//
// The returned Serde is safe for concurrent use if resolver is.
func NewConfluentAvro(resolver SchemaResolver, schema string, opts ...ConfluentOption) (Serde[map[string]any], error) {
	if resolver == nil {
		return nil, errors.New("serde: confluent avro: nil schema resolver")
	}
	cfg := confluentConfig{strategy: TopicNameStrategy}
	for _, o := range opts {
		o(&cfg)
	}
	writer, err := compileRecordAvro(schema)
	if err != nil {
		return nil, err
	}
	if cfg.byName != notByRecordName {
		name := writer.shape.name
		if writer.shape.kind != avroRecord || name == "" {
			return nil, fmt.Errorf("%w: confluent avro: a record name strategy needs a named record schema", ErrInvalidSchema)
		}
		if cfg.byName == recordName {
			cfg.strategy = RecordNameStrategy(name)
		} else {
			cfg.strategy = TopicRecordNameStrategy(name)
		}
	}
	return &confluentAvro{
		resolver: resolver,
		schema:   schema,
		writer:   writer,
		cfg:      cfg,
		ids:      make(map[string]int32),
		readers:  make(map[int32]*avroCodec),
	}, nil
}

var _ Serde[map[string]any] = (*confluentAvro)(nil)

type confluentAvro struct {
	resolver SchemaResolver
	schema   string
	writer   *avroCodec
	cfg      confluentConfig

	mu      sync.RWMutex
	ids     map[string]int32     // subject → id of the writer schema
	readers map[int32]*avroCodec // id → compiled schema
}

// Serialize implements Serializer.
func (s *confluentAvro) Serialize(topic string, v map[string]any) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	id, err := s.writerID(topic)
	if err != nil {
		return nil, err
	}
	return s.writer.encode(AppendWireHeader(make([]byte, 0, 64), id), v)
}

// writerID returns the id of the writer schema under the topic's subject.
func (s *confluentAvro) writerID(topic string) (int32, error) {
	subject := s.cfg.strategy(topic, s.cfg.isKey)
	s.mu.RLock()
	id, ok := s.ids[subject]
	s.mu.RUnlock()
	if ok {
		return id, nil
	}
	id, err := s.resolver.IDForSchema(subject, s.schema)
	if err != nil {
		return 0, fmt.Errorf("%w: confluent avro: subject %q: %w", ErrSerialize, subject, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids[subject] = id
	if _, ok := s.readers[id]; !ok {
		s.readers[id] = s.writer // the resolver says id names this very schema
	}
	return id, nil
}

// Deserialize implements Deserializer.
func (s *confluentAvro) Deserialize(_ string, b []byte) (map[string]any, error) {
	if b == nil {
		return nil, nil
	}
	id, payload, err := ParseWireHeader(b)
	if err != nil {
		return nil, err
	}
	c, err := s.reader(id)
	if err != nil {
		return nil, err
	}
	m, err := c.decodeRecord(payload)
	if err != nil {
		return nil, fmt.Errorf("%w: confluent avro: schema id %d: %w", ErrDeserialize, id, err)
	}
	if s.cfg.resolve && c != s.writer {
		if m, err = s.project(m); err != nil {
			return nil, fmt.Errorf("%w: confluent avro: schema id %d: cannot read as the serde's schema: %w", ErrDeserialize, id, err)
		}
	}
	return m, nil
}

// project returns m, decoded with another schema, in the shape of the
// serde's own: goavro's encoder fills in the defaults of the fields m lacks
// and skips the keys the schema has no field for, and the decoder returns
// exactly the schema's fields.
func (s *confluentAvro) project(m map[string]any) (map[string]any, error) {
	b, err := s.writer.codec.BinaryFromNative(nil, m)
	if err != nil {
		return nil, err
	}
	return s.writer.decodeRecord(b)
}

// reader returns the compiled schema for id, resolving it the first time.
func (s *confluentAvro) reader(id int32) (*avroCodec, error) {
	s.mu.RLock()
	c, ok := s.readers[id]
	s.mu.RUnlock()
	if ok {
		return c, nil
	}
	schema, err := s.resolver.SchemaByID(id)
	if err != nil {
		return nil, fmt.Errorf("%w: confluent avro: schema id %d: %w", ErrDeserialize, id, err)
	}
	c, err = compileRecordAvro(schema)
	if err != nil {
		return nil, fmt.Errorf("%w: confluent avro: schema id %d: %w", ErrDeserialize, id, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if prev, ok := s.readers[id]; ok {
		return prev, nil
	}
	s.readers[id] = c
	return c, nil
}
