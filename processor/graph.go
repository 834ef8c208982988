package processor

import (
	"errors"
	"fmt"
	"strings"

	"github.com/weirstream/weir/statestore"
)

// Graph is a topology compiled for execution: its sub-topologies, stores and
// internal topics. Package topology builds and validates it; engines and the
// test driver instantiate one Task per sub-topology and partition with
// NewTask. A Graph is immutable once built and safe for concurrent use.
type Graph struct {
	Subtopologies []Subtopology
	// InternalTopics are the repartition and changelog topics the
	// application needs, by suffix (see TopicRef).
	InternalTopics []InternalTopic
	// StoreCodecs holds, by store name, the codecs of the stores that
	// interactive queries can read (see StoreCodec).
	StoreCodecs map[string]StoreCodec
	// Globals are the global stores (global tables) tasks may read; they
	// belong to no sub-topology (see GlobalStore).
	Globals []GlobalStore
}

// Subtopology is a connected part of a topology. All its source topics must
// be co-partitioned: the task for partition p reads partition p of each.
type Subtopology struct {
	ID int
	// Nodes in topological order: every node comes after its parents.
	Nodes []Node
	// Stores used by the nodes of this sub-topology.
	Stores []statestore.Spec
}

// NodeKind says what a node does.
type NodeKind int

const (
	// KindSource nodes decode input records of their topics.
	KindSource NodeKind = iota + 1
	// KindProcessor nodes run a processor.
	KindProcessor
	// KindSink nodes encode records and write them to a topic.
	KindSink
)

// String returns the kind's name.
func (k NodeKind) String() string {
	switch k {
	case KindSource:
		return "Source"
	case KindProcessor:
		return "Processor"
	case KindSink:
		return "Sink"
	}
	return fmt.Sprintf("NodeKind(%d)", int(k))
}

// TopicRef names a topic. Internal topics are named by a suffix; their full
// name is "<application id>-<suffix>", resolved when the task starts.
type TopicRef struct {
	Name     string
	Internal bool
}

// Resolve returns the topic's full name for the application.
func (t TopicRef) Resolve(applicationID string) string {
	if t.Internal {
		return applicationID + "-" + t.Name
	}
	return t.Name
}

// String returns the name, marking internal topics.
func (t TopicRef) String() string {
	if t.Internal {
		return "<app>-" + t.Name
	}
	return t.Name
}

// InternalTopic is a topic the application creates for itself.
type InternalTopic struct {
	Topic TopicRef
	// Subtopology is the sub-topology whose partition count the topic
	// copies: the writer's for repartition topics (the reader's for a
	// foreign-key join's), the owner's for changelogs.
	Subtopology int
	// Partitions, when positive, overrides the copied partition count.
	Partitions int32
	// Compacted topics keep the last value per key (changelogs).
	Compacted bool
}

// DecodeFunc decodes a raw key and value. nil inputs must stay nil.
type DecodeFunc func(topic string, key, value []byte) (k, v any, err error)

// EncodeFunc encodes a key and value for topic. nil inputs must stay nil.
type EncodeFunc func(topic string, key, value any) (k, v []byte, err error)

// Node is one node of a sub-topology.
type Node struct {
	Name     string
	Kind     NodeKind
	Children []string
	// Stores the node's processor may use.
	Stores []string

	// Topics a source node reads.
	Topics []TopicRef
	// Decode is the source's deserializer.
	Decode DecodeFunc
	// Timestamp, when set, gives the source's records their timestamps;
	// nil keeps the timestamp each record carries, which must be valid.
	Timestamp TimestampFunc

	// New returns the processor of a processor node, once per task.
	New func() Processor[any, any, any, any]

	// Topic a sink node writes.
	Topic TopicRef
	// Encode is the sink's serializer.
	Encode EncodeFunc
	// External marks a sink node that writes to an external store (a
	// database) instead of Kafka: Topic.Name is the name the application
	// registers the store under, and its outputs are OutputExternal.
	External bool
}

// SourceTopics returns the topics the sub-topology reads, in node order.
func (s *Subtopology) SourceTopics() []TopicRef {
	var ts []TopicRef
	for _, n := range s.Nodes {
		if n.Kind == KindSource {
			ts = append(ts, n.Topics...)
		}
	}
	return ts
}

// SinkTopics returns the topics the sub-topology writes, in node order.
// External sinks write no topic and are not among them.
func (s *Subtopology) SinkTopics() []TopicRef {
	var ts []TopicRef
	for _, n := range s.Nodes {
		if n.Kind == KindSink && !n.External {
			ts = append(ts, n.Topic)
		}
	}
	return ts
}

// ExternalSinks returns the names of the external sinks the sub-topology
// writes, in node order.
func (s *Subtopology) ExternalSinks() []string {
	var names []string
	for _, n := range s.Nodes {
		if n.Kind == KindSink && n.External {
			names = append(names, n.Topic.Name)
		}
	}
	return names
}

// Validate checks the structural invariants NewTask relies on: unique node
// names, known children, parents before children, sources with topics and a
// decoder, processors with a constructor, sinks with a topic and an encoder,
// known stores, and no topic read by two sub-topologies.
func (g *Graph) Validate() error {
	var errs []error
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidGraph}, args...)...))
	}
	readers := map[string]int{}
	for si, st := range g.Subtopologies {
		if st.ID != si {
			fail("sub-topology %d has id %d", si, st.ID)
		}
		stores := map[string]bool{}
		for _, s := range st.Stores {
			if stores[s.Name] {
				fail("sub-topology %d: store %q declared twice", si, s.Name)
			}
			stores[s.Name] = true
		}
		pos := map[string]int{}
		for i, n := range st.Nodes {
			if _, dup := pos[n.Name]; dup {
				fail("sub-topology %d: duplicate node %q", si, n.Name)
			}
			pos[n.Name] = i
		}
		for i, n := range st.Nodes {
			for _, c := range n.Children {
				j, ok := pos[c]
				switch {
				case !ok:
					fail("node %q: unknown child %q", n.Name, c)
				case j <= i:
					fail("node %q: child %q is not after it (cycle or misordered nodes)", n.Name, c)
				}
			}
			for _, s := range n.Stores {
				if !stores[s] && g.Global(s) == nil {
					fail("node %q: unknown store %q", n.Name, s)
				}
			}
			switch n.Kind {
			case KindSource:
				if len(n.Topics) == 0 || n.Decode == nil {
					fail("source %q needs topics and a decoder", n.Name)
				}
				for _, t := range n.Topics {
					if prev, ok := readers[t.String()]; ok && prev != si {
						fail("topic %s is read by sub-topologies %d and %d", t, prev, si)
					}
					readers[t.String()] = si
				}
			case KindProcessor:
				if n.New == nil {
					fail("processor %q has no constructor", n.Name)
				}
			case KindSink:
				if n.Topic.Name == "" || n.Encode == nil {
					fail("sink %q needs a topic and an encoder", n.Name)
				}
				if len(n.Children) > 0 {
					fail("sink %q has children", n.Name)
				}
			default:
				fail("node %q has unknown kind %d", n.Name, n.Kind)
			}
		}
	}
	for _, gs := range g.Globals {
		if gs.Spec.Name == "" || gs.Topic == "" || gs.Canon == nil || gs.Spec.Kind != statestore.KindKeyValue {
			fail("global store %q needs a name, a topic, a key-value kind and Canon", gs.Spec.Name)
		}
		if _, ok := readers[gs.Topic]; ok {
			fail("topic %s is read by a sub-topology and global store %q", gs.Topic, gs.Spec.Name)
		}
	}
	return errors.Join(errs...)
}

// TopicNames resolves refs for the application.
func TopicNames(applicationID string, refs []TopicRef) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.Resolve(applicationID)
	}
	return out
}

// ChangelogTopic returns the changelog topic suffix of a store.
func ChangelogTopic(store string) TopicRef {
	return TopicRef{Name: store + "-changelog", Internal: true}
}

// IsInternalTopic reports whether topic is one of the application's internal
// topics.
func IsInternalTopic(applicationID, topic string) bool {
	return strings.HasPrefix(topic, applicationID+"-") &&
		(strings.HasSuffix(topic, "-repartition") || strings.HasSuffix(topic, "-changelog"))
}
