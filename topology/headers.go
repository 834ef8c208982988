package topology

import (
	"bytes"

	"github.com/weirstream/weir/processor"
)

// Headers are the headers of the record a DSL function is handling, in
// order, as Kafka Streams' Headers: a key may appear more than once, and
// the last one wins for Get. Kafka Streams users reach them through
// processValues and a FixedKeyProcessor; weir's DSL hands them to
// MapValuesWithHeaders and FilterWithHeaders (and Process hands them in
// processor.Record).
//
// The headers a record arrives with flow on with it through every operator
// that forwards it — to sinks (To), through repartition topics, and into
// the outputs of aggregations and joins, which carry the headers of the
// record that caused them, as in Kafka Streams. Changes made through a
// *Headers are the record's own: the other branches of a stream that
// forks before the change do not see them (a Headers copies its list on
// its first change).
//
// The byte slices Get, Values and All return are shared with the record:
// do not change them. Add and Set keep their own copy of the value.
type Headers struct {
	list  []processor.Header
	owned bool // list is a copy of the record's: changes may go in place
}

// Len returns the number of headers.
func (h *Headers) Len() int { return len(h.list) }

// Get returns the value of the last header named key (Kafka Streams'
// lastHeader), and whether there is one.
func (h *Headers) Get(key string) ([]byte, bool) {
	for i := len(h.list) - 1; i >= 0; i-- {
		if h.list[i].Key == key {
			return h.list[i].Value, true
		}
	}
	return nil, false
}

// Values returns the values of the headers named key, in order.
func (h *Headers) Values(key string) [][]byte {
	var out [][]byte
	for _, hd := range h.list {
		if hd.Key == key {
			out = append(out, hd.Value)
		}
	}
	return out
}

// All returns a copy of the list of headers.
func (h *Headers) All() []processor.Header {
	return append([]processor.Header(nil), h.list...)
}

// Add appends a header, keeping those with the same key.
func (h *Headers) Add(key string, value []byte) {
	h.own()
	h.list = append(h.list, processor.Header{Key: key, Value: bytes.Clone(value)})
}

// Set replaces every header named key with one header.
func (h *Headers) Set(key string, value []byte) {
	h.Remove(key)
	h.Add(key, value)
}

// Remove removes every header named key.
func (h *Headers) Remove(key string) {
	if _, ok := h.Get(key); !ok {
		return
	}
	h.own()
	kept := h.list[:0]
	for _, hd := range h.list {
		if hd.Key != key {
			kept = append(kept, hd)
		}
	}
	h.list = kept
}

// own makes h's list its own before a change: the record's list may be
// shared with the records other branches handle.
func (h *Headers) own() {
	if !h.owned {
		h.list = append(make([]processor.Header, 0, len(h.list)+1), h.list...)
		h.owned = true
	}
}

// MapValuesWithHeaders turns each value into a new value, reading and
// changing the record's headers on the way: Kafka Streams' processValues
// with a FixedKeyProcessor that forwards one record. Keys stay as they are;
// the output record carries the headers as fn left them.
func MapValuesWithHeaders[K, V, VR any](s Stream[K, V], fn func(key K, value V, headers *Headers) VR, opts ...Option) Stream[K, VR] {
	if fn == nil {
		s.b.failf("MapValuesWithHeaders: nil function")
	}
	n := s.b.stateless("KSTREAM-PROCESSVALUES", newConfig(opts), func(ctx processor.Context[any, any], r processor.Record[any, any]) error {
		tr, err := processor.Assert[K, V](r)
		if err != nil {
			return err
		}
		h := Headers{list: r.Headers}
		r.Value = fn(tr.Key, tr.Value, &h)
		r.Headers = h.list
		return ctx.Forward(r)
	}, s.node)
	return Stream[K, VR]{b: s.b, node: n, ks: s.ks, vs: sameOrInfer[V, VR](s.vs), rekeyed: s.rekeyed}
}

// FilterWithHeaders keeps the records for which pred returns true, given
// the key, the value and the headers (a copy: changes pred makes to it are
// not kept). Kafka Streams' processValues with a FixedKeyProcessor that
// forwards a record or not.
func (s Stream[K, V]) FilterWithHeaders(pred func(key K, value V, headers Headers) bool, opts ...Option) Stream[K, V] {
	if pred == nil {
		s.b.failf("FilterWithHeaders: nil predicate")
	}
	n := s.b.stateless("KSTREAM-PROCESSVALUES", newConfig(opts), func(ctx processor.Context[any, any], r processor.Record[any, any]) error {
		tr, err := processor.Assert[K, V](r)
		if err != nil {
			return err
		}
		if pred(tr.Key, tr.Value, Headers{list: r.Headers}) {
			return ctx.Forward(r)
		}
		return nil
	}, s.node)
	return s.derive(n)
}
