package topology

import (
	"fmt"
	"strings"

	"github.com/weirstream/weir/processor"
)

// Topology is a built, validated topology: what weir.New runs and
// topologytest.New tests. It is immutable and safe for concurrent use.
type Topology struct {
	graph *processor.Graph
	// companions are the stores weir keeps beside another (the
	// "-timestamps" stores): Kafka Streams keeps their contents in the
	// store itself, so Describe does not list them.
	companions map[string]bool
	// order lists sub-topologies and global stores as Describe numbers
	// them.
	order []describeItem
}

// Graph returns the compiled graph engines instantiate tasks from.
func (t *Topology) Graph() *processor.Graph { return t.graph }

// SourceTopics returns the external topics the topology reads, in order of
// first use.
func (t *Topology) SourceTopics() []string {
	return t.topics(func(st *processor.Subtopology) []processor.TopicRef { return st.SourceTopics() })
}

// GlobalTopics returns the topics the topology's global tables read, in
// order of declaration. They are not among SourceTopics: no task reads
// them.
func (t *Topology) GlobalTopics() []string {
	var out []string
	for _, g := range t.graph.Globals {
		out = append(out, g.Topic)
	}
	return out
}

// SinkTopics returns the external topics the topology writes.
func (t *Topology) SinkTopics() []string {
	return t.topics(func(st *processor.Subtopology) []processor.TopicRef { return st.SinkTopics() })
}

func (t *Topology) topics(get func(*processor.Subtopology) []processor.TopicRef) []string {
	seen := map[string]bool{}
	var out []string
	for i := range t.graph.Subtopologies {
		for _, ref := range get(&t.graph.Subtopologies[i]) {
			if !ref.Internal && !seen[ref.Name] {
				seen[ref.Name] = true
				out = append(out, ref.Name)
			}
		}
	}
	return out
}

// Describe prints the topology like Kafka Streams' TopologyDescription:
// each sub-topology with its sources, processors (and their stores) and
// sinks, and the edges between them. Internal topics show as
// "<app>-<name>".
func (t *Topology) Describe() string {
	var sb strings.Builder
	sb.WriteString("Topologies:\n")
	for id, item := range t.order {
		if item.global >= 0 {
			g := t.graph.Globals[item.global]
			fmt.Fprintf(&sb, "   Sub-topology: %d for global store (will not generate tasks)\n", id)
			fmt.Fprintf(&sb, "    Source: %s (topics: [%s])\n      --> %s\n", g.Source, g.Topic, g.Processor)
			fmt.Fprintf(&sb, "    Processor: %s (stores: [%s])\n      --> none\n      <-- %s\n", g.Processor, g.Spec.Name, g.Source)
			continue
		}
		st := t.graph.Subtopologies[item.sub]
		fmt.Fprintf(&sb, "   Sub-topology: %d\n", id)
		parents := map[string][]string{}
		for _, n := range st.Nodes {
			for _, c := range n.Children {
				parents[c] = append(parents[c], n.Name)
			}
		}
		for _, n := range st.Nodes {
			switch n.Kind {
			case processor.KindSource:
				fmt.Fprintf(&sb, "    Source: %s (topics: %s)\n", n.Name, refList(n.Topics))
			case processor.KindProcessor:
				var stores []string
				for _, s := range n.Stores {
					if !t.companions[s] && t.graph.Global(s) == nil {
						stores = append(stores, s)
					}
				}
				fmt.Fprintf(&sb, "    Processor: %s (stores: [%s])\n", n.Name, strings.Join(stores, ", "))
			case processor.KindSink:
				fmt.Fprintf(&sb, "    Sink: %s (topic: %s)\n", n.Name, n.Topic)
			}
			if len(n.Children) > 0 {
				fmt.Fprintf(&sb, "      --> %s\n", strings.Join(n.Children, ", "))
			} else if n.Kind != processor.KindSink {
				sb.WriteString("      --> none\n")
			}
			if ps := parents[n.Name]; len(ps) > 0 {
				fmt.Fprintf(&sb, "      <-- %s\n", strings.Join(ps, ", "))
			} else if n.Kind != processor.KindSource {
				sb.WriteString("      <-- none\n")
			}
		}
		sb.WriteString("\n")
	}
	return sb.String()
}

// String returns Describe's text.
func (t *Topology) String() string { return t.Describe() }

func refList(refs []processor.TopicRef) string {
	names := make([]string, len(refs))
	for i, r := range refs {
		names[i] = r.String()
	}
	return "[" + strings.Join(names, ", ") + "]"
}
