package topology

import (
	"fmt"
	"slices"
	"sort"
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

// Describe prints the topology as Kafka Streams'
// topology.describe().toString() prints its TopologyDescription, so that
// the two can be compared line by line: each sub-topology with its
// sources, processors (and their stores) and sinks, and the edges between
// them. As in Kafka Streams, the nodes of a sub-topology are listed by the
// size of the graph below them (the number of paths from the node, itself
// included), largest first, then by name, and so are the nodes each edge
// line lists; internal topics show by their name without the application
// id ("<name>-repartition"); a sub-topology after the first is indented
// one space less.
func (t *Topology) Describe() string {
	var sb strings.Builder
	sb.WriteString("Topologies:\n ")
	for id, item := range t.order {
		sb.WriteString("  ")
		if item.global >= 0 {
			g := t.graph.Globals[item.global]
			fmt.Fprintf(&sb, "Sub-topology: %d for global store (will not generate tasks)\n", id)
			fmt.Fprintf(&sb, "    Source: %s (topics: [%s])\n      --> %s\n", g.Source, g.Topic, g.Processor)
			fmt.Fprintf(&sb, "    Processor: %s (stores: [%s])\n      --> none\n      <-- %s\n", g.Processor, g.Spec.Name, g.Source)
			continue
		}
		st := t.graph.Subtopologies[item.sub]
		fmt.Fprintf(&sb, "Sub-topology: %d\n", id)
		byName := map[string]*processor.Node{}
		parents := map[string][]string{}
		for j := range st.Nodes {
			n := &st.Nodes[j]
			byName[n.Name] = n
			for _, c := range n.Children {
				parents[c] = append(parents[c], n.Name)
			}
		}
		size := map[string]int{}
		var sizeOf func(name string) int
		sizeOf = func(name string) int {
			if s, ok := size[name]; ok {
				return s
			}
			s := 1
			if n := byName[name]; n != nil {
				for _, c := range n.Children {
					s += sizeOf(c)
				}
			}
			size[name] = s
			return s
		}
		order := func(names []string) []string {
			out := slices.Clone(names)
			sort.SliceStable(out, func(a, b int) bool {
				if sa, sb := sizeOf(out[a]), sizeOf(out[b]); sa != sb {
					return sa > sb
				}
				return out[a] < out[b]
			})
			return out
		}
		names := make([]string, 0, len(st.Nodes))
		for _, n := range st.Nodes {
			names = append(names, n.Name)
		}
		for _, name := range order(names) {
			n := byName[name]
			switch n.Kind {
			case processor.KindSource:
				fmt.Fprintf(&sb, "    Source: %s (topics: %s)\n", n.Name, topicNames(n.Topics))
			case processor.KindProcessor:
				var stores []string
				for _, s := range n.Stores {
					if !t.companions[s] && t.graph.Global(s) == nil {
						stores = append(stores, s)
					}
				}
				fmt.Fprintf(&sb, "    Processor: %s (stores: [%s])\n", n.Name, strings.Join(stores, ", "))
			case processor.KindSink:
				if n.External {
					fmt.Fprintf(&sb, "    Sink: %s (external: %s)\n", n.Name, n.Topic.Name)
				} else {
					fmt.Fprintf(&sb, "    Sink: %s (topic: %s)\n", n.Name, n.Topic.Name)
				}
			}
			if n.Kind != processor.KindSink {
				fmt.Fprintf(&sb, "      --> %s\n", nodeNames(order(n.Children)))
			}
			if n.Kind != processor.KindSource {
				fmt.Fprintf(&sb, "      <-- %s\n", nodeNames(order(parents[n.Name])))
			}
		}
		sb.WriteString("\n")
	}
	return sb.String()
}

// nodeNames lists nodes as Kafka Streams does: "none" for no node.
func nodeNames(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// String returns Describe's text.
func (t *Topology) String() string { return t.Describe() }

// topicNames lists a source's topics by name, as Kafka Streams prints
// them: an internal topic without the application id.
func topicNames(refs []processor.TopicRef) string {
	names := make([]string, len(refs))
	for i, r := range refs {
		names[i] = r.Name
	}
	return "[" + strings.Join(names, ", ") + "]"
}
