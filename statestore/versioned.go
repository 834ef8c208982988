package statestore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
)

// A versioned store keeps, for each key, the values it had over time: each
// version is valid from its timestamp until the timestamp of the key's next
// version, as in Kafka Streams' VersionedKeyValueStore (KIP-889). A nil
// value is a tombstone: the key has no value from that timestamp on.
//
// The store has a history retention: its observed stream time is the
// largest timestamp put so far, and a version is kept while it may still be
// asked for, that is while its end of validity is after stream time minus
// the retention. A key's latest version is kept until it is replaced,
// unless it is a tombstone: a tombstone from at or before stream time minus
// the retention is deleted with the key's last trace, as Kafka Streams'
// tombstones expire with their segments (no put may land before it, and
// every lookup answers as for a key never seen).
// The retention is also the store's grace period: a put or delete older
// than stream time minus the retention is not applied (PutExpired), and an
// as-of lookup older than that finds only a latest version.
//
// A versioned store is built over a KeyValueStore (NewVersioned), so it is
// staged, changelogged and restored as key-value stores are, in memory and
// in Badger alike. Its layout in the key-value store:
//
//	0x00                                         → observed stream time (8 bytes)
//	0x01 ‖ len(key) (4) ‖ key                    → latest version: validFrom (8) ‖ flag ‖ value
//	0x02 ‖ len(key) (4) ‖ key ‖ ts (8)           → older version valid from ts: flag ‖ value
//	0x03 ‖ end (8) ‖ len(key) (4) ‖ key ‖ ts (8) → empty: older versions indexed by end
//	0x04 ‖ ts (8) ‖ len(key) (4) ‖ key           → empty: latest tombstones indexed by ts
//
// Timestamps are big-endian with the sign bit flipped, so that a key's older
// versions sort by timestamp; the flag is 1 for a value, 0 for a tombstone.
// An older version's end of validity is the next version's timestamp.

// VersionedRecord is one version of a key's value.
type VersionedRecord struct {
	// Value is the value; never nil (a tombstone is not returned).
	Value []byte
	// ValidFrom is the version's timestamp.
	ValidFrom time.Time
	// ValidTo is the timestamp of the key's next version; it is the zero
	// time when the version is the latest (Latest is true).
	ValidTo time.Time
	// Latest says the version is the key's latest: its validity has no end.
	Latest bool
}

// PutStatus says what a versioned Put did.
type PutStatus int

const (
	// PutLatest: the value is the key's latest version (Kafka Streams'
	// PUT_RETURN_CODE_VALID_TO_UNDEFINED).
	PutLatest PutStatus = iota + 1
	// PutHistory: the value is older than the key's latest version and went
	// into its history, valid until the time Put returns.
	PutHistory
	// PutExpired: the timestamp is older than stream time minus the history
	// retention; nothing was written (Kafka Streams' PUT_RETURN_CODE_NOT_PUT).
	PutExpired
)

// VersionedStore keeps the versions of each key's value. See NewVersioned.
type VersionedStore interface {
	Store
	// Put adds the version of key valid from ts; a nil value is a
	// tombstone. A version with the same key and timestamp is replaced. For
	// PutHistory, validTo is the new version's end of validity.
	Put(key, value []byte, ts time.Time) (status PutStatus, validTo time.Time, err error)
	// Delete puts a tombstone at ts and returns the version that was valid
	// at ts, if any; nothing when ts is beyond the history retention.
	Delete(key []byte, ts time.Time) (VersionedRecord, bool, error)
	// Get returns the key's latest version; false when the key has none or
	// its latest version is a tombstone.
	Get(key []byte) (VersionedRecord, bool, error)
	// GetAsOf returns the version of key valid at asOf (the one with the
	// largest timestamp not after asOf); false when there is none, when it
	// is a tombstone, or when asOf is beyond the history retention and the
	// latest version is not valid at asOf.
	GetAsOf(key []byte, asOf time.Time) (VersionedRecord, bool, error)
	// LatestTimestamp returns the timestamp of the key's latest version,
	// a tombstone's too; false when the key has none.
	LatestTimestamp(key []byte) (time.Time, bool, error)
	// HistoryRetention returns the store's history retention.
	HistoryRetention() time.Duration
}

const (
	versionedMeta   byte = 0x00
	versionedLatest byte = 0x01
	versionedOlder  byte = 0x02
	versionedEnds   byte = 0x03
	versionedTombs  byte = 0x04
)

// noTimestamp is the observed stream time before any put, as Kafka's
// ConsumerRecord.NO_TIMESTAMP.
const noTimestamp int64 = -1

// versioned is the VersionedStore over a KeyValueStore.
type versioned struct {
	kv        KeyValueStore
	retention int64 // ms
}

var _ VersionedStore = (*versioned)(nil)

// NewVersioned returns a VersionedStore that keeps its versions in kv, with
// the given history retention (at millisecond precision; zero keeps only
// versions valid at stream time). kv holds nothing else; the returned store
// is kv's only writer. It reads its observed stream time back from kv, so a
// store restored from its changelog resumes where it was.
//
// When a put advances stream time, the older versions (of every key) that
// ended at or before stream time minus the retention are deleted, through
// an index of versions by end: the store keeps what lookups may return.
//
// The store keeps no state of its own: every call reads kv (the stream time
// too), so a kv rolled back or restored under it is seen at once. It is as
// safe for concurrent use as kv is for single operations; a Put is several
// writes, so concurrent writers must be serialized by the caller.
func NewVersioned(kv KeyValueStore, historyRetention time.Duration) VersionedStore {
	return &versioned{kv: kv, retention: max(historyRetention.Milliseconds(), 0)}
}

// NewInMemoryVersioned returns an empty in-memory VersionedStore.
func NewInMemoryVersioned(name string, historyRetention time.Duration) VersionedStore {
	return NewVersioned(NewInMemoryKeyValue(name), historyRetention)
}

func (s *versioned) Name() string { return s.kv.Name() }
func (s *versioned) Close() error { return s.kv.Close() }
func (s *versioned) HistoryRetention() time.Duration {
	return time.Duration(s.retention) * time.Millisecond
}

// streamTime returns the observed stream time.
func (s *versioned) streamTime() (int64, error) {
	b, ok, err := s.kv.Get([]byte{versionedMeta})
	if err != nil || !ok {
		return noTimestamp, err
	}
	if len(b) != 8 {
		return 0, fmt.Errorf("%w: stream time of %d bytes", ErrCorruptVersion, len(b))
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}

// cutoff returns stream time minus the retention: the oldest timestamp a
// put is accepted at, and the oldest an as-of lookup sees history at.
func (s *versioned) cutoff() (int64, error) {
	t, err := s.streamTime()
	if err != nil || t == noTimestamp {
		return math.MinInt64, err
	}
	return t - s.retention, nil
}

func (s *versioned) Put(key, value []byte, ts time.Time) (PutStatus, time.Time, error) {
	at := ts.UnixMilli()
	observed, err := s.streamTime()
	if err != nil {
		return 0, time.Time{}, err
	}
	cut := int64(math.MinInt64)
	if observed != noTimestamp {
		cut = observed - s.retention
	}
	if at < cut {
		return PutExpired, time.Time{}, nil
	}
	status, validTo, err := s.put(key, value, at)
	if err != nil || at <= observed {
		return status, validTo, err
	}
	if err := s.kv.Put([]byte{versionedMeta}, binary.BigEndian.AppendUint64(nil, uint64(at))); err != nil {
		return 0, time.Time{}, err
	}
	return status, validTo, s.expire(at - s.retention)
}

// put writes the version of key from at, keeping the index of the older
// versions' ends (see expire) in step.
func (s *versioned) put(key, value []byte, at int64) (PutStatus, time.Time, error) {
	latest, ok, err := s.latest(key)
	if err != nil {
		return 0, time.Time{}, err
	}
	if !ok || at >= latest.from {
		if ok && at > latest.from {
			// The latest becomes an older version, valid until at.
			if err := s.kv.Put(olderKey(key, latest.from), encodeVersion(latest.value)); err != nil {
				return 0, time.Time{}, err
			}
			if err := s.kv.Put(endKey(at, key, latest.from), []byte{}); err != nil {
				return 0, time.Time{}, err
			}
		}
		// The index of latest tombstones follows the latest version.
		if ok && latest.value == nil {
			if err := s.kv.Delete(tombKey(latest.from, key)); err != nil {
				return 0, time.Time{}, err
			}
		}
		if value == nil {
			if err := s.kv.Put(tombKey(at, key), []byte{}); err != nil {
				return 0, time.Time{}, err
			}
		}
		lv := binary.BigEndian.AppendUint64(nil, uint64(at))
		return PutLatest, time.Time{}, s.kv.Put(latestKey(key), append(lv, encodeVersion(value)...))
	}
	// Older than the latest: into the history, valid until the next
	// version; the version before it, if any, now ends at at.
	prev, next, same, err := s.neighbours(key, at)
	if err != nil {
		return 0, time.Time{}, err
	}
	validTo := latest.from
	if next != nil {
		validTo = *next
	}
	if err := s.kv.Put(olderKey(key, at), encodeVersion(value)); err != nil {
		return 0, time.Time{}, err
	}
	if same {
		return PutHistory, time.UnixMilli(validTo), nil
	}
	if err := s.kv.Put(endKey(validTo, key, at), []byte{}); err != nil {
		return 0, time.Time{}, err
	}
	if prev != nil {
		if err := s.kv.Delete(endKey(validTo, key, *prev)); err != nil {
			return 0, time.Time{}, err
		}
		if err := s.kv.Put(endKey(at, key, *prev), []byte{}); err != nil {
			return 0, time.Time{}, err
		}
	}
	return PutHistory, time.UnixMilli(validTo), nil
}

func (s *versioned) Delete(key []byte, ts time.Time) (VersionedRecord, bool, error) {
	cut, err := s.cutoff()
	if err != nil || ts.UnixMilli() < cut {
		return VersionedRecord{}, false, err
	}
	rec, ok, err := s.GetAsOf(key, ts)
	if err != nil {
		return VersionedRecord{}, false, err
	}
	if _, _, err := s.Put(key, nil, ts); err != nil {
		return VersionedRecord{}, false, err
	}
	return rec, ok, nil
}

func (s *versioned) Get(key []byte) (VersionedRecord, bool, error) {
	latest, ok, err := s.latest(key)
	if err != nil || !ok || latest.value == nil {
		return VersionedRecord{}, false, err
	}
	return VersionedRecord{Value: latest.value, ValidFrom: time.UnixMilli(latest.from), Latest: true}, true, nil
}

func (s *versioned) LatestTimestamp(key []byte) (time.Time, bool, error) {
	latest, ok, err := s.latest(key)
	if err != nil || !ok {
		return time.Time{}, false, err
	}
	return time.UnixMilli(latest.from), true, nil
}

func (s *versioned) GetAsOf(key []byte, asOf time.Time) (VersionedRecord, bool, error) {
	at := asOf.UnixMilli()
	latest, ok, err := s.latest(key)
	if err != nil || !ok {
		return VersionedRecord{}, false, err
	}
	if latest.from <= at {
		if latest.value == nil {
			return VersionedRecord{}, false, nil
		}
		return VersionedRecord{Value: latest.value, ValidFrom: time.UnixMilli(latest.from), Latest: true}, true, nil
	}
	cut, err := s.cutoff()
	if err != nil || at < cut {
		return VersionedRecord{}, false, err
	}
	// The version valid at asOf: the last older version from at or before
	// asOf; its end is the next one's start, or the latest's.
	prefix := olderPrefix(key)
	it, err := s.kv.Range(prefix, olderKey(key, latest.from))
	if err != nil {
		return VersionedRecord{}, false, err
	}
	defer it.Close()
	var (
		found    bool
		from, to int64 = 0, latest.from
		value    []byte
	)
	for it.Next() {
		t, err := olderTime(it.Key(), len(prefix))
		if err != nil {
			return VersionedRecord{}, false, err
		}
		if t > at {
			to = t
			break
		}
		found, from = true, t
		if value, err = decodeVersion(it.Value()); err != nil {
			return VersionedRecord{}, false, err
		}
	}
	if err := it.Err(); err != nil || !found || value == nil {
		return VersionedRecord{}, false, err
	}
	return VersionedRecord{Value: value, ValidFrom: time.UnixMilli(from), ValidTo: time.UnixMilli(to)}, true, nil
}

// version is a stored latest version; value nil for a tombstone.
type version struct {
	from  int64
	value []byte
}

func (s *versioned) latest(key []byte) (version, bool, error) {
	b, ok, err := s.kv.Get(latestKey(key))
	if err != nil || !ok {
		return version{}, false, err
	}
	if len(b) < 9 {
		return version{}, false, fmt.Errorf("%w: latest version of %d bytes", ErrCorruptVersion, len(b))
	}
	v, err := decodeVersion(b[8:])
	return version{from: int64(binary.BigEndian.Uint64(b)), value: v}, err == nil, err
}

// neighbours returns the timestamps of the older versions of key just
// before and just after at, and whether one is at at.
func (s *versioned) neighbours(key []byte, at int64) (prev, next *int64, same bool, err error) {
	prefix := olderPrefix(key)
	it, err := s.kv.Range(prefix, prefixEnd(prefix))
	if err != nil {
		return nil, nil, false, err
	}
	defer it.Close()
	for it.Next() {
		t, err := olderTime(it.Key(), len(prefix))
		if err != nil {
			return nil, nil, false, err
		}
		switch {
		case t < at:
			prev = &t
		case t == at:
			same = true
		default:
			return prev, &t, same, nil
		}
	}
	return prev, nil, same, it.Err()
}

// expire deletes every older version that ended at or before cut: no
// lookup can return it (an as-of lookup before cut finds only a latest
// version). The index of ends makes this cost what it deletes:
//
//	0x03 ‖ end (8) ‖ len(key) (4) ‖ key ‖ from (8) → empty
//
// one entry per older version, kept in step by put. It then deletes the
// latest tombstones from at or before cut (see expireTombstones).
func (s *versioned) expire(cut int64) error {
	if cut == math.MaxInt64 {
		return nil
	}
	if err := s.expireOlder(cut); err != nil {
		return err
	}
	return s.expireTombstones(cut)
}

// expireTombstones deletes the latest versions that are tombstones from at
// or before cut, through their index (one entry per latest tombstone, kept
// in step by put). Nothing tells such a key from one never put: a put
// before the tombstone is older than cut, so expired; a put at or after it
// replaces it as the latest; an as-of lookup finds nothing either way; and
// every older version of the key ended at or before the tombstone, so was
// expired first.
func (s *versioned) expireTombstones(cut int64) error {
	it, err := s.kv.Range([]byte{versionedTombs}, tombBound(cut+1))
	if err != nil {
		return err
	}
	var tombs [][]byte
	for it.Next() {
		tombs = append(tombs, it.Key())
	}
	if err := errors.Join(it.Err(), it.Close()); err != nil {
		return err
	}
	for _, e := range tombs {
		if len(e) < 1+8+4 || len(e) != 13+int(binary.BigEndian.Uint32(e[9:13])) {
			return fmt.Errorf("%w: tombstone index key of %d bytes", ErrCorruptVersion, len(e))
		}
		key := e[13:]
		from := int64(binary.BigEndian.Uint64(e[1:9]) ^ (1 << 63))
		latest, ok, err := s.latest(key)
		if err != nil {
			return err
		}
		if ok && latest.value == nil && latest.from == from {
			if err := s.kv.Delete(latestKey(key)); err != nil {
				return err
			}
		}
		if err := s.kv.Delete(e); err != nil {
			return err
		}
	}
	return nil
}

// expireOlder deletes the older versions that ended at or before cut.
func (s *versioned) expireOlder(cut int64) error {
	it, err := s.kv.Range([]byte{versionedEnds}, endBound(cut+1))
	if err != nil {
		return err
	}
	var ends [][]byte
	for it.Next() {
		ends = append(ends, it.Key())
	}
	if err := errors.Join(it.Err(), it.Close()); err != nil {
		return err
	}
	for _, e := range ends {
		key, from, err := parseEnd(e)
		if err != nil {
			return err
		}
		if err := s.kv.Delete(olderKey(key, from)); err != nil {
			return err
		}
		if err := s.kv.Delete(e); err != nil {
			return err
		}
	}
	return nil
}

func endBound(end int64) []byte {
	return binary.BigEndian.AppendUint64([]byte{versionedEnds}, uint64(end)^(1<<63))
}

func tombBound(from int64) []byte {
	return binary.BigEndian.AppendUint64([]byte{versionedTombs}, uint64(from)^(1<<63))
}

func tombKey(from int64, key []byte) []byte {
	b := binary.BigEndian.AppendUint32(tombBound(from), uint32(len(key)))
	return append(b, key...)
}

func endKey(end int64, key []byte, from int64) []byte {
	b := endBound(end)
	b = binary.BigEndian.AppendUint32(b, uint32(len(key)))
	b = append(b, key...)
	return binary.BigEndian.AppendUint64(b, uint64(from)^(1<<63))
}

func parseEnd(e []byte) ([]byte, int64, error) {
	if len(e) < 1+8+4+8 {
		return nil, 0, fmt.Errorf("%w: end index key of %d bytes", ErrCorruptVersion, len(e))
	}
	n := int(binary.BigEndian.Uint32(e[9:13]))
	if len(e) != 13+n+8 {
		return nil, 0, fmt.Errorf("%w: end index key of %d bytes", ErrCorruptVersion, len(e))
	}
	return e[13 : 13+n], int64(binary.BigEndian.Uint64(e[13+n:]) ^ (1 << 63)), nil
}

func keyPrefix(tag byte, key []byte) []byte {
	b := make([]byte, 0, 5+len(key)+8)
	b = append(b, tag)
	b = binary.BigEndian.AppendUint32(b, uint32(len(key)))
	return append(b, key...)
}

func latestKey(key []byte) []byte   { return keyPrefix(versionedLatest, key) }
func olderPrefix(key []byte) []byte { return keyPrefix(versionedOlder, key) }

func olderKey(key []byte, ts int64) []byte {
	return binary.BigEndian.AppendUint64(olderPrefix(key), uint64(ts)^(1<<63))
}

func olderTime(k []byte, prefixLen int) (int64, error) {
	if len(k) != prefixLen+8 {
		return 0, fmt.Errorf("%w: older version key of %d bytes", ErrCorruptVersion, len(k))
	}
	return int64(binary.BigEndian.Uint64(k[prefixLen:]) ^ (1 << 63)), nil
}

func encodeVersion(value []byte) []byte {
	if value == nil {
		return []byte{0}
	}
	return append([]byte{1}, value...)
}

func decodeVersion(b []byte) ([]byte, error) {
	switch {
	case len(b) == 1 && b[0] == 0:
		return nil, nil
	case len(b) >= 1 && b[0] == 1:
		return bytes.Clone(b[1:]), nil
	}
	return nil, fmt.Errorf("%w: version of %d bytes", ErrCorruptVersion, len(b))
}
