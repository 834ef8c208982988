package badgerstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/weirstream/weir/statestore"
)

// Key layout. Every store partition owns the keys that start with
//
//	<store name> 0x00 <partition: 4 bytes, big-endian>
//
// Store names are non-empty and hold no 0x00 byte, so no partition's prefix
// is a prefix of another's, and a key starting with 0x00 belongs to no store:
// those hold the database's metadata. After the prefix, one tag byte:
//
//	'd' data rows   key-value:  <key>                      → value
//	                window:     esc(key) time(start)         → value
//	                session:    esc(key) time(start) time(end) → value
//	'x' expiry index (values empty)
//	                window:     time(start) esc(key)
//	                session:    time(end) esc(key) time(start)
//
// time(t) is the Unix millisecond time in 8 bytes, big-endian, with the sign
// bit flipped, so byte order is time order for negative times too (as the
// in-memory stores order them; statestore's EncodeWindowKey does not flip
// it). esc(key) escapes 0x00 as 0x00 0xff and ends with 0x00 0x01: it keeps
// the byte order of keys and no escaped key is a prefix of another, so the
// windows of a key are the contiguous range esc(key)+..., ordered by start:
// Fetch is one range scan, FetchAll seeks over the starts out of range, and
// FindSessions scans esc(key) up to time(latestStart), ordered by start, then
// end, as the interface orders sessions. The index rows make ExpireBefore
// one range scan of what it deletes.
//
// Metadata:
//
//	0x00 'f'                              → layout version
//	0x00 'c' <store> 0x00 <partition>     → checkpoint: changelog offset, 8 bytes
//	0x00 'k' <store> 0x00 <partition>     → kind: 1 byte
const (
	tagData  = 'd'
	tagIndex = 'x'

	metaFormat     = 'f'
	metaCheckpoint = 'c'
	metaKind       = 'k'

	partitionLen = 4
	timeLen      = 8
)

// layoutV1 is the value of the format key.
var layoutV1 = []byte("weir-statestore-v1")

// errMalformed is wrapped by the errors the decoders return.
var errMalformed = errors.New("badgerstore: malformed key")

// validateName checks a store name: non-empty, without 0x00.
func validateName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty store name", ErrInvalid)
	}
	if strings.IndexByte(name, 0) >= 0 {
		return fmt.Errorf("%w: store name %q holds a 0x00 byte", ErrInvalid, name)
	}
	return nil
}

// partitionPrefix returns <name> 0x00 <partition>.
func partitionPrefix(name string, partition int32) []byte {
	b := make([]byte, 0, len(name)+1+partitionLen+1)
	b = append(b, name...)
	b = append(b, 0)
	return binary.BigEndian.AppendUint32(b, uint32(partition))
}

// withTag returns prefix + tag in a new slice that is full, so appending
// to it always copies.
func withTag(prefix []byte, tag byte) []byte {
	b := append(append(make([]byte, 0, len(prefix)+1), prefix...), tag)
	return b[:len(b):len(b)]
}

// metaKey returns 0x00 <what> <name> 0x00 <partition>.
func metaKey(what byte, name string, partition int32) []byte {
	return append([]byte{0, what}, partitionPrefix(name, partition)...)
}

// appendTime appends time(ms).
func appendTime(b []byte, ms int64) []byte {
	return binary.BigEndian.AppendUint64(b, uint64(ms)^(1<<63))
}

// readTime reads time(ms) from the first 8 bytes of b.
func readTime(b []byte) (int64, error) {
	if len(b) < timeLen {
		return 0, fmt.Errorf("%w: %d bytes left for a time", errMalformed, len(b))
	}
	return int64(binary.BigEndian.Uint64(b) ^ (1 << 63)), nil
}

// appendEscaped appends esc(key).
func appendEscaped(b, key []byte) []byte {
	for _, c := range key {
		if c == 0 {
			b = append(b, 0, 0xff)
		} else {
			b = append(b, c)
		}
	}
	return append(b, 0, 1)
}

// readEscaped decodes esc(key) at the start of b and returns the key (never
// nil) and the bytes after it.
func readEscaped(b []byte) (key, rest []byte, err error) {
	key = make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != 0 {
			key = append(key, b[i])
			continue
		}
		if i+1 == len(b) {
			break
		}
		switch b[i+1] {
		case 0xff:
			key = append(key, 0)
			i++
		case 1:
			return key, b[i+2:], nil
		default:
			return nil, nil, fmt.Errorf("%w: bad escape 0x00 0x%02x", errMalformed, b[i+1])
		}
	}
	return nil, nil, fmt.Errorf("%w: unterminated key", errMalformed)
}

// windowBody returns esc(key) time(start), after dst.
func windowBody(dst, key []byte, start int64) []byte {
	return appendTime(appendEscaped(dst, key), start)
}

// windowIndexBody returns time(start) esc(key), after dst.
func windowIndexBody(dst, key []byte, start int64) []byte {
	return appendEscaped(appendTime(dst, start), key)
}

// sessionBody returns esc(key) time(start) time(end), after dst.
func sessionBody(dst, key []byte, start, end int64) []byte {
	return appendTime(appendTime(appendEscaped(dst, key), start), end)
}

// sessionIndexBody returns time(end) esc(key) time(start), after dst.
func sessionIndexBody(dst, key []byte, start, end int64) []byte {
	return appendTime(appendEscaped(appendTime(dst, end), key), start)
}

// decodeWindowBody splits esc(key) time(start).
func decodeWindowBody(b []byte) (key []byte, start int64, err error) {
	key, rest, err := readEscaped(b)
	if err != nil {
		return nil, 0, err
	}
	if len(rest) != timeLen {
		return nil, 0, fmt.Errorf("%w: window key has %d bytes after the key, want %d", errMalformed, len(rest), timeLen)
	}
	start, err = readTime(rest)
	return key, start, err
}

// decodeSessionBody splits esc(key) time(start) time(end).
func decodeSessionBody(b []byte) (key []byte, start, end int64, err error) {
	key, rest, err := readEscaped(b)
	if err != nil {
		return nil, 0, 0, err
	}
	if len(rest) != 2*timeLen {
		return nil, 0, 0, fmt.Errorf("%w: session key has %d bytes after the key, want %d", errMalformed, len(rest), 2*timeLen)
	}
	start, _ = readTime(rest)
	end, _ = readTime(rest[timeLen:])
	return key, start, end, nil
}

// decodeWindowIndex splits time(start) esc(key).
func decodeWindowIndex(b []byte) (key []byte, start int64, err error) {
	if start, err = readTime(b); err != nil {
		return nil, 0, err
	}
	key, rest, err := readEscaped(b[timeLen:])
	if err == nil && len(rest) != 0 {
		err = fmt.Errorf("%w: %d bytes after a window index key", errMalformed, len(rest))
	}
	return key, start, err
}

// decodeSessionIndex splits time(end) esc(key) time(start).
func decodeSessionIndex(b []byte) (key []byte, start, end int64, err error) {
	if end, err = readTime(b); err != nil {
		return nil, 0, 0, err
	}
	key, rest, err := readEscaped(b[timeLen:])
	if err != nil {
		return nil, 0, 0, err
	}
	if len(rest) != timeLen {
		return nil, 0, 0, fmt.Errorf("%w: session index key has %d bytes after the key, want %d", errMalformed, len(rest), timeLen)
	}
	start, _ = readTime(rest)
	return key, start, end, nil
}

// rows returns the data and index keys of a store-level key (a Change
// key): the key itself for a key-value store, an EncodeWindowKey or
// EncodeSessionKey key for the others. index is nil for key-value stores.
func rows(kind statestore.Kind, prefix, key []byte) (data, index []byte, err error) {
	d := withTag(prefix, tagData)
	switch kind {
	case statestore.KindKeyValue:
		return append(d, key...), nil, nil
	case statestore.KindWindow:
		k, start, err := statestore.DecodeWindowKey(key)
		if err != nil {
			return nil, nil, err
		}
		ms := start.UnixMilli()
		return windowBody(d, k, ms), windowIndexBody(withTag(prefix, tagIndex), k, ms), nil
	case statestore.KindSession:
		k, start, end, err := statestore.DecodeSessionKey(key)
		if err != nil {
			return nil, nil, err
		}
		s, e := start.UnixMilli(), end.UnixMilli()
		return sessionBody(d, k, s, e), sessionIndexBody(withTag(prefix, tagIndex), k, s, e), nil
	}
	return nil, nil, fmt.Errorf("unknown kind %d", int(kind))
}

// prefixEnd returns the smallest key greater than every key that starts with
// prefix, or nil if there is none.
func prefixEnd(prefix []byte) []byte {
	for i := len(prefix) - 1; i >= 0; i-- {
		if prefix[i] != 0xff {
			end := append([]byte(nil), prefix[:i+1]...)
			end[i]++
			return end
		}
	}
	return nil
}

// parseRowKey splits a store row key into its store, partition and tag. ok
// is false for metadata keys and keys of no store.
func parseRowKey(k []byte) (name string, partition int32, tag byte, ok bool) {
	i := 0
	for i < len(k) && k[i] != 0 {
		i++
	}
	if i == 0 || len(k) < i+1+partitionLen+1 {
		return "", 0, 0, false
	}
	p := int32(binary.BigEndian.Uint32(k[i+1:]))
	return string(k[:i]), p, k[i+1+partitionLen], true
}
