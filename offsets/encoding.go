package offsets

import (
	"encoding"
	"encoding/binary"
	"fmt"
	"math"
	"time"
)

// formatV1 is the first byte of every record this package writes.
//
// Version 1 layouts (uv = unsigned varint, sv = zigzag varint, str = uv
// length then bytes, ms = sv milliseconds since the Unix epoch):
//
//	Plan:   0x01 uv(batch) ms(timestamp) ms(watermark) str(trigger)
//	        uv(topics) { str(topic) uv(n≥1) { uv(partition) uv(start) uv(end) }×n }
//	Commit: 0x01 uv(batch) ms(timestamp)
//	Epoch:  0x01 uv(epoch) ms(timestamp)
//	        uv(topics) { str(topic) uv(n≥1) { uv(partition) uv(next) }×n }
//
// Ranges and offsets are grouped by topic, in the order Validate requires.
// Varints must be minimal, so a valid record has exactly one encoding.
const formatV1 = 1

var (
	_ encoding.BinaryMarshaler   = Plan{}
	_ encoding.BinaryAppender    = Plan{}
	_ encoding.BinaryUnmarshaler = (*Plan)(nil)
	_ encoding.BinaryMarshaler   = Commit{}
	_ encoding.BinaryAppender    = Commit{}
	_ encoding.BinaryUnmarshaler = (*Commit)(nil)
	_ encoding.BinaryMarshaler   = Epoch{}
	_ encoding.BinaryAppender    = Epoch{}
	_ encoding.BinaryUnmarshaler = (*Epoch)(nil)
)

// AppendBinary appends the plan's encoding (format version 1) to b. It
// returns an error wrapping ErrInvalid if the plan does not validate.
func (p Plan) AppendBinary(b []byte) ([]byte, error) {
	if err := p.Validate(); err != nil {
		return b, err
	}
	b = append(b, formatV1)
	b = binary.AppendUvarint(b, uint64(p.Batch))
	b = appendTime(b, p.Timestamp)
	b = appendTime(b, p.Watermark)
	b = appendString(b, p.Trigger)
	b = appendGroups(b, p.Ranges, func(b []byte, r Range) []byte {
		b = binary.AppendUvarint(b, uint64(r.Partition))
		b = binary.AppendUvarint(b, uint64(r.Start))
		return binary.AppendUvarint(b, uint64(r.End))
	})
	return b, nil
}

// MarshalBinary returns the plan's encoding (format version 1). It returns
// an error wrapping ErrInvalid if the plan does not validate.
func (p Plan) MarshalBinary() ([]byte, error) { return p.AppendBinary(nil) }

// UnmarshalBinary decodes a plan written by MarshalBinary into p. Bad input
// gives an error wrapping ErrCorrupt and leaves p unchanged; the decoded
// plan does not alias b.
func (p *Plan) UnmarshalBinary(b []byte) error {
	d := decoder{b: b}
	d.version()
	var v Plan
	v.Batch = d.int64()
	v.Timestamp = d.time()
	v.Watermark = d.time()
	v.Trigger = d.string()
	// A range is at least three 1-byte varints.
	v.Ranges = decodeGroups(&d, 3, func(topic string) Range {
		r := Range{TopicPartition: TopicPartition{Topic: topic}}
		r.Partition = d.int32()
		r.Start = d.int64()
		r.End = d.int64()
		return r
	})
	d.end()
	if d.err == nil {
		if err := v.validate(); err != nil {
			d.err = err
		}
	}
	if d.err != nil {
		return fmt.Errorf("%w: plan: %w", ErrCorrupt, d.err)
	}
	*p = v
	return nil
}

// AppendBinary appends the commit's encoding (format version 1) to b. It
// returns an error wrapping ErrInvalid if the commit does not validate.
func (c Commit) AppendBinary(b []byte) ([]byte, error) {
	if err := c.Validate(); err != nil {
		return b, err
	}
	b = append(b, formatV1)
	b = binary.AppendUvarint(b, uint64(c.Batch))
	b = appendTime(b, c.Timestamp)
	return b, nil
}

// MarshalBinary returns the commit's encoding (format version 1). It
// returns an error wrapping ErrInvalid if the commit does not validate.
func (c Commit) MarshalBinary() ([]byte, error) { return c.AppendBinary(nil) }

// UnmarshalBinary decodes a commit written by MarshalBinary into c. Bad
// input gives an error wrapping ErrCorrupt and leaves c unchanged.
func (c *Commit) UnmarshalBinary(b []byte) error {
	d := decoder{b: b}
	d.version()
	var v Commit
	v.Batch = d.int64()
	v.Timestamp = d.time()
	d.end()
	if d.err != nil {
		return fmt.Errorf("%w: commit: %w", ErrCorrupt, d.err)
	}
	*c = v
	return nil
}

// AppendBinary appends the epoch's encoding (format version 1) to b. It
// returns an error wrapping ErrInvalid if the epoch does not validate.
func (e Epoch) AppendBinary(b []byte) ([]byte, error) {
	if err := e.Validate(); err != nil {
		return b, err
	}
	b = append(b, formatV1)
	b = binary.AppendUvarint(b, uint64(e.Epoch))
	b = appendTime(b, e.Timestamp)
	b = appendGroups(b, e.Offsets, func(b []byte, po PartitionOffset) []byte {
		b = binary.AppendUvarint(b, uint64(po.Partition))
		return binary.AppendUvarint(b, uint64(po.Next))
	})
	return b, nil
}

// MarshalBinary returns the epoch's encoding (format version 1). It returns
// an error wrapping ErrInvalid if the epoch does not validate.
func (e Epoch) MarshalBinary() ([]byte, error) { return e.AppendBinary(nil) }

// UnmarshalBinary decodes an epoch written by MarshalBinary into e. Bad
// input gives an error wrapping ErrCorrupt and leaves e unchanged; the
// decoded epoch does not alias b.
func (e *Epoch) UnmarshalBinary(b []byte) error {
	d := decoder{b: b}
	d.version()
	var v Epoch
	v.Epoch = d.int64()
	v.Timestamp = d.time()
	// An offset is at least two 1-byte varints.
	v.Offsets = decodeGroups(&d, 2, func(topic string) PartitionOffset {
		po := PartitionOffset{TopicPartition: TopicPartition{Topic: topic}}
		po.Partition = d.int32()
		po.Next = d.int64()
		return po
	})
	d.end()
	if d.err == nil {
		if err := v.validate(); err != nil {
			d.err = err
		}
	}
	if d.err != nil {
		return fmt.Errorf("%w: epoch: %w", ErrCorrupt, d.err)
	}
	*e = v
	return nil
}

// topicItem is an element of a Plan's ranges or an Epoch's offsets, which
// are written grouped by topic.
type topicItem interface {
	Range | PartitionOffset
	topicName() string
}

func (tp TopicPartition) topicName() string { return tp.Topic }

// appendGroups appends items, sorted by topic, as
// uv(topics) { str(topic) uv(n≥1) { item }×n }, each item written by
// appendItem.
func appendGroups[T topicItem](b []byte, items []T, appendItem func([]byte, T) []byte) []byte {
	topics := 0
	for i := range items {
		if i == 0 || items[i].topicName() != items[i-1].topicName() {
			topics++
		}
	}
	b = binary.AppendUvarint(b, uint64(topics))
	for i := 0; i < len(items); {
		topic := items[i].topicName()
		j := i + 1
		for j < len(items) && items[j].topicName() == topic {
			j++
		}
		b = appendString(b, topic)
		b = binary.AppendUvarint(b, uint64(j-i))
		for _, item := range items[i:j] {
			b = appendItem(b, item)
		}
		i = j
	}
	return b
}

// decodeGroups reads the topic groups appendGroups writes, each item with
// readItem, whose encoding is at least minItem bytes. It rejects an empty
// group and topics out of order, which would give a second encoding of
// the same items.
func decodeGroups[T topicItem](d *decoder, minItem int, readItem func(topic string) T) []T {
	// The smallest topic group is a name length, a 1-byte name, a count
	// and one item.
	topics := d.count(3 + minItem)
	var items []T
	prev := ""
	for i := range topics {
		topic := d.string()
		n := d.count(minItem)
		if d.err == nil && n == 0 {
			d.fail("empty topic group %q", topic)
		}
		if d.err == nil && i > 0 && topic <= prev {
			d.fail("topic %q out of order", topic) // or split into two groups
		}
		prev = topic
		if d.err != nil {
			break
		}
		items = slicesGrow(items, n)
		for range n {
			items = append(items, readItem(topic))
		}
	}
	return items
}

// slicesGrow makes room for n more elements. n is bounded by the decoder's
// remaining input, so a forged count cannot allocate more than the input
// could describe.
func slicesGrow[S ~[]E, E any](s S, n int) S {
	if cap(s)-len(s) >= n {
		return s
	}
	return append(make(S, 0, len(s)+n), s...)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendTime stores t as milliseconds since the Unix epoch. The zero Time
// has its own millisecond value and decodes back to the zero Time.
func appendTime(b []byte, t time.Time) []byte {
	return binary.AppendVarint(b, t.UnixMilli())
}

// decoder reads version-1 fields from b. The first error sticks: later
// reads return zero values, so decoding code can check once at the end.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf(format, args...)
	}
}

func (d *decoder) version() {
	if len(d.b) == 0 {
		d.fail("empty input")
		return
	}
	if d.b[0] != formatV1 {
		d.fail("unknown format version %d", d.b[0])
		return
	}
	d.b = d.b[1:]
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	switch {
	case n == 0:
		d.fail("truncated input")
		return 0
	case n < 0:
		d.fail("varint overflows 64 bits")
		return 0
	case n > 1 && d.b[n-1] == 0:
		d.fail("non-minimal varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	u := d.uvarint()
	// Zigzag, as binary.Varint decodes it.
	x := int64(u >> 1)
	if u&1 != 0 {
		x = ^x
	}
	return x
}

// int64 reads a non-negative int64 stored as an unsigned varint.
func (d *decoder) int64() int64 {
	v := d.uvarint()
	if v > math.MaxInt64 {
		d.fail("value %d out of range", v)
		return 0
	}
	return int64(v)
}

// int32 reads a non-negative int32 stored as an unsigned varint.
func (d *decoder) int32() int32 {
	v := d.uvarint()
	if v > math.MaxInt32 {
		d.fail("value %d out of range", v)
		return 0
	}
	return int32(v)
}

func (d *decoder) time() time.Time {
	ms := d.varint()
	if d.err != nil {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

func (d *decoder) string() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)) {
		d.fail("string of %d bytes with %d left", n, len(d.b))
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

// count reads an element count and checks that the remaining input can
// hold that many elements of at least minSize bytes each.
func (d *decoder) count(minSize int) int {
	n := d.uvarint()
	if d.err != nil {
		return 0
	}
	if n > uint64(len(d.b)/minSize) {
		d.fail("count %d too large for %d bytes left", n, len(d.b))
		return 0
	}
	return int(n)
}

func (d *decoder) end() {
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d trailing bytes", len(d.b))
	}
}
