package conformance

import (
	"strconv"
	"strings"
	"time"

	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
)

// The per-source timestamp extractor.
func init() {
	register(buildTimestampExtractor, "timestamp-extractor")
}

// buildTimestampExtractor reads "in" with extractAt as its timestamp
// extractor, then writes it to "out" as it is or, with a "size", counts it
// in tumbling windows of that size and "grace" ("rekey": by the value's
// first character).
func buildTimestampExtractor(c *opBuild) {
	s := c.s
	str := serde.String()
	in := topology.NewStream(c.b, c.name("in"), str, str, topology.WithTimestamp(extractAt))
	if s.Size == 0 {
		c.count = false
		in.To(c.name("out"))
		return
	}
	c.windowed = true
	w := topology.TumblingWindows(ms(s.Size)).WithGrace(ms(s.Grace))
	topology.WindowedBy(c.grouped(in), w).Count(topology.Materialized(c.name("win"))).ToStream().To(c.name("out"))
}

// extractAt is the scripts' extractor: a value "payload@ms" is stamped ms
// (a negative ms is invalid: the record is dropped); a value without "@"
// (a tombstone too) takes the partition time, which drops it while the
// partition has none; a time that is not a number is invalid.
func extractAt(_ string, v string, _, partitionTime time.Time) (time.Time, error) {
	i := strings.LastIndexByte(v, '@')
	if i < 0 {
		return partitionTime, nil
	}
	n, err := strconv.ParseInt(v[i+1:], 10, 64)
	if err != nil || n < 0 {
		return time.Time{}, nil
	}
	return time.UnixMilli(n), nil
}
