package processor

import "time"

// Header is a Kafka record header.
type Header struct {
	Key   string
	Value []byte
}

// Record is a record flowing through a topology.
//
// Topic, Partition and Offset name the input record this record derives from;
// they are set by the source and carried through every forward, so a
// processor deep in the graph can still say which input it is working on.
type Record[K, V any] struct {
	Key       K
	Value     V
	Timestamp time.Time
	Headers   []Header

	Topic     string
	Partition int32
	Offset    int64
}

// KeyValue is a key and a value, as returned by FlatMap functions and read
// from output topics.
type KeyValue[K, V any] struct {
	Key   K
	Value V
}

// RawRecord is an input record as bytes, as the engines read it from Kafka.
type RawRecord struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       []byte // nil for a null key
	Value     []byte // nil for a null value (tombstone)
	Timestamp time.Time
	Headers   []Header
}

// Output is a record a task writes to a topic: a sink's output, a
// repartition record or a changelog record.
type Output struct {
	Topic string
	// Partition is the target partition, or -1 to partition by key with
	// Kafka's default partitioner.
	Partition int32
	Key       []byte
	Value     []byte
	Timestamp time.Time
	Headers   []Header
	// Kind says why the task wrote the record.
	Kind OutputKind
}

// OutputKind classifies task outputs.
type OutputKind int

const (
	// OutputSink is a record written by a sink (To).
	OutputSink OutputKind = iota
	// OutputRepartition is a record written to an internal repartition
	// topic; another sub-topology reads it.
	OutputRepartition
	// OutputChangelog is a state store change, written to the store's
	// changelog topic in the task's partition.
	OutputChangelog
	// OutputExternal is a record written by an external sink (ToSink):
	// Topic is the sink's name, and the engine hands the record to the
	// store registered under it instead of Kafka.
	OutputExternal
)

// untyped is the representation of records between nodes.
type untyped = Record[any, any]

// retype converts a record's key and value, keeping its metadata.
func retype[K, V, K2, V2 any](r Record[K, V], k K2, v V2) Record[K2, V2] {
	return Record[K2, V2]{
		Key: k, Value: v, Timestamp: r.Timestamp, Headers: r.Headers,
		Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
	}
}

// Erase returns r with its key and value as any. A nil key or value stays
// nil only if the typed value was a nil interface; typed zero values are kept.
func Erase[K, V any](r Record[K, V]) Record[any, any] {
	return retype(r, any(r.Key), any(r.Value))
}

// Assert converts an untyped record back to K and V. Keys or values that are
// nil become zero values; values of another type are an error.
func Assert[K, V any](r Record[any, any]) (Record[K, V], error) {
	k, err := As[K](r.Key)
	if err != nil {
		return Record[K, V]{}, err
	}
	v, err := As[V](r.Value)
	if err != nil {
		return Record[K, V]{}, err
	}
	return retype(r, k, v), nil
}
