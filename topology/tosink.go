package topology

import (
	"fmt"

	"github.com/weirstream/weir/processor"
)

// ToSink writes the stream to the external sink registered under name
// (weir.WithSink): a database table, say, instead of a Kafka topic. Keys
// and values are encoded with the stream's serdes, as To does; the sink
// receives them per task and per epoch (continuous mode) or batch
// (micro-batch mode) and writes each task's share in one transaction of
// its own with the task's progress — exactly once under
// weir.ExactlyOnce (package sink states the protocol).
//
// The topology stays free of I/O: it names the sink, the application
// supplies it. A name may be written by several ToSink calls; it must not
// be empty.
func (s Stream[K, V]) ToSink(name string, opts ...Option) {
	cfg := newConfig(opts)
	if name == "" {
		s.b.failf("ToSink: empty sink name")
		return
	}
	n := s.b.addNode(&nodeDef{kind: processor.KindSink, topic: processor.TopicRef{Name: name}, external: true}, "KSTREAM-SINK", cfg, s.node)
	if s.needSerdes(fmt.Sprintf("ToSink(%q)", name)) {
		n.encode = encoder[K, V](s.ks, s.vs)
	}
}

// ExternalSinks returns the names of the external sinks the topology
// writes (ToSink), in order of first use.
func (t *Topology) ExternalSinks() []string {
	seen := map[string]bool{}
	var out []string
	for i := range t.graph.Subtopologies {
		for _, name := range t.graph.Subtopologies[i].ExternalSinks() {
			if !seen[name] {
				seen[name] = true
				out = append(out, name)
			}
		}
	}
	return out
}
