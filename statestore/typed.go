package statestore

import "fmt"

// Codec turns values of type T into bytes and back. The topic argument is the
// store's name. serde.Serde[T] satisfies Codec[T]; this package does not
// import serde.
type Codec[T any] interface {
	Serialize(topic string, v T) ([]byte, error)
	Deserialize(topic string, b []byte) (T, error)
}

// codecs holds what the typed views share: the store name, used as the
// codecs' topic, and the key and value codecs.
type codecs[K, V any] struct {
	topic  string
	keys   Codec[K]
	values Codec[V]
	err    error // from the constructor: every method returns it
}

func newCodecs[K, V any](view string, s Store, k Codec[K], v Codec[V]) codecs[K, V] {
	var err error
	switch {
	case s == nil:
		err = fmt.Errorf("statestore: %s: nil store", view)
	case k == nil:
		err = fmt.Errorf("statestore: %s over %q: nil key codec", view, s.Name())
	case v == nil:
		err = fmt.Errorf("statestore: %s over %q: nil value codec", view, s.Name())
	}
	if err != nil {
		return codecs[K, V]{err: err}
	}
	return codecs[K, V]{topic: s.Name(), keys: k, values: v}
}

func (c *codecs[K, V]) encodeKey(k K) ([]byte, error) {
	if c.err != nil {
		return nil, c.err
	}
	b, err := c.keys.Serialize(c.topic, k)
	if err != nil {
		return nil, fmt.Errorf("statestore: %s: serialize key: %w", c.topic, err)
	}
	return b, nil
}

func (c *codecs[K, V]) encodeValue(v V) ([]byte, error) {
	b, err := c.values.Serialize(c.topic, v)
	if err != nil {
		return nil, fmt.Errorf("statestore: %s: serialize value: %w", c.topic, err)
	}
	return b, nil
}

func (c *codecs[K, V]) decodeKey(b []byte) (K, error) {
	k, err := c.keys.Deserialize(c.topic, b)
	if err != nil {
		return k, fmt.Errorf("statestore: %s: deserialize key: %w", c.topic, err)
	}
	return k, nil
}

func (c *codecs[K, V]) decodeValue(b []byte) (V, error) {
	v, err := c.values.Deserialize(c.topic, b)
	if err != nil {
		return v, fmt.Errorf("statestore: %s: deserialize value: %w", c.topic, err)
	}
	return v, nil
}

// decode decodes a key and a value, returning the first error.
func (c *codecs[K, V]) decode(kb, vb []byte) (K, V, error) {
	var v V
	k, err := c.decodeKey(kb)
	if err == nil {
		v, err = c.decodeValue(vb)
	}
	return k, v, err
}

// KV is a typed view of a KeyValueStore: keys and values go through codecs.
// Its order is the byte order of the encoded keys, which need not be the
// natural order of K (a big-endian int64 sorts negative numbers last).
//
// Errors of the codecs are wrapped with the store's name; errors of the store
// (such as ErrClosed) are returned as they are. KV is safe for concurrent use
// if the store and the codecs are.
type KV[K, V any] struct {
	store KeyValueStore
	c     codecs[K, V]
}

// NewKV returns a typed view of s. The codecs get the store's name as their
// topic. A nil argument does not panic: every method of the view returns an
// error saying which argument was nil.
func NewKV[K, V any](s KeyValueStore, k Codec[K], v Codec[V]) *KV[K, V] {
	return &KV[K, V]{store: s, c: newCodecs("KV", s, k, v)}
}

// Store returns the underlying byte store.
func (kv *KV[K, V]) Store() KeyValueStore { return kv.store }

// Get returns the value of k and whether it exists.
func (kv *KV[K, V]) Get(k K) (V, bool, error) {
	var zero V
	kb, err := kv.c.encodeKey(k)
	if err != nil {
		return zero, false, err
	}
	vb, ok, err := kv.store.Get(kb)
	if err != nil || !ok {
		return zero, false, err
	}
	v, err := kv.c.decodeValue(vb)
	if err != nil {
		return zero, false, err
	}
	return v, true, nil
}

// Put sets k to v. If the value codec encodes v as nil (a tombstone), Put
// deletes k, as KeyValueStore.Put does.
func (kv *KV[K, V]) Put(k K, v V) error {
	kb, err := kv.c.encodeKey(k)
	if err != nil {
		return err
	}
	vb, err := kv.c.encodeValue(v)
	if err != nil {
		return err
	}
	return kv.store.Put(kb, vb)
}

// Delete removes k; deleting a missing key is not an error.
func (kv *KV[K, V]) Delete(k K) error {
	kb, err := kv.c.encodeKey(k)
	if err != nil {
		return err
	}
	return kv.store.Delete(kb)
}

// Range iterates the keys whose encoding is in [encode(from), encode(to)).
func (kv *KV[K, V]) Range(from, to K) (*KVIterator[K, V], error) {
	fb, err := kv.c.encodeKey(from)
	if err != nil {
		return nil, err
	}
	tb, err := kv.c.encodeKey(to)
	if err != nil {
		return nil, err
	}
	if tb == nil {
		tb = []byte{} // an upper bound, not the open bound nil means
	}
	return kv.wrap(kv.store.Range(fb, tb))
}

// All iterates every key.
func (kv *KV[K, V]) All() (*KVIterator[K, V], error) {
	if kv.c.err != nil {
		return nil, kv.c.err
	}
	return kv.wrap(kv.store.Range(nil, nil))
}

// PrefixScan iterates the keys whose encoding starts with the encoding of
// prefix: with a string codec, the keys that start with prefix.
func (kv *KV[K, V]) PrefixScan(prefix K) (*KVIterator[K, V], error) {
	pb, err := kv.c.encodeKey(prefix)
	if err != nil {
		return nil, err
	}
	return kv.wrap(kv.store.PrefixScan(pb))
}

func (kv *KV[K, V]) wrap(it Iterator, err error) (*KVIterator[K, V], error) {
	if err != nil {
		return nil, err
	}
	return &KVIterator[K, V]{it: it, c: &kv.c}, nil
}

// KVIterator walks the entries of a KV in key order. Call Next before the
// first Key/Value; after Next returns false, check Err. Always Close it. It
// is not safe for concurrent use.
type KVIterator[K, V any] struct {
	it    Iterator
	c     *codecs[K, V]
	key   K
	value V
	err   error
}

// Next decodes the next entry. It returns false at the end or on the first
// error: a store error, or a codec error that ends the iteration.
func (it *KVIterator[K, V]) Next() bool {
	var zk K
	var zv V
	it.key, it.value = zk, zv
	if it.err != nil || !it.it.Next() {
		return false
	}
	k, v, err := it.c.decode(it.it.Key(), it.it.Value())
	if err != nil {
		it.err = err
		return false
	}
	it.key, it.value = k, v
	return true
}

// Key returns the current key.
func (it *KVIterator[K, V]) Key() K { return it.key }

// Value returns the current value.
func (it *KVIterator[K, V]) Value() V { return it.value }

// Err returns the error that ended the iteration, if any.
func (it *KVIterator[K, V]) Err() error {
	if it.err != nil {
		return it.err
	}
	return it.it.Err()
}

// Close closes the underlying iterator.
func (it *KVIterator[K, V]) Close() error { return it.it.Close() }
