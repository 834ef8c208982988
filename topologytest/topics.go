package topologytest

import (
	"fmt"
	"time"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/statestore"
)

// InputTopic pipes typed records into a topic.
type InputTopic[K, V any] struct {
	d     *Driver
	topic string
	ks    serde.Serializer[K]
	vs    serde.Serializer[V]
}

// Input returns a typed writer for topic.
func Input[K, V any](d *Driver, topic string, ks serde.Serializer[K], vs serde.Serializer[V]) *InputTopic[K, V] {
	return &InputTopic[K, V]{d: d, topic: topic, ks: ks, vs: vs}
}

// Pipe feeds one record with timestamp ts.
func (in *InputTopic[K, V]) Pipe(k K, v V, ts time.Time) error {
	kb, err := in.ks.Serialize(in.topic, k)
	if err != nil {
		return fmt.Errorf("topologytest: key: %w", err)
	}
	vb, err := in.vs.Serialize(in.topic, v)
	if err != nil {
		return fmt.Errorf("topologytest: value: %w", err)
	}
	return in.d.PipeRaw(in.topic, kb, vb, ts)
}

// PipeTombstone feeds a record with a null value.
func (in *InputTopic[K, V]) PipeTombstone(k K, ts time.Time) error {
	kb, err := in.ks.Serialize(in.topic, k)
	if err != nil {
		return fmt.Errorf("topologytest: key: %w", err)
	}
	return in.d.PipeRaw(in.topic, kb, nil, ts)
}

// OutputTopic reads typed records from a topic. Each read returns the
// records written since the previous read.
type OutputTopic[K, V any] struct {
	d     *Driver
	topic string
	ks    serde.Deserializer[K]
	vs    serde.Deserializer[V]
}

// Output returns a typed reader for topic.
func Output[K, V any](d *Driver, topic string, ks serde.Deserializer[K], vs serde.Deserializer[V]) *OutputTopic[K, V] {
	return &OutputTopic[K, V]{d: d, topic: topic, ks: ks, vs: vs}
}

// TestRecord is a record read from an output topic. Tombstone is set when
// the value was null; Value is then the zero value.
type TestRecord[K, V any] struct {
	Key       K
	Value     V
	Tombstone bool
	Timestamp time.Time
	Headers   []processor.Header
}

// ReadRecords returns the unread records.
func (out *OutputTopic[K, V]) ReadRecords() ([]TestRecord[K, V], error) {
	all := out.d.topics[out.topic]
	pos := out.d.read[out.topic]
	var recs []TestRecord[K, V]
	for _, o := range all[pos:] {
		r := TestRecord[K, V]{Timestamp: o.Timestamp, Headers: o.Headers, Tombstone: o.Value == nil}
		var err error
		if o.Key != nil {
			if r.Key, err = out.ks.Deserialize(out.topic, o.Key); err != nil {
				return nil, fmt.Errorf("topologytest: %s key: %w", out.topic, err)
			}
		}
		if o.Value != nil {
			if r.Value, err = out.vs.Deserialize(out.topic, o.Value); err != nil {
				return nil, fmt.Errorf("topologytest: %s value: %w", out.topic, err)
			}
		}
		recs = append(recs, r)
	}
	out.d.read[out.topic] = len(all)
	return recs, nil
}

// ReadKeyValues returns the unread records as key-value pairs.
func (out *OutputTopic[K, V]) ReadKeyValues() ([]processor.KeyValue[K, V], error) {
	recs, err := out.ReadRecords()
	if err != nil {
		return nil, err
	}
	kvs := make([]processor.KeyValue[K, V], len(recs))
	for i, r := range recs {
		kvs[i] = processor.KeyValue[K, V]{Key: r.Key, Value: r.Value}
	}
	return kvs, nil
}

// ReadKeyValuesToMap returns the latest value per key among the unread
// records; a tombstone removes the key.
func (out *OutputTopic[K, V]) ReadKeyValuesToMap() (map[any]V, error) {
	recs, err := out.ReadRecords()
	if err != nil {
		return nil, err
	}
	m := map[any]V{}
	for _, r := range recs {
		if r.Tombstone {
			delete(m, any(r.Key))
			continue
		}
		m[any(r.Key)] = r.Value
	}
	return m, nil
}

// IsEmpty reports whether every record has been read.
func (out *OutputTopic[K, V]) IsEmpty() bool {
	return out.d.read[out.topic] >= len(out.d.topics[out.topic])
}

// KeyValueStore returns a typed view of a key-value store of the topology.
func KeyValueStore[K, V any](d *Driver, name string, ks statestore.Codec[K], vs statestore.Codec[V]) (*statestore.KV[K, V], error) {
	s, err := d.Store(name)
	if err != nil {
		return nil, err
	}
	kv, ok := s.(statestore.KeyValueStore)
	if !ok {
		return nil, fmt.Errorf("topologytest: store %q is a %T, not a key-value store", name, s)
	}
	return statestore.NewKV(kv, ks, vs), nil
}

// WindowStore returns a typed view of a window store of the topology.
func WindowStore[K, V any](d *Driver, name string, ks statestore.Codec[K], vs statestore.Codec[V]) (*statestore.Windowed[K, V], error) {
	s, err := d.Store(name)
	if err != nil {
		return nil, err
	}
	ws, ok := s.(statestore.WindowStore)
	if !ok {
		return nil, fmt.Errorf("topologytest: store %q is a %T, not a window store", name, s)
	}
	return statestore.NewWindowed(ws, ks, vs), nil
}

// VersionedStore returns a typed view of the versioned store of a table
// read with topology.Versioned.
func VersionedStore[K, V any](d *Driver, name string, ks statestore.Codec[K], vs statestore.Codec[V]) (*statestore.Versions[K, V], error) {
	codec, ok := d.graph.StoreCodecs[name]
	if !ok || !codec.Versioned {
		return nil, fmt.Errorf("topologytest: store %q is not a versioned table's store", name)
	}
	s, err := d.Store(name)
	if err != nil {
		return nil, err
	}
	kv, ok := s.(statestore.KeyValueStore)
	if !ok {
		return nil, fmt.Errorf("topologytest: store %q is a %T, not a key-value store", name, s)
	}
	return statestore.NewVersions(statestore.NewVersioned(kv, codec.HistoryRetention), ks, vs), nil
}
