package statestore

import "time"

// Version is one typed version of a key's value; see VersionedRecord.
type Version[V any] struct {
	Value     V
	ValidFrom time.Time
	ValidTo   time.Time // zero when Latest
	Latest    bool
}

// Versions is a typed view of a VersionedStore.
type Versions[K, V any] struct {
	s VersionedStore
	codecs[K, V]
}

// NewVersions returns a typed view of s. A nil store or codec is reported by
// every method.
func NewVersions[K, V any](s VersionedStore, k Codec[K], v Codec[V]) *Versions[K, V] {
	return &Versions[K, V]{s: s, codecs: newCodecs("Versions", s, k, v)}
}

// Store returns the underlying store.
func (t *Versions[K, V]) Store() VersionedStore { return t.s }

// Put adds the version of k valid from ts; see VersionedStore.Put.
func (t *Versions[K, V]) Put(k K, v V, ts time.Time) (PutStatus, time.Time, error) {
	kb, err := t.encodeKey(k)
	if err != nil {
		return 0, time.Time{}, err
	}
	vb, err := t.encodeValue(v)
	if err != nil {
		return 0, time.Time{}, err
	}
	if vb == nil {
		vb = []byte{} // a value, even if it serializes to nothing
	}
	return t.s.Put(kb, vb, ts)
}

// PutTombstone adds a tombstone for k at ts; see VersionedStore.Put.
func (t *Versions[K, V]) PutTombstone(k K, ts time.Time) (PutStatus, time.Time, error) {
	kb, err := t.encodeKey(k)
	if err != nil {
		return 0, time.Time{}, err
	}
	return t.s.Put(kb, nil, ts)
}

// Delete puts a tombstone at ts and returns the version valid at ts.
func (t *Versions[K, V]) Delete(k K, ts time.Time) (Version[V], bool, error) {
	kb, err := t.encodeKey(k)
	if err != nil {
		return Version[V]{}, false, err
	}
	return t.version(t.s.Delete(kb, ts))
}

// Get returns the latest version of k.
func (t *Versions[K, V]) Get(k K) (Version[V], bool, error) {
	kb, err := t.encodeKey(k)
	if err != nil {
		return Version[V]{}, false, err
	}
	return t.version(t.s.Get(kb))
}

// GetAsOf returns the version of k valid at asOf.
func (t *Versions[K, V]) GetAsOf(k K, asOf time.Time) (Version[V], bool, error) {
	kb, err := t.encodeKey(k)
	if err != nil {
		return Version[V]{}, false, err
	}
	return t.version(t.s.GetAsOf(kb, asOf))
}

func (t *Versions[K, V]) version(r VersionedRecord, ok bool, err error) (Version[V], bool, error) {
	if err != nil || !ok {
		return Version[V]{}, false, err
	}
	v, err := t.decodeValue(r.Value)
	if err != nil {
		return Version[V]{}, false, err
	}
	return Version[V]{Value: v, ValidFrom: r.ValidFrom, ValidTo: r.ValidTo, Latest: r.Latest}, true, nil
}

// LatestTimestamp returns the timestamp of k's latest version, a
// tombstone's too.
func (t *Versions[K, V]) LatestTimestamp(k K) (time.Time, bool, error) {
	kb, err := t.encodeKey(k)
	if err != nil {
		return time.Time{}, false, err
	}
	return t.s.LatestTimestamp(kb)
}
