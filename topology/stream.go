package topology

import (
	"fmt"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
)

// Stream is an unbounded sequence of keyed records, like Kafka Streams'
// KStream. Streams are values: each operation returns a new Stream and leaves
// the receiver usable, so one stream can feed several operations.
//
// A Stream carries the serdes of its key and value when they are known: from
// its source, from inference for string, []byte, int64 and float64, or from
// WithKeySerde and WithValueSerde. Operations that write to a topic or a
// store need them; Build reports the ones missing.
//
// Functions given to stateless operations (Filter, Map, ...) may be called
// concurrently by the tasks of different partitions: they must not share
// mutable state without synchronization.
type Stream[K, V any] struct {
	b    *Builder
	node *nodeDef
	ks   serde.Serde[K]
	vs   serde.Serde[V]
	// rekeyed is set once an operation may have changed keys: records may
	// then sit in a partition that is not their key's, and grouping or
	// joining first repartitions them.
	rekeyed bool
}

// NewStream reads topic as a stream of records decoded with the given serdes.
func NewStream[K, V any](b *Builder, topic string, ks serde.Serde[K], vs serde.Serde[V], opts ...Option) Stream[K, V] {
	cfg := newConfig(opts)
	if ks == nil || vs == nil {
		b.failf("NewStream(%q): nil serde", topic)
	}
	n := b.addSource(processor.TopicRef{Name: topic}, decoder[K, V](ks, vs), cfg, "KSTREAM-SOURCE")
	n.timestamp = sourceTimestamp[K, V](b, cfg, fmt.Sprintf("NewStream(%q)", topic))
	return Stream[K, V]{b: b, node: n, ks: ks, vs: vs}
}

// derive returns a stream of node n with the receiver's serdes.
func (s Stream[K, V]) derive(n *nodeDef) Stream[K, V] {
	return Stream[K, V]{b: s.b, node: n, ks: s.ks, vs: s.vs, rekeyed: s.rekeyed}
}

// stateless adds a processor node running fn for each record.
func (b *Builder) stateless(prefix string, cfg config, fn processor.Func[any, any, any, any], parents ...*nodeDef) *nodeDef {
	return b.addNode(&nodeDef{
		kind:    processor.KindProcessor,
		newProc: func() processor.Processor[any, any, any, any] { return fn },
	}, prefix, cfg, parents...)
}

// WithKeySerde returns the stream with its key serde set.
func (s Stream[K, V]) WithKeySerde(ks serde.Serde[K]) Stream[K, V] {
	s.ks = ks
	return s
}

// WithValueSerde returns the stream with its value serde set.
func (s Stream[K, V]) WithValueSerde(vs serde.Serde[V]) Stream[K, V] {
	s.vs = vs
	return s
}

// WithSerdes returns the stream with both serdes set.
func (s Stream[K, V]) WithSerdes(ks serde.Serde[K], vs serde.Serde[V]) Stream[K, V] {
	s.ks, s.vs = ks, vs
	return s
}

// Filter keeps the records for which pred returns true.
func (s Stream[K, V]) Filter(pred func(K, V) bool, opts ...Option) Stream[K, V] {
	return s.filter("KSTREAM-FILTER", pred, true, opts)
}

// FilterNot drops the records for which pred returns true.
func (s Stream[K, V]) FilterNot(pred func(K, V) bool, opts ...Option) Stream[K, V] {
	return s.filter("KSTREAM-FILTER", pred, false, opts)
}

func (s Stream[K, V]) filter(prefix string, pred func(K, V) bool, keep bool, opts []Option) Stream[K, V] {
	n := s.b.stateless(prefix, newConfig(opts), func(ctx processor.Context[any, any], r processor.Record[any, any]) error {
		tr, err := processor.Assert[K, V](r)
		if err != nil {
			return err
		}
		if pred(tr.Key, tr.Value) == keep {
			return ctx.Forward(r)
		}
		return nil
	}, s.node)
	return s.derive(n)
}

// Peek calls fn for each record and passes the record on unchanged.
func (s Stream[K, V]) Peek(fn func(K, V), opts ...Option) Stream[K, V] {
	n := s.b.stateless("KSTREAM-PEEK", newConfig(opts), func(ctx processor.Context[any, any], r processor.Record[any, any]) error {
		tr, err := processor.Assert[K, V](r)
		if err != nil {
			return err
		}
		fn(tr.Key, tr.Value)
		return ctx.Forward(r)
	}, s.node)
	return s.derive(n)
}

// Merge returns a stream of the records of s and other, interleaved as they
// are processed.
func (s Stream[K, V]) Merge(other Stream[K, V], opts ...Option) Stream[K, V] {
	if other.b != s.b {
		s.b.failf("Merge: streams from different builders")
		return s
	}
	n := s.b.stateless("KSTREAM-MERGE", newConfig(opts), forwardAll, s.node, other.node)
	out := s.derive(n)
	if out.ks == nil {
		out.ks = other.ks
	}
	if out.vs == nil {
		out.vs = other.vs
	}
	out.rekeyed = s.rekeyed || other.rekeyed
	return out
}

// dropNull counts a record under processor.MetricDroppedNull when null is
// true — a nil key or value, or a key it maps to none, that the operator
// cannot use — and reports null.
func dropNull(ctx processor.Context[any, any], null bool) bool {
	if null {
		ctx.Count(processor.MetricDroppedNull, 1)
	}
	return null
}

// forwardJoined forwards r with the joined value out, unless the joiner
// gave none (ok false: an inner join without a match).
func forwardJoined(ctx processor.Context[any, any], r processor.Record[any, any], out any, ok bool) error {
	if !ok {
		return nil
	}
	r.Value = out
	return ctx.Forward(r)
}

// copies returns a nodeDef.newProc that gives each task its own copy of
// the processor p.
func copies[P any, PP interface {
	*P
	processor.Processor[any, any, any, any]
}](p P) func() processor.Processor[any, any, any, any] {
	return func() processor.Processor[any, any, any, any] {
		cp := p
		return PP(&cp)
	}
}

func forwardAll(ctx processor.Context[any, any], r processor.Record[any, any]) error {
	return ctx.Forward(r)
}

// To writes the stream to topic, encoded with the stream's serdes and
// partitioned by key with Kafka's default partitioner.
func (s Stream[K, V]) To(topic string, opts ...Option) {
	cfg := newConfig(opts)
	if topic == "" {
		s.b.failf("To: empty topic name")
		return
	}
	n := s.b.addNode(&nodeDef{kind: processor.KindSink, topic: processor.TopicRef{Name: topic}}, "KSTREAM-SINK", cfg, s.node)
	if s.needSerdes(fmt.Sprintf("To(%q)", topic)) {
		n.encode = encoder[K, V](s.ks, s.vs)
	}
}

// needSerdes records an error naming op for each missing serde and reports
// whether both are present.
func (s Stream[K, V]) needSerdes(op string) bool {
	ok := true
	if s.ks == nil {
		s.b.failf("%s: no key serde for %s; set one with WithKeySerde", op, typeName[K]())
		ok = false
	}
	if s.vs == nil {
		s.b.failf("%s: no value serde for %s; set one with WithValueSerde", op, typeName[V]())
		ok = false
	}
	return ok
}

// Repartition writes the stream through an internal topic
// ("<application id>-<name>-repartition") partitioned by the current key,
// and continues from it in a new sub-topology. Grouping and joining a
// re-keyed stream repartition it automatically.
func (s Stream[K, V]) Repartition(opts ...Option) Stream[K, V] {
	cfg := newConfig(opts)
	name := cfg.name
	if name == "" {
		name = s.b.nextName("KSTREAM-REPARTITION")
	}
	if cfg.partitions < 0 {
		s.b.failf("Repartition(%q): negative partition count %d", name, cfg.partitions)
	}
	topic := processor.TopicRef{Name: name + "-repartition", Internal: true}
	sink := s.b.addNode(&nodeDef{kind: processor.KindSink, topic: topic, partitions: cfg.partitions}, "", config{name: name + "-repartition-sink"}, s.node)
	if !s.needSerdes(fmt.Sprintf("Repartition(%q)", name)) {
		return s
	}
	sink.encode = encoder[K, V](s.ks, s.vs)
	src := s.b.addSource(topic, decoder[K, V](s.ks, s.vs), config{name: name + "-repartition-source"}, "")
	out := s.derive(src)
	out.rekeyed = false
	return out
}

// partitioned returns s repartitioned if its keys may have changed.
func (s Stream[K, V]) partitioned(name string) Stream[K, V] {
	if !s.rekeyed {
		return s
	}
	if name == "" {
		return s.Repartition()
	}
	return s.Repartition(Named(name))
}

// GroupByKey groups the stream by its current key, for aggregation. If keys
// may have changed since the source, the stream is repartitioned first.
func (s Stream[K, V]) GroupByKey(opts ...Option) Grouped[K, V] {
	return Grouped[K, V]{s: s, cfg: newConfig(opts)}
}

// Split starts a branching of the stream; see Splitter.
func (s Stream[K, V]) Split(opts ...Option) *Splitter[K, V] {
	cfg := newConfig(opts)
	return &Splitter[K, V]{s: s, prefix: cfg.name}
}
