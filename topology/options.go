package topology

import (
	"time"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
)

// Option configures one operation: its node name, its store name, the
// partition count of its repartition topic, its emit mode.
type Option func(*config)

type config struct {
	name       string
	store      string
	partitions int32
	emitFinal  bool
	stores     []string
	versioned  *time.Duration // Versioned: the history retention
	grace      *time.Duration // WithGrace
	// timestamp is a source's extractor: a TimestampExtractor[K, V] or a
	// processor.TimestampFunc (see sourceTimestamp).
	timestamp any
}

func newConfig(opts []Option) config {
	var c config
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return c
}

// Named names the operation's node (as Describe prints it). For Repartition
// and the repartitioning of GroupBy, the name also names the topic:
// "<application id>-<name>-repartition". For Split it is the prefix of the
// branch names.
func Named(name string) Option { return func(c *config) { c.name = name } }

// Materialized names the state store of an aggregation or table, so it can
// be queried. The store's changelog topic is
// "<application id>-<store>-changelog".
func Materialized(store string) Option { return func(c *config) { c.store = store } }

// Partitions sets the partition count of a repartition topic. By default it
// has as many partitions as the topics of the sub-topology that writes it.
func Partitions(n int32) Option { return func(c *config) { c.partitions = n } }

// EmitFinal makes a windowed aggregation emit one result per window, when the
// window closes (the aggregation's stream time reaches its end plus grace),
// instead of one result per update: like Kafka Streams'
// suppress(untilWindowCloses), stamped with the largest record timestamp in
// the window. Not for session windows.
func EmitFinal() Option { return func(c *config) { c.emitFinal = true } }

// WithStores connects existing stores (added with AddStore) to a Process
// node.
func WithStores(names ...string) Option {
	return func(c *config) { c.stores = append(c.stores, names...) }
}

// inferSerde returns weir's serde for the built-in types Kafka payloads
// commonly have (string, []byte, int64, float64), and nil for other types:
// those need an explicit serde.
func inferSerde[T any]() serde.Serde[T] {
	var zero T
	var s any
	switch any(zero).(type) {
	case string:
		s = serde.String()
	case []byte:
		s = serde.Bytes()
	case int64:
		s = serde.Int64()
	case float64:
		s = serde.Float64()
	default:
		return nil
	}
	return s.(serde.Serde[T])
}

// decoder builds a source's DecodeFunc from serdes. nil bytes stay nil.
func decoder[K, V any](ks serde.Deserializer[K], vs serde.Deserializer[V]) processor.DecodeFunc {
	return func(topic string, kb, vb []byte) (any, any, error) {
		var k, v any
		if kb != nil {
			dk, err := ks.Deserialize(topic, kb)
			if err != nil {
				return nil, nil, err
			}
			k = dk
		}
		if vb != nil {
			dv, err := vs.Deserialize(topic, vb)
			if err != nil {
				return nil, nil, err
			}
			v = dv
		}
		return k, v, nil
	}
}

// encoder builds a sink's EncodeFunc from serdes. nil stays nil.
func encoder[K, V any](ks serde.Serializer[K], vs serde.Serializer[V]) processor.EncodeFunc {
	return func(topic string, k, v any) ([]byte, []byte, error) {
		var kb, vb []byte
		if k != nil {
			tk, err := processor.As[K](k)
			if err != nil {
				return nil, nil, err
			}
			if kb, err = ks.Serialize(topic, tk); err != nil {
				return nil, nil, err
			}
		}
		if v != nil {
			tv, err := processor.As[V](v)
			if err != nil {
				return nil, nil, err
			}
			if vb, err = vs.Serialize(topic, tv); err != nil {
				return nil, nil, err
			}
		}
		return kb, vb, nil
	}
}
