package sink

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// TopicPartition names a partition of a topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Position is a task's progress: for each of its source partitions, the
// next offset after the input records whose sink outputs are written. The
// zero value (nil) is the position of a task that wrote nothing yet.
type Position map[TopicPartition]int64

// Covers reports whether the outputs of the input record at offset of tp
// are within p: offset < p[tp]. A record no input wrote (offset < 0, a
// wall-clock punctuator's) is never covered.
func (p Position) Covers(tp TopicPartition, offset int64) bool {
	if offset < 0 {
		return false
	}
	next, ok := p[tp]
	return ok && offset < next
}

// Includes reports whether p is at or beyond q on every partition q has:
// a write whose To p includes is already stored.
func (p Position) Includes(q Position) bool {
	for tp, next := range q {
		if p[tp] < next {
			return false
		}
	}
	return true
}

// Merge returns the larger of p's and q's offset on every partition of
// either, as a new Position.
func (p Position) Merge(q Position) Position {
	out := make(Position, max(len(p), len(q)))
	maps.Copy(out, p)
	for tp, next := range q {
		if next > out[tp] {
			out[tp] = next
		}
	}
	return out
}

// String encodes p as "topic:partition=next,..." in topic and partition
// order (Kafka topic names hold no ':', '=' or ','); ParsePosition reads
// it back. The empty position is "".
func (p Position) String() string {
	tps := slices.Collect(maps.Keys(p))
	slices.SortFunc(tps, func(a, b TopicPartition) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	var sb strings.Builder
	for i, tp := range tps {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, "%s:%d=%d", tp.Topic, tp.Partition, p[tp])
	}
	return sb.String()
}

// ParsePosition decodes a Position written by String.
func ParsePosition(s string) (Position, error) {
	p := Position{}
	if s == "" {
		return p, nil
	}
	for item := range strings.SplitSeq(s, ",") {
		colon := strings.LastIndexByte(item, ':')
		eq := strings.LastIndexByte(item, '=')
		if colon <= 0 || eq < colon {
			return nil, fmt.Errorf("sink: bad position entry %q", item)
		}
		part, err := strconv.ParseInt(item[colon+1:eq], 10, 32)
		if err != nil || part < 0 {
			return nil, fmt.Errorf("sink: bad partition in position entry %q", item)
		}
		next, err := strconv.ParseInt(item[eq+1:], 10, 64)
		if err != nil || next < 0 {
			return nil, fmt.Errorf("sink: bad offset in position entry %q", item)
		}
		p[TopicPartition{Topic: item[:colon], Partition: int32(part)}] = next
	}
	return p, nil
}
