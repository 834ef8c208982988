package status

import (
	"fmt"
	"strconv"
	"strings"
)

// Graph is a topology as the page draws it: its sub-topologies and their
// nodes, read from the text topology.Describe prints (Kafka Streams'
// TopologyDescription layout), so that the picture and the text a user
// compares with Kafka Streams' never disagree.
type Graph struct {
	Subtopologies []Subtopology `json:"subtopologies"`
}

// Subtopology is one sub-topology of a Graph.
type Subtopology struct {
	ID int `json:"id"`
	// Global marks a global table's sub-topology (it makes no tasks).
	Global bool   `json:"global,omitempty"`
	Nodes  []Node `json:"nodes"`
}

// Node is a source, processor or sink.
type Node struct {
	Name string `json:"name"`
	// Kind is "source", "processor" or "sink".
	Kind string `json:"kind"`
	// Topics are a source's topics; Topic is a sink's (External: an
	// external sink's name, not a topic).
	Topics   []string `json:"topics,omitempty"`
	Topic    string   `json:"topic,omitempty"`
	External bool     `json:"external,omitempty"`
	// Stores are a processor's state stores.
	Stores []string `json:"stores,omitempty"`
	// Next are the nodes this one forwards to.
	Next []string `json:"next,omitempty"`
}

// ParseDescription reads topology.Describe's text. A line it does not
// understand is an error naming it: the two are kept in step by a test.
func ParseDescription(text string) (Graph, error) {
	var g Graph
	var sub *Subtopology
	var node *Node
	for i, raw := range strings.Split(text, "\n") {
		line := strings.TrimSpace(raw)
		bad := func() (Graph, error) {
			return Graph{}, fmt.Errorf("status: description line %d: cannot read %q", i+1, line)
		}
		switch {
		case line == "" || line == "Topologies:":
		case strings.HasPrefix(line, "Sub-topology: "):
			rest := strings.TrimPrefix(line, "Sub-topology: ")
			idText, _, _ := strings.Cut(rest, " ")
			id, err := strconv.Atoi(idText)
			if err != nil {
				return bad()
			}
			g.Subtopologies = append(g.Subtopologies, Subtopology{ID: id, Global: strings.Contains(rest, "global store")})
			sub, node = &g.Subtopologies[len(g.Subtopologies)-1], nil
		case strings.HasPrefix(line, "-->"):
			if node == nil {
				return bad()
			}
			node.Next = names(strings.TrimSpace(strings.TrimPrefix(line, "-->")))
		case strings.HasPrefix(line, "<--"):
			if node == nil {
				return bad()
			}
		default:
			kind, rest, ok := strings.Cut(line, ": ")
			if !ok || sub == nil {
				return bad()
			}
			name, attrs, _ := strings.Cut(rest, " (")
			attrs = strings.TrimSuffix(attrs, ")")
			n := Node{Name: name}
			switch kind {
			case "Source":
				n.Kind = "source"
				n.Topics = list(strings.TrimPrefix(attrs, "topics: "))
			case "Processor":
				n.Kind = "processor"
				n.Stores = list(strings.TrimPrefix(attrs, "stores: "))
			case "Sink":
				n.Kind = "sink"
				if ext, ok := strings.CutPrefix(attrs, "external: "); ok {
					n.Topic, n.External = ext, true
				} else {
					n.Topic = strings.TrimPrefix(attrs, "topic: ")
				}
			default:
				return bad()
			}
			sub.Nodes = append(sub.Nodes, n)
			node = &sub.Nodes[len(sub.Nodes)-1]
		}
	}
	return g, nil
}

// names splits an edge line's node list; "none" is no node.
func names(s string) []string {
	if s == "none" || s == "" {
		return nil
	}
	return strings.Split(s, ", ")
}

// list splits a bracketed list, "[a, b]".
func list(s string) []string {
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	if s == "" {
		return nil
	}
	return strings.Split(s, ", ")
}
