package main

import (
	"strings"

	"github.com/weirstream/weir"
)

// Kafka clients of the weir rows. A "-sarama" or "-franz" segment in a
// weir row's name runs that row on that client (weir.WithKafkaClient), so
// that one table shows weir on each: weir-cont-alo-sarama and
// weir-cont-alo-franz, weir-cont-eos-franz-cache, weir-cont-alo-franz-lz4
// (the segment comes before "-cache" and "-lz4"). A row without one runs
// on the client WEIR_KAFKA_CLIENT names (the children inherit the
// parent's environment), else weir's default.
const (
	saramaSegment = "-sarama"
	franzSegment  = "-franz"
)

// splitClient returns sys without its client segment, and the client the
// segment names ("" when sys names none, or is not a weir row).
func splitClient(sys string) (base string, client weir.KafkaClient) {
	if !strings.HasPrefix(sys, "weir-") {
		return sys, ""
	}
	for seg, c := range map[string]weir.KafkaClient{saramaSegment: weir.KafkaClientSarama, franzSegment: weir.KafkaClientFranzGo} {
		i := strings.Index(sys, seg)
		if i < 0 {
			continue
		}
		rest := sys[i+len(seg):]
		if rest != "" && !strings.HasPrefix(rest, "-") {
			continue
		}
		return sys[:i] + rest, c
	}
	return sys, ""
}

// statusSegment in a weir row's name serves the status page and reads it
// as an open browser tab does (GET /status/group every 2 s), so that one
// table shows the page's cost: weir-cont-eos against weir-cont-eos-status.
const statusSegment = "-status"

// splitStatus returns sys without its status segment, and whether it had
// one.
func splitStatus(sys string) (base string, status bool) {
	if !strings.HasPrefix(sys, "weir-") {
		return sys, false
	}
	i := strings.Index(sys, statusSegment)
	if i < 0 {
		return sys, false
	}
	rest := sys[i+len(statusSegment):]
	if rest != "" && !strings.HasPrefix(rest, "-") {
		return sys, false
	}
	return sys[:i] + rest, true
}
