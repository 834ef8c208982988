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

// Suppression says which updates of a table Suppress holds back, and for
// how long: UntilTimeLimit or UntilWindowCloses (Kafka Streams'
// Suppressed).
type Suppression struct {
	finalOnly bool          // UntilWindowCloses
	limit     time.Duration // UntilTimeLimit
	buf       BufferConfig
}

// UntilTimeLimit holds each key's latest update until stream time — the
// largest record timestamp the suppression has seen — reaches the
// timestamp of the key's first held update plus limit; then the latest
// update is emitted, with its own timestamp. An update of a key already
// held replaces the held one but keeps its place, so a key updated
// steadily is still emitted once per limit. Tombstones are held and
// emitted like updates. Kafka Streams' Suppressed.untilTimeLimit.
func UntilTimeLimit(limit time.Duration, buf BufferConfig) Suppression {
	return Suppression{limit: limit, buf: buf}
}

// UntilWindowCloses holds each window's updates until the window closes —
// stream time reaches its end plus the grace of the windowed aggregation
// (for sessions, gap plus grace) — and emits its final result, stamped
// with its latest update's timestamp; windows deleted before (merged
// sessions) emit nothing. For a windowed table only, with a buffer that
// does not emit early (Unbounded, or bounded with ShutDownWhenFull), as
// Kafka Streams' StrictBufferConfig. It is Kafka Streams'
// Suppressed.untilWindowCloses; EmitFinal on a time-windowed aggregation
// gives the same results without a buffer.
func UntilWindowCloses(buf BufferConfig) Suppression {
	return Suppression{finalOnly: true, buf: buf}
}

// BufferConfig bounds a suppression's buffer: by records, by bytes, or
// unbounded, and says what happens when it is full (Kafka Streams'
// BufferConfig).
type BufferConfig struct {
	maxRecords int64
	maxBytes   int64
	shutDown   bool
}

// Unbounded is a buffer without bound: it holds every key, in the store and
// in memory (Kafka Streams' BufferConfig.unbounded()).
func Unbounded() BufferConfig {
	return BufferConfig{maxRecords: math.MaxInt64, maxBytes: math.MaxInt64, shutDown: true}
}

// BufferMaxRecords is a buffer of at most n keys that emits early when
// full (Kafka Streams' BufferConfig.maxRecords(n)).
func BufferMaxRecords(n int64) BufferConfig {
	return BufferConfig{maxRecords: n, maxBytes: math.MaxInt64}
}

// BufferMaxBytes is a buffer of at most n bytes that emits early when full
// (Kafka Streams' BufferConfig.maxBytes(n)). A held key counts 28 bytes
// plus its key, value and headers: Kafka Streams' count without the
// topic's name and the old value.
func BufferMaxBytes(n int64) BufferConfig {
	return BufferConfig{maxRecords: math.MaxInt64, maxBytes: n}
}

// WithMaxRecords returns the config bounded to n keys as well.
func (c BufferConfig) WithMaxRecords(n int64) BufferConfig {
	c.maxRecords = n
	return c
}

// WithMaxBytes returns the config bounded to n bytes as well.
func (c BufferConfig) WithMaxBytes(n int64) BufferConfig {
	c.maxBytes = n
	return c
}

// EmitEarlyWhenFull returns the config that, when the buffer is over a
// bound, emits its oldest keys (by held time, then key bytes) until it is
// not, before their time.
func (c BufferConfig) EmitEarlyWhenFull() BufferConfig {
	c.shutDown = false
	return c
}

// ShutDownWhenFull returns the config that, when the buffer is over a
// bound, fails the record with an error wrapping ErrSuppressBufferFull
// and naming the store: the application stops, whatever its bad-record
// policy.
func (c BufferConfig) ShutDownWhenFull() BufferConfig {
	c.shutDown = true
	return c
}

// windowEnder is implemented by Windowed keys: UntilWindowCloses holds an
// update until its window's end.
type windowEnder interface{ windowEnd() int64 }

func (w Windowed[K]) windowEnd() int64 { return w.End.UnixMilli() }

// Suppress returns the table's updates held back as s says (Kafka Streams'
// KTable.suppress). The buffer is a logged store, named by Materialized or
// "<Named>-store" or generated: held updates survive a restart or a move
// and are emitted when their time comes. Stream time is kept in memory and
// starts again after a restart, as in Kafka Streams. The result is not
// materialized.
func (t Table[K, V]) Suppress(s Suppression, opts ...Option) Table[K, V] {
	const prefix = "KTABLE-SUPPRESS"
	b := t.b
	cfg := newConfig(opts)
	if t.ks == nil || t.vs == nil {
		b.failf("%s: no serde for %s or %s; set them with WithKeySerde and WithValueSerde", prefix, typeName[K](), typeName[V]())
	}
	switch {
	case s.buf.maxRecords < 0 || s.buf.maxBytes < 0:
		b.failf("%s: negative buffer bound", prefix)
	case s.buf.maxRecords == 0 && s.buf.maxBytes == 0:
		b.failf("%s: buffer without a bound: use Unbounded, BufferMaxRecords or BufferMaxBytes", prefix)
	}
	if s.limit < 0 {
		b.failf("%s: negative time limit %v", prefix, s.limit)
	}
	p := suppressProc[K, V]{ks: t.ks, vs: t.vs, limit: s.limit.Milliseconds(), buf: s.buf, finalOnly: s.finalOnly}
	if s.finalOnly {
		if _, ok := any(*new(K)).(windowEnder); !ok || !t.windowed {
			b.failf("%s: UntilWindowCloses needs a table of a windowed aggregation, not of %s keys", prefix, typeName[K]())
		}
		if !s.buf.shutDown {
			b.failf("%s: UntilWindowCloses emits final results only: its buffer must not emit early (use Unbounded or ShutDownWhenFull)", prefix)
		}
		p.limit = t.closeDelay.Milliseconds()
	}
	store := cfg.store
	switch {
	case store != "":
	case cfg.name != "":
		store = cfg.name + "-store"
	default:
		store = b.nextName(prefix + "-STATE-STORE")
	}
	p.store = store
	n := b.addNode(&nodeDef{
		kind:    processor.KindProcessor,
		newProc: copies(p),
	}, prefix, cfg, t.node)
	b.addStore(statestore.Spec{Name: store, Kind: statestore.KindKeyValue, Logged: true}, n)
	return Table[K, V]{b: b, node: n, ks: t.ks, vs: t.vs, windowed: t.windowed, closeDelay: t.closeDelay}
}

// suppressProc holds table updates in a time-ordered buffer, as Kafka
// Streams' KTableSuppressProcessor and InMemoryTimeOrderedKeyValueBuffer:
// after each update it emits, oldest first, the keys whose held time is at
// most stream time − limit, then, when the buffer is over a bound, emits
// early or fails.
//
// The buffer lives entirely in its store, so that it is restored from its
// changelog and rolled back with its task's other state:
//
//	'k' key                     → the held update (see entry)
//	't' held time (sortable) key → present: the time order
//	'm'                         → the buffer's record count and byte size
type suppressProc[K, V any] struct {
	store     string
	ks        serde.Serde[K]
	vs        serde.Serde[V]
	limit     int64 // ms: the time limit, or the window's grace for UntilWindowCloses
	buf       BufferConfig
	finalOnly bool // tombstones are not emitted; held time is the window end

	kv       statestore.KeyValueStore
	observed int64 // the largest timestamp seen; -1 before the first
}

var suppressMetaKey = []byte{'m'}

func (p *suppressProc[K, V]) Init(ctx processor.Context[any, any]) error {
	kv, err := kvStore(ctx, p.store)
	if err != nil {
		return err
	}
	p.kv, p.observed = kv, -1
	return nil
}

func (p *suppressProc[K, V]) Process(ctx processor.Context[any, any], r processor.Record[any, any]) error {
	if dropNull(ctx, r.Key == nil) {
		return nil
	}
	if err := p.process(ctx, r); err != nil {
		return fmt.Errorf("topology: suppress %q: %w", p.store, err)
	}
	return nil
}

func (p *suppressProc[K, V]) process(ctx processor.Context[any, any], r processor.Record[any, any]) error {
	tr, err := processor.Assert[K, V](r)
	if err != nil {
		return err
	}
	ts := r.Timestamp.UnixMilli()
	p.observed = max(p.observed, ts)
	held := ts
	if p.finalOnly {
		held = any(tr.Key).(windowEnder).windowEnd()
	}
	kb, err := p.ks.Serialize(p.store, tr.Key)
	if err != nil {
		return fmt.Errorf("serialize key: %w", err)
	}
	e := entry{ts: ts, headers: r.Headers, topic: r.Topic, partition: r.Partition, offset: r.Offset}
	if r.Value != nil {
		if e.value, err = p.vs.Serialize(p.store, tr.Value); err != nil {
			return fmt.Errorf("serialize value: %w", err)
		}
	}
	count, size, err := p.meta()
	if err != nil {
		return err
	}
	prev, found, err := p.kv.Get(entryKey(kb))
	if err != nil {
		return err
	}
	if found {
		old, err := decodeEntry(prev)
		if err != nil {
			return err
		}
		e.held = old.held // a held key keeps its place in time order
		size -= old.size(kb)
	} else {
		e.held = held
		count++
		if err := p.kv.Put(timeKey(held, kb), []byte{1}); err != nil {
			return err
		}
	}
	size += e.size(kb)
	if err := p.kv.Put(entryKey(kb), e.encode()); err != nil {
		return err
	}
	expiry := p.observed - p.limit
	count, size, err = p.evict(ctx, count, size, func(held, _, _ int64) bool { return held <= expiry })
	if err != nil {
		return err
	}
	if p.over(count, size) {
		if p.buf.shutDown {
			return fmt.Errorf("%w: store %q holds %d/%d records, %d/%d bytes",
				ErrSuppressBufferFull, p.store, count, p.buf.maxRecords, size, p.buf.maxBytes)
		}
		if count, size, err = p.evict(ctx, count, size, func(_, c, s int64) bool { return p.over(c, s) }); err != nil {
			return err
		}
	}
	return p.kv.Put(suppressMetaKey, binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, uint64(count)), uint64(size)))
}

func (p *suppressProc[K, V]) over(count, size int64) bool {
	return count > p.buf.maxRecords || size > p.buf.maxBytes
}

// meta returns the buffer's record count and byte size.
func (p *suppressProc[K, V]) meta() (count, size int64, err error) {
	m, ok, err := p.kv.Get(suppressMetaKey)
	if err != nil || !ok {
		return 0, 0, err
	}
	if len(m) != 16 {
		return 0, 0, fmt.Errorf("buffer metadata of %d bytes", len(m))
	}
	return int64(binary.BigEndian.Uint64(m)), int64(binary.BigEndian.Uint64(m[8:])), nil
}

// evict emits and removes held keys, oldest first, while more(held time,
// count, size) holds; it returns the new count and size.
func (p *suppressProc[K, V]) evict(ctx processor.Context[any, any], count, size int64, more func(held, count, size int64) bool) (int64, int64, error) {
	type eviction struct {
		tk, kb []byte
		e      entry
	}
	var out []eviction
	it, err := p.kv.PrefixScan([]byte{'t'})
	if err != nil {
		return 0, 0, err
	}
	for it.Next() {
		tk := append([]byte(nil), it.Key()...)
		if len(tk) < 9 {
			_ = it.Close()
			return 0, 0, errBadEntry
		}
		held, kb := splitTimeKey(tk)
		if !more(held, count, size) {
			break
		}
		v, ok, err := p.kv.Get(entryKey(kb))
		if err != nil || !ok {
			_ = it.Close()
			return 0, 0, errors.Join(err, fmt.Errorf("buffer time index names a missing key"))
		}
		e, err := decodeEntry(v)
		if err != nil {
			_ = it.Close()
			return 0, 0, err
		}
		out = append(out, eviction{tk: tk, kb: kb, e: e})
		count--
		size -= e.size(kb)
	}
	if err := closeIter(it); err != nil {
		return 0, 0, err
	}
	for _, ev := range out {
		if err := p.kv.Delete(ev.tk); err != nil {
			return 0, 0, err
		}
		if err := p.kv.Delete(entryKey(ev.kb)); err != nil {
			return 0, 0, err
		}
		if ev.e.value == nil && p.finalOnly {
			continue // a deleted window has no final result
		}
		if err := p.forward(ctx, ev.kb, ev.e); err != nil {
			return 0, 0, err
		}
	}
	return count, size, nil
}

// forward emits a held update as it came: key, value, timestamp, headers.
func (p *suppressProc[K, V]) forward(ctx processor.Context[any, any], kb []byte, e entry) error {
	k, err := p.ks.Deserialize(p.store, kb)
	if err != nil {
		return err
	}
	out := processor.Record[any, any]{
		Key: k, Timestamp: time.UnixMilli(e.ts), Headers: e.headers,
		Topic: e.topic, Partition: e.partition, Offset: e.offset,
	}
	if e.value != nil {
		v, err := p.vs.Deserialize(p.store, e.value)
		if err != nil {
			return err
		}
		out.Value = v
	}
	return ctx.Forward(out)
}

// entry is a held update: its place in time order (held), the update's
// value (nil: a tombstone), timestamp, headers and origin.
type entry struct {
	held, ts  int64
	value     []byte
	headers   []processor.Header
	topic     string
	partition int32
	offset    int64
}

// size is the entry's share of the buffer, nearly as Kafka Streams counts
// it: the held time, key, value and record metadata (timestamp, offset,
// partition, headers). Kafka Streams also counts the topic's name, which
// would make the bound depend on where the table came from, and the old
// value, which weir's tables do not carry.
func (e entry) size(kb []byte) int64 {
	n := 8 + len(kb) + len(e.value) + 8 + 8 + 4
	for _, h := range e.headers {
		n += len(h.Key) + len(h.Value)
	}
	return int64(n)
}

func (e entry) encode() []byte {
	out := binary.BigEndian.AppendUint64(nil, uint64(e.held))
	out = binary.BigEndian.AppendUint64(out, uint64(e.ts))
	out = appendBytes(out, e.value)
	out = appendBytes(out, []byte(e.topic))
	out = binary.BigEndian.AppendUint32(out, uint32(e.partition))
	out = binary.BigEndian.AppendUint64(out, uint64(e.offset))
	out = binary.BigEndian.AppendUint32(out, uint32(len(e.headers)))
	for _, h := range e.headers {
		out = appendBytes(out, []byte(h.Key))
		out = appendBytes(out, h.Value)
	}
	return out
}

// appendBytes appends b with a length prefix; nil is kept apart from empty.
func appendBytes(out, b []byte) []byte {
	if b == nil {
		return binary.BigEndian.AppendUint32(out, math.MaxUint32)
	}
	out = binary.BigEndian.AppendUint32(out, uint32(len(b)))
	return append(out, b...)
}

var errBadEntry = errors.New("topology: suppress: malformed buffer entry")

func decodeEntry(b []byte) (entry, error) {
	var e entry
	r := entryReader{b: b}
	e.held = int64(r.u64())
	e.ts = int64(r.u64())
	e.value = r.bytes()
	e.topic = string(r.bytes())
	e.partition = int32(r.u32())
	e.offset = int64(r.u64())
	n := r.u32()
	for i := uint32(0); i < n && r.ok(); i++ {
		e.headers = append(e.headers, processor.Header{Key: string(r.bytes()), Value: r.bytes()})
	}
	if !r.ok() || len(r.b) != 0 {
		return entry{}, errBadEntry
	}
	return e, nil
}

// entryReader reads an encoded entry; a short read sets bad.
type entryReader struct {
	b   []byte
	bad bool
}

func (r *entryReader) ok() bool { return !r.bad }

func (r *entryReader) take(n int) []byte {
	if r.bad || n > len(r.b) {
		r.bad = true
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

func (r *entryReader) u64() uint64 {
	if b := r.take(8); b != nil {
		return binary.BigEndian.Uint64(b)
	}
	return 0
}

func (r *entryReader) u32() uint32 {
	if b := r.take(4); b != nil {
		return binary.BigEndian.Uint32(b)
	}
	return 0
}

func (r *entryReader) bytes() []byte {
	n := r.u32()
	if n == math.MaxUint32 || r.bad {
		return nil
	}
	return append([]byte{}, r.take(int(n))...)
}

func entryKey(kb []byte) []byte { return append([]byte{'k'}, kb...) }

// timeKey orders held keys by held time, then key bytes, as Kafka Streams'
// buffer does; the sign bit is flipped so negative times sort first.
func timeKey(held int64, kb []byte) []byte {
	out := binary.BigEndian.AppendUint64([]byte{'t'}, uint64(held)^(1<<63))
	return append(out, kb...)
}

// splitTimeKey splits a time key of at least 9 bytes.
func splitTimeKey(tk []byte) (int64, []byte) {
	return int64(binary.BigEndian.Uint64(tk[1:9]) ^ (1 << 63)), tk[9:]
}
