package serde

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWireHeader(t *testing.T) {
	for _, tc := range []struct {
		id  int32
		enc []byte
	}{
		{0, []byte{0, 0, 0, 0, 0}},
		{1, []byte{0, 0, 0, 0, 1}},
		{0x01020304, []byte{0, 1, 2, 3, 4}},
		{-1, []byte{0, 0xff, 0xff, 0xff, 0xff}},
	} {
		t.Run(fmt.Sprint(tc.id), func(t *testing.T) {
			b := AppendWireHeader(nil, tc.id)
			require.Equal(t, tc.enc, b)
			b = append(b, "payload"...)
			id, payload, err := ParseWireHeader(b)
			require.NoError(t, err)
			require.Equal(t, tc.id, id)
			require.Equal(t, []byte("payload"), payload)
		})
	}
	t.Run("appends", func(t *testing.T) {
		require.Equal(t, []byte{'x', 0, 0, 0, 0, 7}, AppendWireHeader([]byte("x"), 7))
	})
	t.Run("empty payload", func(t *testing.T) {
		id, payload, err := ParseWireHeader([]byte{0, 0, 0, 0, 9})
		require.NoError(t, err)
		require.Equal(t, int32(9), id)
		require.NotNil(t, payload)
		require.Empty(t, payload)
	})
}

func TestParseWireHeaderErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      []byte
		wantErr string
	}{
		{"nil", nil, "wire header: want 5 bytes, got 0"},
		{"short", []byte{0, 0, 0, 1}, "wire header: want 5 bytes, got 4"},
		{"bad magic", []byte{1, 0, 0, 0, 1, 2}, "wire header: magic byte 0x01, want 0x00"},
		{"json", []byte(`{"a":1}`), "wire header: magic byte 0x7b, want 0x00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := ParseWireHeader(tc.in)
			require.ErrorIs(t, err, ErrDeserialize)
			require.EqualError(t, err, "serde: cannot deserialize: "+tc.wantErr)
		})
	}
}

func FuzzParseWireHeader(f *testing.F) {
	for _, s := range [][]byte{nil, {}, {0}, {0, 0, 0, 0, 1}, {0, 0, 0, 0, 1, 2, 3}, {1, 0, 0, 0, 1}} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		id, payload, err := ParseWireHeader(b)
		if err != nil {
			require.ErrorIs(t, err, ErrDeserialize)
			require.True(t, len(b) < WireHeaderLen || b[0] != WireMagic)
			return
		}
		require.Equal(t, b, append(AppendWireHeader(nil, id), payload...))
	})
}

func TestTopicNameStrategy(t *testing.T) {
	require.Equal(t, "clicks-value", TopicNameStrategy("clicks", false))
	require.Equal(t, "clicks-key", TopicNameStrategy("clicks", true))
}

const pointSchemaV1 = `{"type":"record","name":"Point","fields":[{"name":"x","type":"long"}]}`
const pointSchemaV2 = `{"type":"record","name":"Point","fields":[{"name":"x","type":"long"},{"name":"y","type":"long","default":0}]}`

func TestConfluentAvroRoundTrip(t *testing.T) {
	reg := NewMemoryRegistry()
	s, err := NewConfluentAvro(reg, pointSchemaV1)
	require.NoError(t, err)

	b, err := s.Serialize("points", map[string]any{"x": int64(5)})
	require.NoError(t, err)
	require.Equal(t, []byte{0, 0, 0, 0, 1, 0x0a}, b)
	require.Equal(t, []string{"points-value"}, reg.Subjects())

	m, err := s.Deserialize("points", b)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"x": int64(5)}, m)

	// Another topic registers under its own subject, with the same id.
	b2, err := s.Serialize("other", map[string]any{"x": int64(5)})
	require.NoError(t, err)
	require.Equal(t, b, b2)
	require.Equal(t, []string{"other-value", "points-value"}, reg.Subjects())
}

func TestConfluentAvroKeysAndStrategy(t *testing.T) {
	reg := NewMemoryRegistry()
	keys, err := NewConfluentAvro(reg, pointSchemaV1, ForKey())
	require.NoError(t, err)
	_, err = keys.Serialize("points", map[string]any{"x": int64(1)})
	require.NoError(t, err)
	require.Equal(t, []string{"points-key"}, reg.Subjects())

	custom, err := NewConfluentAvro(reg, pointSchemaV1, ForKey(), WithSubjectNameStrategy(
		func(topic string, isKey bool) string { return fmt.Sprintf("weir.%s.%v", topic, isKey) }))
	require.NoError(t, err)
	_, err = custom.Serialize("points", map[string]any{"x": int64(1)})
	require.NoError(t, err)
	require.Equal(t, []string{"points-key", "weir.points.true"}, reg.Subjects())

	keepDefault, err := NewConfluentAvro(reg, pointSchemaV1, WithSubjectNameStrategy(nil))
	require.NoError(t, err)
	_, err = keepDefault.Serialize("points", map[string]any{"x": int64(1)})
	require.NoError(t, err)
	require.Contains(t, reg.Subjects(), "points-value")
}

func TestConfluentAvroReadsOtherWriters(t *testing.T) {
	reg := NewMemoryRegistry()
	v1, err := NewConfluentAvro(reg, pointSchemaV1)
	require.NoError(t, err)
	v2, err := NewConfluentAvro(reg, pointSchemaV2)
	require.NoError(t, err)

	old, err := v1.Serialize("points", map[string]any{"x": int64(1)})
	require.NoError(t, err)
	cur, err := v2.Serialize("points", map[string]any{"x": int64(2), "y": int64(3)})
	require.NoError(t, err)
	require.Equal(t, []int32{1, 2}, reg.Versions("points-value"))

	// Each is read with its writer's schema, whichever serde reads it.
	for _, s := range []Serde[map[string]any]{v1, v2} {
		m, err := s.Deserialize("points", old)
		require.NoError(t, err)
		require.Equal(t, map[string]any{"x": int64(1)}, m)
		m, err = s.Deserialize("points", cur)
		require.NoError(t, err)
		require.Equal(t, map[string]any{"x": int64(2), "y": int64(3)}, m)
	}
}

func TestConfluentAvroTombstone(t *testing.T) {
	s, err := NewConfluentAvro(NewMemoryRegistry(), pointSchemaV1)
	require.NoError(t, err)
	b, err := s.Serialize("t", nil)
	require.NoError(t, err)
	require.Nil(t, b)
	m, err := s.Deserialize("t", nil)
	require.NoError(t, err)
	require.Nil(t, m)
}

func TestNewConfluentAvroErrors(t *testing.T) {
	_, err := NewConfluentAvro(nil, pointSchemaV1)
	require.EqualError(t, err, "serde: confluent avro: nil schema resolver")
	_, err = NewConfluentAvro(NewMemoryRegistry(), `{`)
	require.ErrorIs(t, err, ErrInvalidSchema)
	_, err = NewConfluentAvro(NewMemoryRegistry(), `"long"`)
	require.ErrorIs(t, err, ErrInvalidSchema)
}

func TestConfluentAvroDeserializeErrors(t *testing.T) {
	reg := NewMemoryRegistry()
	s, err := NewConfluentAvro(reg, pointSchemaV1)
	require.NoError(t, err)
	good, err := s.Serialize("points", map[string]any{"x": int64(5)})
	require.NoError(t, err)
	badSchemaID, err := reg.IDForSchema("junk", `{"type":`)
	require.NoError(t, err)
	longID, err := reg.IDForSchema("longs", `"long"`)
	require.NoError(t, err)

	for _, tc := range []struct {
		name    string
		in      []byte
		wantErr string
		is      error
	}{
		{"empty", []byte{}, "serde: cannot deserialize: wire header: want 5 bytes, got 0", nil},
		{"short header", good[:3], "serde: cannot deserialize: wire header: want 5 bytes, got 3", nil},
		{"bad magic", append([]byte{9}, good[1:]...), "serde: cannot deserialize: wire header: magic byte 0x09, want 0x00", nil},
		{"unknown id", append(AppendWireHeader(nil, 42), good[5:]...),
			"serde: cannot deserialize: confluent avro: schema id 42: serde: schema not found: id 42", ErrSchemaNotFound},
		{"schema does not compile", append(AppendWireHeader(nil, badSchemaID), good[5:]...),
			"serde: cannot deserialize: confluent avro: schema id 2: serde: invalid avro schema: ", ErrInvalidSchema},
		{"schema not a record", append(AppendWireHeader(nil, longID), good[5:]...),
			"serde: cannot deserialize: confluent avro: schema id 3: serde: invalid avro schema: top-level type must be a record or a map", ErrInvalidSchema},
		{"empty payload", good[:5], "serde: cannot deserialize: confluent avro: schema id 1: malformed avro binary: truncated varint", nil},
		{"trailing bytes", append(append([]byte{}, good...), 1, 2), "serde: cannot deserialize: confluent avro: schema id 1: malformed avro binary: 2 trailing bytes after the value", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := s.Deserialize("points", tc.in)
			require.Nil(t, m)
			require.ErrorIs(t, err, ErrDeserialize)
			require.ErrorContains(t, err, tc.wantErr)
			if tc.is != nil {
				require.ErrorIs(t, err, tc.is)
			}
		})
	}
}

// flakyResolver fails until told otherwise and counts its calls.
type flakyResolver struct {
	*MemoryRegistry
	fail          atomic.Bool
	byID, forSchm atomic.Int32
}

var errRegistryDown = errors.New("registry down")

func (r *flakyResolver) SchemaByID(id int32) (string, error) {
	r.byID.Add(1)
	if r.fail.Load() {
		return "", errRegistryDown
	}
	return r.MemoryRegistry.SchemaByID(id)
}

func (r *flakyResolver) IDForSchema(subject, schema string) (int32, error) {
	r.forSchm.Add(1)
	if r.fail.Load() {
		return 0, errRegistryDown
	}
	return r.MemoryRegistry.IDForSchema(subject, schema)
}

func TestConfluentAvroResolverUseAndCaching(t *testing.T) {
	r := &flakyResolver{MemoryRegistry: NewMemoryRegistry()}
	r.fail.Store(true)
	w, err := NewConfluentAvro(r, pointSchemaV1)
	require.NoError(t, err)

	_, err = w.Serialize("points", map[string]any{"x": int64(1)})
	require.ErrorIs(t, err, ErrSerialize)
	require.ErrorIs(t, err, errRegistryDown)
	require.EqualError(t, err, `serde: cannot serialize: confluent avro: subject "points-value": registry down`)

	r.fail.Store(false)
	b, err := w.Serialize("points", map[string]any{"x": int64(1)})
	require.NoError(t, err, "failures are not cached")
	for range 3 {
		_, err = w.Serialize("points", map[string]any{"x": int64(1)})
		require.NoError(t, err)
		_, err = w.Deserialize("points", b)
		require.NoError(t, err)
	}
	require.Equal(t, int32(2), r.forSchm.Load(), "one failed and one good lookup, then the cache")
	require.Zero(t, r.byID.Load(), "the writer's own id needs no lookup")

	// A second serde reads the id once, then from its cache.
	rd, err := NewConfluentAvro(r, pointSchemaV2)
	require.NoError(t, err)
	r.fail.Store(true)
	_, err = rd.Deserialize("points", b)
	require.ErrorIs(t, err, ErrDeserialize)
	require.ErrorIs(t, err, errRegistryDown)
	r.fail.Store(false)
	for range 3 {
		m, err := rd.Deserialize("points", b)
		require.NoError(t, err)
		require.Equal(t, map[string]any{"x": int64(1)}, m)
	}
	require.Equal(t, int32(2), r.byID.Load())
}

func TestConfluentAvroSerializeMismatch(t *testing.T) {
	s, err := NewConfluentAvro(NewMemoryRegistry(), pointSchemaV1)
	require.NoError(t, err)
	_, err = s.Serialize("points", map[string]any{"x": "one"})
	require.ErrorIs(t, err, ErrSerialize)
	require.ErrorContains(t, err, "serde: cannot serialize: avro: ")
}

func TestConfluentAvroConcurrent(t *testing.T) {
	reg := NewMemoryRegistry()
	v1, err := NewConfluentAvro(reg, pointSchemaV1)
	require.NoError(t, err)
	v2, err := NewConfluentAvro(reg, pointSchemaV2)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 100 {
				writer, reader := v1, v2
				if (w+i)%2 == 0 {
					writer, reader = v2, v1
				}
				topic := fmt.Sprintf("topic-%d", i%5)
				b, err := writer.Serialize(topic, map[string]any{"x": int64(i)})
				require.NoError(t, err)
				m, err := reader.Deserialize(topic, b)
				require.NoError(t, err)
				require.Equal(t, int64(i), m["x"])
			}
		})
	}
	wg.Wait()
	require.Len(t, reg.Subjects(), 5)
}

func FuzzConfluentAvro(f *testing.F) {
	reg := NewMemoryRegistry()
	click, err := NewConfluentAvro(reg, clickSchema)
	require.NoError(f, err)
	point, err := NewConfluentAvro(reg, pointSchemaV2)
	require.NoError(f, err)
	fz, err := NewConfluentAvro(reg, fuzzSchema)
	require.NoError(f, err)
	writers := make(map[int32]Serde[map[string]any]) // by schema id
	for _, s := range []struct {
		serde Serde[map[string]any]
		v     map[string]any
	}{{click, sampleClick()}, {point, map[string]any{"x": int64(-3), "y": int64(4)}}, {fz, fuzzSample()}} {
		b, err := s.serde.Serialize("t", s.v)
		require.NoError(f, err)
		id, _, err := ParseWireHeader(b)
		require.NoError(f, err)
		writers[id] = s.serde
		for _, seed := range avroSeeds(b) {
			f.Add(seed)
		}
		f.Add(append([]byte{1}, b[1:]...))
	}
	f.Add(append(AppendWireHeader(nil, 77), 0))
	f.Add(append(AppendWireHeader(nil, 2), 0xfe, 0xff, 0xff, 0xff, 0x0f))
	f.Fuzz(func(t *testing.T, b []byte) {
		// Any of the three reads all three schema ids.
		m, err := point.Deserialize("t", b)
		if err != nil {
			require.ErrorIs(t, err, ErrDeserialize)
			return
		}
		if b == nil {
			require.Nil(t, m)
			return
		}
		id, _, err := ParseWireHeader(b)
		require.NoError(t, err)
		// Re-encode with the writer's own schema.
		enc, err := writers[id].Serialize("t", m)
		require.NoError(t, err)
		gotID, _, err := ParseWireHeader(enc)
		require.NoError(t, err)
		require.Equal(t, id, gotID)
		m2, err := click.Deserialize("t", enc)
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("%v", m), fmt.Sprintf("%v", m2))
	})
}

func TestRecordNameStrategies(t *testing.T) {
	require.Equal(t, "com.example.Click", RecordNameStrategy("com.example.Click")("clicks", false))
	require.Equal(t, "com.example.Click", RecordNameStrategy("com.example.Click")("other", true))
	require.Equal(t, "clicks-com.example.Click", TopicRecordNameStrategy("com.example.Click")("clicks", false))
	require.Equal(t, "clicks-com.example.Click", TopicRecordNameStrategy("com.example.Click")("clicks", true))

	const click = `{"type":"record","name":"Click","namespace":"com.example","fields":[{"name":"x","type":"long"}]}`
	for _, tc := range []struct {
		name string
		opts []ConfluentOption
		want string
	}{
		{"record", []ConfluentOption{WithRecordNameStrategy()}, "com.example.Click"},
		{"record, key", []ConfluentOption{ForKey(), WithRecordNameStrategy()}, "com.example.Click"},
		{"topic record", []ConfluentOption{WithTopicRecordNameStrategy()}, "clicks-com.example.Click"},
		{"later option wins", []ConfluentOption{WithRecordNameStrategy(), WithSubjectNameStrategy(TopicNameStrategy)}, "clicks-value"},
		{"nil keeps the record name", []ConfluentOption{WithRecordNameStrategy(), WithSubjectNameStrategy(nil)}, "com.example.Click"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg := NewMemoryRegistry()
			s, err := NewConfluentAvro(reg, click, tc.opts...)
			require.NoError(t, err)
			_, err = s.Serialize("clicks", map[string]any{"x": int64(1)})
			require.NoError(t, err)
			require.Equal(t, []string{tc.want}, reg.Subjects())
		})
	}

	// A dotted name is the full name; a map has no name at all.
	s, err := NewConfluentAvro(NewMemoryRegistry(), pointSchemaV1, WithTopicRecordNameStrategy())
	require.NoError(t, err)
	_, err = s.Serialize("points", map[string]any{"x": int64(1)})
	require.NoError(t, err)
	_, err = NewConfluentAvro(NewMemoryRegistry(), `{"type":"map","values":"long"}`, WithRecordNameStrategy())
	require.ErrorIs(t, err, ErrInvalidSchema)
	require.EqualError(t, err, "serde: invalid avro schema: confluent avro: a record name strategy needs a named record schema")
}

func TestConfluentAvroSchemaResolution(t *testing.T) {
	const (
		inner  = `{"type":"record","name":"Meta","fields":[{"name":"src","type":"string"}]}`
		innerB = `{"type":"record","name":"Meta","fields":[{"name":"src","type":"string"},{"name":"ok","type":"boolean","default":true}]}`
		v1     = `{"type":"record","name":"Click","fields":[{"name":"user","type":"string"},{"name":"n","type":"int"},{"name":"meta","type":` + inner + `}]}`
		// v2 drops nothing, adds a field with a default, widens n and adds
		// a defaulted field in the nested record.
		v2 = `{"type":"record","name":"Click","fields":[{"name":"user","type":"string"},{"name":"n","type":"long"},{"name":"meta","type":` + innerB + `},
			{"name":"page","type":["null","string"],"default":null},{"name":"tags","type":{"type":"array","items":"string"},"default":[]}]}`
		// v3 needs a field v1 has no value for.
		v3 = `{"type":"record","name":"Click","fields":[{"name":"user","type":"string"},{"name":"session","type":"long"}]}`
	)
	reg := NewMemoryRegistry()
	w1, err := NewConfluentAvro(reg, v1)
	require.NoError(t, err)
	old, err := w1.Serialize("clicks", map[string]any{"user": "ann", "n": 7, "meta": map[string]any{"src": "web"}})
	require.NoError(t, err)
	w2, err := NewConfluentAvro(reg, v2)
	require.NoError(t, err)
	cur, err := w2.Serialize("clicks", map[string]any{"user": "bob", "n": int64(8), "meta": map[string]any{"src": "app", "ok": false},
		"page": map[string]any{"string": "/cart"}, "tags": []any{"a"}})
	require.NoError(t, err)

	// Without the option each record has its writer's fields.
	plain, err := NewConfluentAvro(reg, v2)
	require.NoError(t, err)
	m, err := plain.Deserialize("clicks", old)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"user": "ann", "n": int32(7), "meta": map[string]any{"src": "web"}}, m)

	// With it, a v2 reader gets v2 records from both.
	r2, err := NewConfluentAvro(reg, v2, WithSchemaResolution())
	require.NoError(t, err)
	m, err = r2.Deserialize("clicks", old)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"user": "ann", "n": int64(7), "meta": map[string]any{"src": "web", "ok": true},
		"page": nil, "tags": []any{}}, m)
	m, err = r2.Deserialize("clicks", cur)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"user": "bob", "n": int64(8), "meta": map[string]any{"src": "app", "ok": false},
		"page": map[string]any{"string": "/cart"}, "tags": []any{"a"}}, m)

	// A v1 reader drops what v2 added (forward compatibility).
	r1, err := NewConfluentAvro(reg, v1, WithSchemaResolution())
	require.NoError(t, err)
	m, err = r1.Deserialize("clicks", cur)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"user": "bob", "n": int32(8), "meta": map[string]any{"src": "app"}}, m)

	// A reader that needs a value the writer did not write.
	r3, err := NewConfluentAvro(reg, v3, WithSchemaResolution())
	require.NoError(t, err)
	_, err = r3.Deserialize("clicks", old)
	require.ErrorIs(t, err, ErrDeserialize)
	require.ErrorContains(t, err, `serde: cannot deserialize: confluent avro: schema id 1: cannot read as the serde's schema: `)
	require.ErrorContains(t, err, `field "session"`)
	require.NotErrorIs(t, err, ErrSerialize)
}
