package topology

import (
	"errors"
	"fmt"
	"sort"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/statestore"
)

// Builder collects the streams, tables and processors of a topology. Create
// one with NewBuilder, add sources with Stream and Table, chain operations,
// then call Build. Mistakes (a missing serde, a duplicate name, an unknown
// store) are recorded as they happen and reported together by Build; no
// builder call panics.
//
// A Builder is not safe for concurrent use.
type Builder struct {
	nodes   []*nodeDef
	byName  map[string]*nodeDef
	stores  map[string]*storeDef
	sources map[string]*nodeDef // topic -> source node
	globals []*globalDef        // global tables (global.go)
	seq     int
	errs    []error
	built   bool
}

// NewBuilder returns an empty Builder.
func NewBuilder() *Builder {
	return &Builder{
		byName:  map[string]*nodeDef{},
		stores:  map[string]*storeDef{},
		sources: map[string]*nodeDef{},
	}
}

// nodeDef is a node as the builder knows it, before sub-topologies exist.
type nodeDef struct {
	name     string
	kind     processor.NodeKind
	parents  []*nodeDef
	children []*nodeDef
	stores   []string

	topics []processor.TopicRef
	decode processor.DecodeFunc
	// timestamp is a source's timestamp extractor; nil for none.
	timestamp processor.TimestampFunc

	newProc func() processor.Processor[any, any, any, any]

	topic      processor.TopicRef
	encode     processor.EncodeFunc
	partitions int32 // for repartition sinks: partition count override
	// copartition, for internal sinks, is a node of the sub-topology whose
	// partition count the topic copies: a foreign-key join's topics are
	// co-partitioned with their reader's table, not their writer's.
	copartition *nodeDef
	// external marks a sink writing to an external store (ToSink).
	external bool
}

type storeDef struct {
	spec      statestore.Spec
	owner     *nodeDef
	companion bool                  // kept beside another store (see timestampsOf)
	codec     *processor.StoreCodec // for interactive queries; nil if unknown
}

// failf records a build error.
func (b *Builder) failf(format string, args ...any) {
	b.errs = append(b.errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidTopology}, args...)...))
}

// nextName returns a generated node name like Kafka Streams':
// KSTREAM-FILTER-0000000003.
func (b *Builder) nextName(prefix string) string {
	name := fmt.Sprintf("%s-%010d", prefix, b.seq)
	b.seq++
	return name
}

// storeName returns the store name given with WithStoreName, else a
// generated one: base-STATE-STORE-0000000007.
func (b *Builder) storeName(cfg config, base string) string {
	if cfg.store != "" {
		return cfg.store
	}
	return b.nextName(base + "-STATE-STORE")
}

// addNode names n (cfg.name, or a generated name with prefix), links it to
// its parents and records it.
func (b *Builder) addNode(n *nodeDef, prefix string, cfg config, parents ...*nodeDef) *nodeDef {
	if cfg.name != "" {
		n.name = cfg.name
		b.seq++ // keep generated numbers stable whether or not names are given
	} else {
		n.name = b.nextName(prefix)
	}
	if _, dup := b.byName[n.name]; dup {
		b.failf("duplicate node name %q", n.name)
		n.name = b.nextName(n.name)
	}
	for _, p := range parents {
		if p == nil {
			continue
		}
		if p.kind == processor.KindSink {
			b.failf("node %q: parent %q is a sink", n.name, p.name)
			continue
		}
		n.parents = append(n.parents, p)
		p.children = append(p.children, n)
	}
	b.nodes = append(b.nodes, n)
	b.byName[n.name] = n
	return n
}

// addSource adds a source node reading topic.
func (b *Builder) addSource(topic processor.TopicRef, decode processor.DecodeFunc, cfg config, prefix string) *nodeDef {
	n := b.addNode(&nodeDef{kind: processor.KindSource, topics: []processor.TopicRef{topic}, decode: decode}, prefix, cfg)
	key := topic.String()
	if topic.Name == "" {
		b.failf("source %q: empty topic name", n.name)
	} else if prev, dup := b.sources[key]; dup {
		b.failf("topic %s is already read by source %q; read it once and share the stream", key, prev.name)
	} else {
		b.sources[key] = n
	}
	return n
}

// addStore declares a store owned by node owner.
func (b *Builder) addStore(spec statestore.Spec, owner *nodeDef) {
	if spec.Name == "" {
		b.failf("node %q: store with an empty name", owner.name)
		return
	}
	if prev, dup := b.stores[spec.Name]; dup {
		b.failf("store %q declared twice (by %q and %q)", spec.Name, prev.owner.name, owner.name)
		return
	}
	b.stores[spec.Name] = &storeDef{spec: spec, owner: owner}
	owner.stores = append(owner.stores, spec.Name)
}

// timestampsOf returns the name of the store beside table store store that
// keeps each key's timestamp (Kafka Streams keeps it in the table's own
// timestamped store), adding it, owned by the table store's owner, the
// first time. The owner writes it when the store exists at task creation.
func (b *Builder) timestampsOf(store string) string {
	name := store + "-timestamps"
	sd, ok := b.stores[store]
	if !ok || sd.owner == nil {
		return name
	}
	if _, done := b.stores[name]; !done {
		b.addStore(statestore.Spec{Name: name, Kind: statestore.KindKeyValue, Logged: true}, sd.owner)
		b.stores[name].companion = true
	}
	return name
}

// hasStore reports whether a store is declared; for processors created
// after Build.
func (b *Builder) hasStore(name string) bool {
	_, ok := b.stores[name]
	return ok
}

// connectStore lets node n use an existing store.
func (b *Builder) connectStore(n *nodeDef, store string) {
	n.stores = append(n.stores, store)
	if sd, ok := b.stores[store]; ok && sd.owner == nil {
		sd.owner = n
	}
}

// Build validates the topology and returns it. Every problem found is
// reported in one error wrapping ErrInvalidTopology.
func (b *Builder) Build() (*Topology, error) {
	if b.built {
		return nil, fmt.Errorf("%w: Build called twice", ErrInvalidTopology)
	}
	errs := append([]error(nil), b.errs...)
	for _, n := range b.nodes {
		for _, s := range n.stores {
			if _, ok := b.stores[s]; !ok && b.global(s) == nil {
				errs = append(errs, fmt.Errorf("%w: node %q uses unknown store %q", ErrInvalidTopology, n.name, s))
			}
		}
	}
	for name, sd := range b.stores {
		if sd.owner == nil {
			errs = append(errs, fmt.Errorf("%w: store %q is not connected to any processor", ErrInvalidTopology, name))
		}
	}
	if len(b.sources) == 0 {
		errs = append(errs, fmt.Errorf("%w: no source: add one with Stream or Table", ErrInvalidTopology))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	g := b.compile()
	if err := g.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidTopology, err)
	}
	b.built = true
	companions := map[string]bool{}
	for name, sd := range b.stores {
		if sd.companion {
			companions[name] = true
		}
	}
	return &Topology{graph: g, companions: companions, order: b.describeOrder(g)}, nil
}

// compile groups nodes into sub-topologies: nodes linked by parent/child
// edges or sharing a store run in the same task. Repartition topics separate
// sub-topologies.
func (b *Builder) compile() *processor.Graph {
	parent := make(map[*nodeDef]*nodeDef, len(b.nodes))
	var find func(n *nodeDef) *nodeDef
	find = func(n *nodeDef) *nodeDef {
		if p := parent[n]; p != nil && p != n {
			r := find(p)
			parent[n] = r
			return r
		}
		return n
	}
	union := func(a, c *nodeDef) {
		ra, rc := find(a), find(c)
		if ra != rc {
			parent[ra] = rc
		}
	}
	for _, n := range b.nodes {
		parent[n] = n
	}
	storeUsers := map[string]*nodeDef{}
	for _, n := range b.nodes {
		for _, c := range n.children {
			union(n, c)
		}
		for _, s := range n.stores {
			if b.global(s) != nil {
				continue // every task reads a global store: it links none
			}
			if u, ok := storeUsers[s]; ok {
				union(n, u)
			} else {
				storeUsers[s] = n
			}
		}
	}
	// Number sub-topologies by the order of their first node, so ids are
	// stable for a given program.
	ids := map[*nodeDef]int{}
	var groups [][]*nodeDef
	for _, n := range b.nodes {
		r := find(n)
		id, ok := ids[r]
		if !ok {
			id = len(groups)
			ids[r] = id
			groups = append(groups, nil)
		}
		groups[id] = append(groups[id], n)
	}
	g := &processor.Graph{}
	subOf := map[*nodeDef]int{}
	for id, nodes := range groups {
		st := processor.Subtopology{ID: id}
		seen := map[string]bool{}
		// b.nodes is already topological: a node is added after its parents.
		for _, n := range nodes {
			subOf[n] = id
			st.Nodes = append(st.Nodes, n.compile())
			for _, s := range n.stores {
				if !seen[s] && b.global(s) == nil {
					seen[s] = true
					st.Stores = append(st.Stores, b.stores[s].spec)
				}
			}
		}
		sort.Slice(st.Stores, func(i, j int) bool { return st.Stores[i].Name < st.Stores[j].Name })
		g.Subtopologies = append(g.Subtopologies, st)
	}
	for _, n := range b.nodes {
		if n.kind == processor.KindSink && n.topic.Internal {
			sub := subOf[n]
			if n.copartition != nil {
				sub = subOf[n.copartition]
			}
			g.InternalTopics = append(g.InternalTopics, processor.InternalTopic{
				Topic: n.topic, Subtopology: sub, Partitions: n.partitions,
			})
		}
	}
	b.compileGlobals(g)
	names := make([]string, 0, len(b.stores))
	for name := range b.stores {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		sd := b.stores[name]
		if sd.codec != nil {
			if g.StoreCodecs == nil {
				g.StoreCodecs = map[string]processor.StoreCodec{}
			}
			g.StoreCodecs[name] = *sd.codec
		}
		if sd.spec.Logged {
			g.InternalTopics = append(g.InternalTopics, processor.InternalTopic{
				Topic: processor.ChangelogTopic(name), Subtopology: subOf[sd.owner], Compacted: true,
			})
		}
	}
	return g
}

func (n *nodeDef) compile() processor.Node {
	out := processor.Node{
		Name: n.name, Kind: n.kind, Stores: append([]string(nil), n.stores...),
		Topics: n.topics, Decode: n.decode, Timestamp: n.timestamp, New: n.newProc, Topic: n.topic, Encode: n.encode,
		External: n.external,
	}
	for _, c := range n.children {
		out.Children = append(out.Children, c.name)
	}
	return out
}
