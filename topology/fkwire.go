package topology

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
)

// The wire format of a foreign-key join's internal topics and subscription
// store, weir's own (Kafka Streams' SubscriptionWrapper and
// SubscriptionResponseWrapper carry the same information in another
// layout). Keys and values inside are the bytes of the user's serdes.
//
// Subscription (left → right), record key: the foreign key's bytes, or
// none (a nil key) when the left record has no foreign key:
//
//	version   1 byte   fkWireVersion
//	op        1 byte   the fkInstruction
//	flags     1 byte   bit 0: a value hash follows
//	hash     16 bytes  only with flag bit 0
//	pk        rest     the primary (left) key's bytes
//
// Response (right → left), record key: the primary key's bytes:
//
//	version   1 byte   fkWireVersion
//	flags     1 byte   bit 0: a value hash follows; bit 1: a foreign value follows
//	hash     16 bytes  only with flag bit 0
//	value     rest     the foreign (right) value's bytes, only with flag bit 1
//
// Subscription store: key = 4-byte big-endian length of the foreign key,
// the foreign key, the primary key (so that one prefix scan finds every
// left key subscribed to a foreign key, in primary-key byte order, as in
// Kafka Streams' CombinedKeySchema); value = version, flags, hash, as in a
// subscription.
//
// The value hash is FNV-1a 128 of the left value's serialized bytes: it
// only has to be stable across processes and versions of weir, which a
// standard-library algorithm guarantees. A reader meets a version it does
// not know as a record error: weir never writes one yet.

// fkWireVersion is the version byte weir writes.
const fkWireVersion = 1

// errFKWire is wrapped by the errors of undecodable internal records.
var errFKWire = errors.New("topology: foreign-key join: bad internal record")

// fkInstruction tells the right side what to do with a subscription; the
// names and numbers are Kafka Streams' SubscriptionWrapper.Instruction.
type fkInstruction byte

const (
	// fkDeleteAndPropagate unsubscribes and answers with no foreign value.
	fkDeleteAndPropagate fkInstruction = 0
	// fkDeleteNoPropagate unsubscribes silently (the left key moved to
	// another foreign key, whose answer settles the result).
	fkDeleteNoPropagate fkInstruction = 1
	// fkPropagateIfAvailable subscribes and answers only when the foreign
	// key has a value (a new left key in an inner join).
	fkPropagateIfAvailable fkInstruction = 2
	// fkPropagateNullIfAbsent subscribes and always answers, with no
	// foreign value when there is none, so a result set before is unset.
	fkPropagateNullIfAbsent fkInstruction = 3
)

func (i fkInstruction) deletes() bool {
	return i == fkDeleteAndPropagate || i == fkDeleteNoPropagate
}

// fkHash is a left value's hash; ok is false for no value (a delete).
type fkHash struct {
	sum [16]byte
	ok  bool
}

// hashValue returns the hash of a serialized left value; nil is no value.
func hashValue(b []byte) fkHash {
	if b == nil {
		return fkHash{}
	}
	h := fnv.New128a()
	h.Write(b)
	var out fkHash
	h.Sum(out.sum[:0])
	out.ok = true
	return out
}

func (h fkHash) append(dst []byte) []byte {
	if h.ok {
		dst = append(dst, h.sum[:]...)
	}
	return dst
}

const (
	fkFlagHash  = 1 << 0
	fkFlagValue = 1 << 1
)

// subscription is a decoded subscription record's value.
type subscription struct {
	op   fkInstruction
	hash fkHash
	pk   []byte
}

func (s subscription) encode() []byte {
	var flags byte
	if s.hash.ok {
		flags |= fkFlagHash
	}
	out := append(make([]byte, 0, 3+16+len(s.pk)), fkWireVersion, byte(s.op), flags)
	return append(s.hash.append(out), s.pk...)
}

func decodeSubscription(b []byte) (subscription, error) {
	var s subscription
	if len(b) < 3 {
		return s, fmt.Errorf("%w: subscription of %d bytes", errFKWire, len(b))
	}
	if b[0] != fkWireVersion {
		return s, fmt.Errorf("%w: subscription version %d (this weir reads %d)", errFKWire, b[0], fkWireVersion)
	}
	s.op = fkInstruction(b[1])
	if s.op > fkPropagateNullIfAbsent {
		return s, fmt.Errorf("%w: unknown instruction %d", errFKWire, b[1])
	}
	rest, err := readHash(b[2], b[3:], &s.hash)
	s.pk = rest
	return s, err
}

// response is a decoded response record's value.
type response struct {
	hash  fkHash
	found bool   // the foreign key has a value
	value []byte // the foreign value's bytes when found
}

func (r response) encode() []byte {
	var flags byte
	if r.hash.ok {
		flags |= fkFlagHash
	}
	if r.found {
		flags |= fkFlagValue
	}
	out := append(make([]byte, 0, 2+16+len(r.value)), fkWireVersion, flags)
	return append(r.hash.append(out), r.value...)
}

func decodeResponse(b []byte) (response, error) {
	var r response
	if len(b) < 2 {
		return r, fmt.Errorf("%w: response of %d bytes", errFKWire, len(b))
	}
	if b[0] != fkWireVersion {
		return r, fmt.Errorf("%w: response version %d (this weir reads %d)", errFKWire, b[0], fkWireVersion)
	}
	rest, err := readHash(b[1], b[2:], &r.hash)
	if err == nil && b[1]&fkFlagValue != 0 {
		r.found, r.value = true, append([]byte{}, rest...)
	}
	return r, err
}

// readHash reads the hash flags announce from b and returns the rest.
func readHash(flags byte, b []byte, h *fkHash) ([]byte, error) {
	if flags&^(fkFlagHash|fkFlagValue) != 0 {
		return nil, fmt.Errorf("%w: unknown flags %#x", errFKWire, flags)
	}
	if flags&fkFlagHash == 0 {
		return b, nil
	}
	if len(b) < 16 {
		return nil, fmt.Errorf("%w: truncated hash", errFKWire)
	}
	copy(h.sum[:], b[:16])
	h.ok = true
	return b[16:], nil
}

// subscriptionPrefix returns the subscription store's key prefix of a
// foreign key.
func subscriptionPrefix(fk []byte) []byte {
	out := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(fk)), uint32(len(fk)))
	return append(out, fk...)
}

// subscriptionKey returns the subscription store's key of (fk, pk).
func subscriptionKey(fk, pk []byte) []byte {
	return append(subscriptionPrefix(fk), pk...)
}

// splitSubscriptionKey returns the primary key of a subscription store key
// that starts with prefix.
func splitSubscriptionKey(key, prefix []byte) ([]byte, bool) {
	if !bytes.HasPrefix(key, prefix) {
		return nil, false
	}
	return key[len(prefix):], true
}

// storedSubscription is the subscription store's value: the hash of the
// left value that subscribed.
func storedSubscription(h fkHash) []byte {
	var flags byte
	if h.ok {
		flags |= fkFlagHash
	}
	return h.append([]byte{fkWireVersion, flags})
}

func decodeStoredSubscription(b []byte) (fkHash, error) {
	var h fkHash
	if len(b) < 2 || b[0] != fkWireVersion {
		return h, fmt.Errorf("%w: subscription store value", errFKWire)
	}
	_, err := readHash(b[1], b[2:], &h)
	return h, err
}
