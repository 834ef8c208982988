package topology

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/statestore"
)

// joinBuffer is the grace buffer of a stream–table join, Kafka Streams'
// RocksDBTimeOrderedKeyValueBuffer: stream records in a key-value store,
// ordered by timestamp, then key bytes, then arrival. Its stream time is
// the largest timestamp it has taken; a record is let out (evicted) once
// its timestamp is at or before stream time minus the grace.
//
// Layout (timestamps big-endian with the sign bit flipped, so they sort):
//
//	0x00                          → stream time (8) ‖ sequence (4)
//	0x01 ‖ ts (8) ‖ key ‖ seq (4) → offset (8) ‖ partition (4) ‖ len(topic) (2) ‖ topic
//	                                ‖ headers ‖ value
//
// with headers as count (4), then per header len(key) (4) ‖ key ‖
// len(value) (4, 0xffffffff for nil) ‖ value. The sequence, as Kafka
// Streams', counts puts modulo 2³¹ and keeps equal timestamps and keys in
// arrival order.
type joinBuffer[K, V any] struct {
	store string
	grace int64 // ms
	ks    serde.Serde[K]
	vs    serde.Serde[V]
	kv    statestore.KeyValueStore
}

var errCorruptBuffer = errors.New("topology: corrupt join buffer entry")

func (b *joinBuffer[K, V]) init(ctx processor.Context[any, any]) error {
	kv, err := kvStore(ctx, b.store)
	if err != nil {
		return err
	}
	b.kv = kv
	return nil
}

// meta returns the buffer's stream time (noTime before its first record)
// and its last sequence number.
func (b *joinBuffer[K, V]) meta() (int64, uint32, error) {
	v, ok, err := b.kv.Get([]byte{0x00})
	if err != nil || !ok {
		return noTime, 0, err
	}
	if len(v) != 12 {
		return 0, 0, fmt.Errorf("%w: stream time of %d bytes", errCorruptBuffer, len(v))
	}
	return int64(binary.BigEndian.Uint64(v)), binary.BigEndian.Uint32(v[8:]), nil
}

// noTime is the buffer's stream time before its first record.
const noTime int64 = math.MinInt64

func bufferTime(ts int64) []byte {
	return binary.BigEndian.AppendUint64([]byte{0x01}, uint64(ts)^(1<<63))
}

// put holds r (key k, value v) and reports true, or reports false when r
// is already beyond the grace period: then the caller joins it at once.
func (b *joinBuffer[K, V]) put(k K, v V, r processor.Record[any, any]) (bool, error) {
	ts := r.Timestamp.UnixMilli()
	observed, seq, err := b.meta()
	if err != nil {
		return false, err
	}
	if observed != noTime && observed-b.grace > ts {
		return false, nil
	}
	kb, err := b.ks.Serialize(b.store, k)
	if err != nil {
		return false, err
	}
	vb, err := b.vs.Serialize(b.store, v)
	if err != nil {
		return false, err
	}
	seq = (seq + 1) & 0x7fffffff
	meta := binary.BigEndian.AppendUint64(nil, uint64(max(observed, ts)))
	if err := b.kv.Put([]byte{0x00}, binary.BigEndian.AppendUint32(meta, seq)); err != nil {
		return false, err
	}
	key := binary.BigEndian.AppendUint32(append(bufferTime(ts), kb...), seq)
	return true, b.kv.Put(key, encodeHeld(r, vb))
}

// evict hands fn, in buffer order, every record at or before stream time
// minus the grace, and removes it.
func (b *joinBuffer[K, V]) evict(fn func(K, V, processor.Record[any, any]) error) error {
	observed, _, err := b.meta()
	if err != nil || observed == noTime || observed-b.grace == math.MaxInt64 {
		return err
	}
	it, err := b.kv.Range([]byte{0x01}, bufferTime(observed-b.grace+1))
	if err != nil {
		return err
	}
	defer it.Close()
	for it.Next() {
		key := it.Key()
		if len(key) < 13 {
			return fmt.Errorf("%w: key of %d bytes", errCorruptBuffer, len(key))
		}
		ts := int64(binary.BigEndian.Uint64(key[1:9]) ^ (1 << 63))
		r, vb, err := decodeHeld(it.Value())
		if err != nil {
			return err
		}
		k, err := b.ks.Deserialize(b.store, key[9:len(key)-4])
		if err != nil {
			return err
		}
		v, err := b.vs.Deserialize(b.store, vb)
		if err != nil {
			return err
		}
		r.Key, r.Value, r.Timestamp = k, v, time.UnixMilli(ts)
		if err := b.kv.Delete(key); err != nil {
			return err
		}
		if err := fn(k, v, r); err != nil {
			return err
		}
	}
	return it.Err()
}

// encodeHeld encodes what a held record keeps besides its key and time.
func encodeHeld(r processor.Record[any, any], value []byte) []byte {
	out := binary.BigEndian.AppendUint64(nil, uint64(r.Offset))
	out = binary.BigEndian.AppendUint32(out, uint32(r.Partition))
	out = binary.BigEndian.AppendUint16(out, uint16(min(len(r.Topic), math.MaxUint16)))
	out = append(out, r.Topic[:min(len(r.Topic), math.MaxUint16)]...)
	out = binary.BigEndian.AppendUint32(out, uint32(len(r.Headers)))
	for _, h := range r.Headers {
		out = binary.BigEndian.AppendUint32(out, uint32(len(h.Key)))
		out = append(out, h.Key...)
		if h.Value == nil {
			out = binary.BigEndian.AppendUint32(out, math.MaxUint32)
			continue
		}
		out = binary.BigEndian.AppendUint32(out, uint32(len(h.Value)))
		out = append(out, h.Value...)
	}
	return append(out, value...)
}

// decodeHeld reverses encodeHeld.
func decodeHeld(b []byte) (processor.Record[any, any], []byte, error) {
	var r processor.Record[any, any]
	bad := fmt.Errorf("%w: value of %d bytes", errCorruptBuffer, len(b))
	take := func(n int) ([]byte, bool) {
		if n < 0 || len(b) < n {
			return nil, false
		}
		out := b[:n]
		b = b[n:]
		return out, true
	}
	head, ok := take(14)
	if !ok {
		return r, nil, bad
	}
	r.Offset = int64(binary.BigEndian.Uint64(head))
	r.Partition = int32(binary.BigEndian.Uint32(head[8:]))
	topic, ok := take(int(binary.BigEndian.Uint16(head[12:])))
	count, ok2 := take(4)
	if !ok || !ok2 {
		return r, nil, bad
	}
	r.Topic = string(topic)
	for n := binary.BigEndian.Uint32(count); n > 0; n-- {
		kl, ok := take(4)
		if !ok {
			return r, nil, bad
		}
		hk, ok := take(int(binary.BigEndian.Uint32(kl)))
		vl, ok2 := take(4)
		if !ok || !ok2 {
			return r, nil, bad
		}
		h := processor.Header{Key: string(hk)}
		if l := binary.BigEndian.Uint32(vl); l != math.MaxUint32 {
			hv, ok := take(int(l))
			if !ok {
				return r, nil, bad
			}
			h.Value = append([]byte{}, hv...)
		}
		r.Headers = append(r.Headers, h)
	}
	return r, b, nil
}
