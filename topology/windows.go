package topology

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/weirstream/weir/serde"
)

// Windows describes fixed-size time windows for WindowedBy: tumbling,
// hopping or sliding. Window boundaries are in record (event) time, in
// milliseconds. A window accepts records until stream time — the largest
// timestamp the aggregation itself has seen, as in Kafka Streams — reaches
// its end plus the grace period; later records are dropped and counted under
// processor.MetricDroppedLate.
type Windows struct {
	kind    windowKind
	size    time.Duration
	advance time.Duration
	grace   time.Duration
}

type windowKind int

const (
	tumbling windowKind = iota + 1
	hopping
	sliding
)

// TumblingWindows returns back-to-back windows of the given size:
// [0, size), [size, 2·size), ...
func TumblingWindows(size time.Duration) Windows {
	return Windows{kind: tumbling, size: size, advance: size}
}

// HoppingWindows returns overlapping windows of the given size starting every
// advance: a record belongs to size/advance windows.
func HoppingWindows(size, advance time.Duration) Windows {
	return Windows{kind: hopping, size: size, advance: advance}
}

// SlidingWindows returns windows defined by the records themselves, as
// Kafka Streams' SlidingWindows: two records fall in one window when their
// timestamps differ by at most timeDifference. Windows include both ends.
// For each record at t there is the window [t-timeDifference, t] ending at
// it and the window [t+1, t+1+timeDifference] starting just after it (when
// a record falls in it); a record updates every window that contains it.
// Near time zero, records before timeDifference share the window
// [0, timeDifference]. A record is late only when t + timeDifference is
// before stream time minus grace; a window takes records while its end is
// not before stream time minus grace.
func SlidingWindows(timeDifference time.Duration) Windows {
	return Windows{kind: sliding, size: timeDifference}
}

// WithGrace returns the windows with a grace period: how long after a
// window's end, in stream time, late records are still accepted.
func (w Windows) WithGrace(grace time.Duration) Windows {
	w.grace = grace
	return w
}

// validate reports a bad window definition.
func (w Windows) validate() error {
	switch {
	case w.kind == 0:
		return fmt.Errorf("windows not set: use TumblingWindows, HoppingWindows or SlidingWindows")
	case w.size < time.Millisecond:
		return fmt.Errorf("window size %v is below 1ms", w.size)
	case w.kind != sliding && (w.advance < time.Millisecond || w.advance > w.size):
		return fmt.Errorf("window advance %v must be in [1ms, size %v]", w.advance, w.size)
	case w.grace < 0:
		return fmt.Errorf("negative grace %v", w.grace)
	}
	return nil
}

// retention is how long the windows' state is kept: size + grace, and
// 2·time difference + grace + 1ms for sliding windows (a record may read the
// aggregate of the window before its own).
func (w Windows) retention() time.Duration {
	if w.kind == sliding {
		return 2*w.size + w.grace + time.Millisecond
	}
	return w.size + w.grace
}

// windowsFor returns the starts (ms) of the windows containing ts, in
// increasing order, like Kafka's TimeWindows.windowsFor.
func (w Windows) windowsFor(ts int64) []int64 {
	size, adv := w.size.Milliseconds(), w.advance.Milliseconds()
	start := max(0, ts-size+adv) / adv * adv
	var out []int64
	for ; start <= ts; start += adv {
		out = append(out, start)
	}
	return out
}

// SessionWindows groups a key's records into sessions: records at most gap
// apart belong to one session, so sessions grow and merge as records arrive.
// A session closes when the aggregation's stream time passes its end + gap
// + grace (as in Kafka Streams); a record whose session would end before
// that is dropped and counted under processor.MetricDroppedLate.
type SessionWindows struct {
	gap   time.Duration
	grace time.Duration
}

// SessionWindowsWithGap returns session windows with the given inactivity
// gap.
func SessionWindowsWithGap(gap time.Duration) SessionWindows {
	return SessionWindows{gap: gap}
}

// WithGrace returns the session windows with a grace period.
func (s SessionWindows) WithGrace(grace time.Duration) SessionWindows {
	s.grace = grace
	return s
}

func (s SessionWindows) validate() error {
	switch {
	case s.gap < time.Millisecond:
		return fmt.Errorf("session gap %v is below 1ms", s.gap)
	case s.grace < 0:
		return fmt.Errorf("negative grace %v", s.grace)
	}
	return nil
}

// Windowed is the key of a windowed aggregation: the record key and its
// window. Time windows are [Start, End); session windows are [Start, End]
// (the first and last record of the session).
type Windowed[K any] struct {
	Key   K
	Start time.Time
	End   time.Time
}

// String formats the key as "key@[start,end)" with millisecond times.
func (w Windowed[K]) String() string {
	return fmt.Sprintf("%v@[%d,%d)", w.Key, w.Start.UnixMilli(), w.End.UnixMilli())
}

// WindowedSerde encodes Windowed keys as the inner key's bytes followed by
// the 8-byte big-endian start and end in milliseconds.
func WindowedSerde[K any](inner serde.Serde[K]) serde.Serde[Windowed[K]] {
	return windowedSerde[K]{inner: inner}
}

type windowedSerde[K any] struct{ inner serde.Serde[K] }

func (s windowedSerde[K]) Serialize(topic string, w Windowed[K]) ([]byte, error) {
	kb, err := s.inner.Serialize(topic, w.Key)
	if err != nil {
		return nil, err
	}
	out := make([]byte, len(kb), len(kb)+16)
	copy(out, kb)
	out = binary.BigEndian.AppendUint64(out, uint64(w.Start.UnixMilli()))
	return binary.BigEndian.AppendUint64(out, uint64(w.End.UnixMilli())), nil
}

func (s windowedSerde[K]) Deserialize(topic string, b []byte) (Windowed[K], error) {
	if len(b) < 16 {
		return Windowed[K]{}, fmt.Errorf("%w: windowed key of %d bytes is shorter than 16", serde.ErrDeserialize, len(b))
	}
	n := len(b) - 16
	k, err := s.inner.Deserialize(topic, b[:n])
	if err != nil {
		return Windowed[K]{}, err
	}
	start := int64(binary.BigEndian.Uint64(b[n:]))
	end := int64(binary.BigEndian.Uint64(b[n+8:]))
	return Windowed[K]{Key: k, Start: time.UnixMilli(start), End: time.UnixMilli(end)}, nil
}
