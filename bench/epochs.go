package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// An epoch segment "-<N>ms" at the end of a weir or Kafka Streams row's
// name sets its epoch interval (weir.WithEpochInterval) or its
// commit.interval.ms to N milliseconds: weir-cont-eos-10ms,
// weir-cont-eos-franz-25ms, kstreams-eos-10ms; on the franz-go
// exactly-once copy, its transaction's length: franz-eos-10ms. A row
// without one keeps defaultEpoch, the interval of every other row.
const defaultEpoch = 100 * time.Millisecond

// splitEpoch returns sys without its epoch segment and the interval the
// segment names (defaultEpoch when it names none). Only weir, Kafka
// Streams and franz-eos rows carry one; the other copies keep their fixed
// 100 ms.
func splitEpoch(sys string) (base string, epoch time.Duration, err error) {
	if !strings.HasPrefix(sys, "weir-") && !strings.HasPrefix(sys, "kstreams-") && !strings.HasPrefix(sys, sysFranzEOS+"-") {
		return sys, defaultEpoch, nil
	}
	i := strings.LastIndex(sys, "-")
	seg, ok := strings.CutSuffix(sys[i+1:], "ms")
	if !ok || seg == "" || strings.Trim(seg, "0123456789") != "" {
		return sys, defaultEpoch, nil
	}
	n, err := strconv.Atoi(seg)
	if err != nil || n < 1 {
		return sys, 0, fmt.Errorf("bench: row %q: epoch segment %q: want a positive number of milliseconds", sys, sys[i+1:])
	}
	return sys[:i], time.Duration(n) * time.Millisecond, nil
}
