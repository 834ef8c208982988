package serde

import (
	"errors"
	"fmt"
	"math"
)

// goavro v2.15.0 decodes binary Avro without bounding what a block count may
// claim: it allocates make([]any, 0, count) for an array block and
// make(map[string]any, count) for a map block as soon as it reads the count,
// with counts of up to math.MaxInt32. Five input bytes are enough to make the
// runtime die with "fatal error: runtime: out of memory", which no recover can
// catch. A record that contains itself (no finite value exists) makes it
// recurse until "fatal error: stack overflow", on any input.
//
// So every binary Avro input is first walked here, without allocating,
// against the shape of its schema (avroshape.go), before goavro sees it. The
// walk checks that
//
//   - each block count fits in the bytes that are left, given the smallest
//     encoding of one item (so goavro allocates at most a constant times the
//     input size, the constant depending on the schema);
//   - items that take no bytes at all (arrays of null or of empty records)
//     stay within maxAvroZeroWidthItems per input;
//   - values nest at most maxAvroDepth deep;
//   - every length, union index and enum index is in range, and the value
//     ends exactly at the end of the input (trailing bytes are an error).
//
// Schemas in which a record contains itself other than through a union, array
// or map are rejected when they are compiled.

const (
	// maxAvroDepth bounds how deep values may nest in one input.
	maxAvroDepth = 10_000
	// maxAvroZeroWidthItems bounds the array items of a type whose encoding
	// is empty (null, an empty record) in one input.
	maxAvroZeroWidthItems = 1 << 16
)

// checkAvro's errors wrap one of these: errAvroScan for input that is not a
// value of the schema, errAvroLimit for input goavro must not be given
// because of what it would allocate or how deep it would recurse.
var (
	errAvroScan  = errors.New("malformed avro binary")
	errAvroLimit = errors.New("avro binary over decoding limits")
)

// checkAvro walks b as one binary-encoded value of shape s and reports an
// error if b is not exactly one well-formed value within the limits above.
func checkAvro(s *avroShape, b []byte) error {
	sc := avroScanner{b: b, zeroWidth: maxAvroZeroWidthItems}
	if err := sc.value(s); err != nil {
		return err
	}
	if n := len(sc.b); n != 0 {
		return fmt.Errorf("%w: %d trailing bytes after the value", errAvroScan, n)
	}
	return nil
}

type avroScanner struct {
	b         []byte // the bytes not read yet
	depth     int
	zeroWidth int // zero-width items still allowed
}

func (sc *avroScanner) value(s *avroShape) error {
	if sc.depth++; sc.depth > maxAvroDepth {
		return fmt.Errorf("%w: values nest deeper than %d", errAvroLimit, maxAvroDepth)
	}
	err := sc.walk(s)
	sc.depth--
	return err
}

func (sc *avroScanner) walk(s *avroShape) error {
	switch s.kind {
	case avroNull:
		return nil
	case avroBoolean:
		return sc.skip(1, "boolean")
	case avroInt, avroLong:
		_, err := sc.varint()
		return err
	case avroFloat:
		return sc.skip(4, "float")
	case avroDouble:
		return sc.skip(8, "double")
	case avroBytes, avroString:
		n, err := sc.varint()
		if err != nil {
			return err
		}
		if n < 0 || n > int64(len(sc.b)) {
			return fmt.Errorf("%w: length %d with %d bytes left", errAvroScan, n, len(sc.b))
		}
		sc.b = sc.b[n:]
		return nil
	case avroFixed:
		if s.size > uint(len(sc.b)) {
			return fmt.Errorf("%w: fixed %s needs %d bytes, %d left", errAvroScan, s.name, s.size, len(sc.b))
		}
		sc.b = sc.b[s.size:]
		return nil
	case avroEnum:
		return sc.index(s.count, "enum "+s.name)
	case avroUnion:
		i, err := sc.varint()
		if err != nil {
			return err
		}
		if i < 0 || i >= int64(len(s.kids)) {
			return fmt.Errorf("%w: union index %d, want [0, %d)", errAvroScan, i, len(s.kids))
		}
		return sc.value(s.kids[i])
	case avroRecord:
		for _, f := range s.kids {
			if err := sc.value(f); err != nil {
				return err
			}
		}
		return nil
	case avroArray, avroMap:
		return sc.blocks(s)
	}
	return fmt.Errorf("%w: unknown kind %d", errAvroScan, s.kind)
}

// blocks walks the blocks of an array or map: a count, a byte size if the
// count is negative, that many items, and so on until a count of zero.
func (sc *avroScanner) blocks(s *avroShape) error {
	item := s.kids[0]
	itemMin := item.min
	if s.kind == avroMap {
		itemMin++ // the key is a string: at least its length
	}
	for {
		count, err := sc.varint()
		if err != nil {
			return err
		}
		if count == 0 {
			return nil
		}
		if count < 0 {
			if count == math.MinInt64 {
				return fmt.Errorf("%w: block count %d", errAvroScan, count)
			}
			count = -count
			if _, err := sc.varint(); err != nil { // block size in bytes, unused
				return err
			}
		}
		if itemMin > 0 {
			if count > int64(len(sc.b)/itemMin) {
				return fmt.Errorf("%w: block of %d items with %d bytes left", errAvroLimit, count, len(sc.b))
			}
		} else {
			if count > int64(sc.zeroWidth) {
				return fmt.Errorf("%w: more than %d items of zero width", errAvroLimit, maxAvroZeroWidthItems)
			}
			sc.zeroWidth -= int(count)
			continue // such items have no bytes to walk
		}
		for range count {
			if s.kind == avroMap {
				if err := sc.value(avroStringShape); err != nil {
					return err
				}
			}
			if err := sc.value(item); err != nil {
				return err
			}
		}
	}
}

// varint reads a zig-zag varint of at most 10 bytes, Avro's int and long.
func (sc *avroScanner) varint() (int64, error) {
	var u uint64
	for i := 0; i < len(sc.b) && i < 10; i++ {
		c := sc.b[i]
		u |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			sc.b = sc.b[i+1:]
			return int64(u>>1) ^ -int64(u&1), nil
		}
	}
	if len(sc.b) >= 10 {
		return 0, fmt.Errorf("%w: varint longer than 10 bytes", errAvroScan)
	}
	return 0, fmt.Errorf("%w: truncated varint", errAvroScan)
}

func (sc *avroScanner) index(n int, what string) error {
	i, err := sc.varint()
	if err != nil {
		return err
	}
	if i < 0 || i >= int64(n) {
		return fmt.Errorf("%w: %s index %d, want [0, %d)", errAvroScan, what, i, n)
	}
	return nil
}

func (sc *avroScanner) skip(n int, what string) error {
	if len(sc.b) < n {
		return fmt.Errorf("%w: %s needs %d bytes, %d left", errAvroScan, what, n, len(sc.b))
	}
	sc.b = sc.b[n:]
	return nil
}
