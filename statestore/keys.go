package statestore

import (
	"encoding/binary"
	"fmt"
	"time"
)

// The byte layouts below name a windowed or session entry as one key: the key
// of changelog records of window and session stores, and the key under which
// the Badger store keeps them. They are pure functions of their arguments.
//
// Times are written as Unix milliseconds in 8 bytes, big-endian two's
// complement (Java's ByteBuffer.putLong, as Kafka Streams writes them).
// Byte order therefore matches time order for times at or after the Unix
// epoch — Kafka timestamps are never negative, and window operators clamp
// window starts at zero as Kafka Streams does — but a negative time sorts
// after every non-negative one.

const (
	timeLen       = 8
	windowSuffix  = timeLen     // start
	sessionSuffix = 2 * timeLen // end, start
)

// EncodeWindowKey returns key followed by the 8-byte big-endian Unix
// millisecond time of start (Kafka Streams' windowed key layout, without a
// sequence number). start is truncated to the millisecond.
//
// For keys of equal length, bytes.Compare on encoded keys orders them by key,
// then start (for starts at or after the Unix epoch). Keys of different
// lengths do not keep that order: "a"+start can sort after "ab"+start'.
func EncodeWindowKey(key []byte, start time.Time) []byte {
	b := make([]byte, len(key)+windowSuffix)
	n := copy(b, key)
	binary.BigEndian.PutUint64(b[n:], uint64(start.UnixMilli()))
	return b
}

// DecodeWindowKey splits a key made by EncodeWindowKey. The returned key is
// a copy (never nil), so b may be reused; start is a time.UnixMilli value. It
// returns an error wrapping ErrMalformedKey, and never panics, if b is
// shorter than 8 bytes.
func DecodeWindowKey(b []byte) (key []byte, start time.Time, err error) {
	if len(b) < windowSuffix {
		return nil, time.Time{}, fmt.Errorf("%w: window key too short: %d bytes, want at least %d",
			ErrMalformedKey, len(b), windowSuffix)
	}
	n := len(b) - windowSuffix
	key = append(make([]byte, 0, n), b[:n]...)
	start = time.UnixMilli(int64(binary.BigEndian.Uint64(b[n:])))
	return key, start, nil
}

// EncodeSessionKey returns key followed by the 8-byte big-endian Unix
// millisecond times of end, then start: Kafka Streams' session key layout.
// start and end are truncated to the millisecond.
//
// For keys of equal length, bytes.Compare on encoded keys orders them by key,
// then end, then start (for times at or after the Unix epoch); keys of
// different lengths do not keep that order.
func EncodeSessionKey(key []byte, start, end time.Time) []byte {
	b := make([]byte, len(key)+sessionSuffix)
	n := copy(b, key)
	binary.BigEndian.PutUint64(b[n:], uint64(end.UnixMilli()))
	binary.BigEndian.PutUint64(b[n+timeLen:], uint64(start.UnixMilli()))
	return b
}

// DecodeSessionKey splits a key made by EncodeSessionKey. The returned key is
// a copy (never nil), so b may be reused; start and end are time.UnixMilli
// values. It returns an error wrapping ErrMalformedKey, and never panics, if b
// is shorter than 16 bytes.
// It does not check that end is at or after start.
func DecodeSessionKey(b []byte) (key []byte, start, end time.Time, err error) {
	if len(b) < sessionSuffix {
		return nil, time.Time{}, time.Time{}, fmt.Errorf("%w: session key too short: %d bytes, want at least %d",
			ErrMalformedKey, len(b), sessionSuffix)
	}
	n := len(b) - sessionSuffix
	key = append(make([]byte, 0, n), b[:n]...)
	end = time.UnixMilli(int64(binary.BigEndian.Uint64(b[n:])))
	start = time.UnixMilli(int64(binary.BigEndian.Uint64(b[n+timeLen:])))
	return key, start, end, nil
}
