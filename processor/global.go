package processor

import (
	"fmt"

	"github.com/weirstream/weir/statestore"
)

// GlobalStore is a store every instance of an application holds whole: the
// store of a global table (Kafka Streams' GlobalKTable). It is filled from
// every partition of one external topic, outside any task and any consumer
// group; the topic itself is its changelog, so the store is never logged.
// Tasks read it read-only, through the nodes that list it in Node.Stores.
type GlobalStore struct {
	// Spec is the store's; Spec.Logged is false.
	Spec statestore.Spec
	// Topic is the external topic the store is read from.
	Topic string
	// Source and Processor name the two nodes Kafka Streams describes for
	// a global store (the topic's source and the KTABLE-SOURCE that writes
	// the store).
	Source, Processor string
	// Canon decodes a record of the topic with the table's serdes and
	// encodes it again, so the store holds the bytes the table's serdes
	// write, whatever bytes the producer chose; nil inputs stay nil. An
	// error is a deserialization error for the record.
	Canon func(topic string, key, value []byte) (k, v []byte, err error)
}

// GlobalUpdate says what ApplyGlobal did with a record.
type GlobalUpdate int

const (
	// GlobalPut stored the record's value under its key.
	GlobalPut GlobalUpdate = iota + 1
	// GlobalDelete deleted the key (the record was a tombstone).
	GlobalDelete
	// GlobalDroppedNull dropped a record with a null key, as Kafka Streams'
	// KTableSource does (counted under MetricDroppedNull).
	GlobalDroppedNull
)

// ApplyGlobal writes one record of g's topic into s, the global store: a
// value is put, a tombstone deletes its key, a record with a null key is
// dropped. A record Canon rejects is a *RecordError of kind
// DeserializationError and leaves s unchanged; a store failure is returned
// as it is.
func (g *GlobalStore) ApplyGlobal(s statestore.KeyValueStore, r RawRecord) (GlobalUpdate, error) {
	if r.Timestamp.IsZero() || r.Timestamp.UnixMilli() < 0 {
		return 0, &RecordError{Kind: DeserializationError, Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
			Err: fmt.Errorf("invalid timestamp %v", r.Timestamp)}
	}
	k, v, err := g.Canon(r.Topic, r.Key, r.Value)
	if err != nil {
		return 0, &RecordError{Kind: DeserializationError, Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Err: err}
	}
	switch {
	case k == nil:
		return GlobalDroppedNull, nil
	case v == nil:
		if err := s.Delete(k); err != nil {
			return 0, fmt.Errorf("processor: global store %q: %w", g.Spec.Name, err)
		}
		return GlobalDelete, nil
	default:
		if err := s.Put(k, v); err != nil {
			return 0, fmt.Errorf("processor: global store %q: %w", g.Spec.Name, err)
		}
		return GlobalPut, nil
	}
}

// Global returns the global store named name, or nil.
func (g *Graph) Global(name string) *GlobalStore {
	for i := range g.Globals {
		if g.Globals[i].Spec.Name == name {
			return &g.Globals[i]
		}
	}
	return nil
}

// readOnlyKV is a global store as a task sees it: reads pass through,
// writes fail with ErrReadOnly, Close does nothing (the engine owns it).
type readOnlyKV struct{ statestore.KeyValueStore }

func (r readOnlyKV) Put(_, _ []byte) error { return fmt.Errorf("%w: %q", ErrReadOnly, r.Name()) }
func (r readOnlyKV) Delete(_ []byte) error { return fmt.Errorf("%w: %q", ErrReadOnly, r.Name()) }
func (r readOnlyKV) Close() error          { return nil }

// globalStores resolves the global stores g's sub-topology st reads from
// have, or fails naming the first one missing.
func globalStores(g *Graph, st *Subtopology, have map[string]statestore.KeyValueStore) (map[string]statestore.Store, error) {
	var out map[string]statestore.Store
	for _, n := range st.Nodes {
		for _, name := range n.Stores {
			if g.Global(name) == nil {
				continue
			}
			s, ok := have[name]
			if !ok || s == nil {
				return nil, fmt.Errorf("processor: node %q reads global store %q, which the task config does not give", n.Name, name)
			}
			if out == nil {
				out = map[string]statestore.Store{}
			}
			out[name] = readOnlyKV{s}
		}
	}
	return out, nil
}
