package processor

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/weirstream/weir/statestore"
)

// TaskConfig configures NewTask.
type TaskConfig struct {
	// ApplicationID resolves internal topic names; required.
	ApplicationID string
	// ID is the task's sub-topology and partition.
	ID TaskID
	// Stores opens the task's state stores; required if the sub-topology
	// has stores. Stores with Spec.Logged write every change to their
	// changelog topic through Emit.
	Stores statestore.Factory
	// Emit receives every record the task writes, in order; required. An
	// error from Emit fails the record being processed.
	Emit func(Output) error
	// WallClock is the wall-clock time at task creation (zero means the Unix
	// epoch). Wall-clock punctuators scheduled in Init fire first at
	// WallClock + interval.
	WallClock time.Time
	// CoalesceChangelog makes logged stores keep their changes until
	// FlushChangelog instead of emitting a changelog record per write: the
	// flush emits one record per key changed since the previous flush, with
	// the key's latest value (nil for a delete). Engines that commit in
	// epochs or batches flush right before each commit, so a commit
	// carries the same final store contents in fewer records; outputs to
	// sinks and repartition topics are not affected.
	CoalesceChangelog bool
	// CacheBudget turns the record caches of the DSL aggregations on,
	// sharing this byte bound (see FlushCache); nil forwards every update
	// as it happens.
	CacheBudget *statestore.CacheBudget
	// Globals holds, by name, the global stores (Graph.Globals) the
	// sub-topology reads; the task reads them and never writes them.
	Globals map[string]statestore.KeyValueStore
}

// Task runs one sub-topology for one partition. It is deterministic and pure:
// it does no I/O and reads no clock; the caller feeds records with Process,
// tells the wall-clock time with PunctuateWallClock and receives outputs
// through TaskConfig.Emit.
//
// A Task is not safe for concurrent use: one goroutine owns it.
type Task struct {
	cfg      TaskConfig
	nodes    []*node
	byName   map[string]*node
	sources  map[string]*node // resolved topic -> source node
	stores   map[string]statestore.Store
	globals  map[string]statestore.Store // read-only views of global stores
	sched    schedule
	stream   int64 // stream time in ms; -1 before the first record
	wall     int64 // wall-clock time in ms
	counters map[string]int64
	closed   bool
	// partitionTime is, by topic, the largest timestamp a source's
	// TimestampFunc returned (see TimestampFunc).
	partitionTime map[string]int64
	// inRecord reports whether an input record is being processed, and
	// recordTS is its timestamp in ms, for changelog timestamps. (Not a
	// pointer to the record: that moved every record to the heap.)
	inRecord bool
	recordTS int64
	// pending holds the coalesced changelog records per logged store, in
	// store order (see TaskConfig.CoalesceChangelog).
	pending []*pendingChangelog
}

type node struct {
	def      *Node
	proc     Processor[any, any, any, any]
	children []*node
	task     *Task
	ctx      *nodeContext
	// topic is a sink's topic, resolved once (an internal topic's name
	// is built from the application id).
	topic string
}

// NewTask instantiates sub-topology cfg.ID.Subtopology of g: it opens the
// stores, creates each processor and calls the Init of those that have one.
func NewTask(g *Graph, cfg TaskConfig) (*Task, error) {
	if cfg.ApplicationID == "" {
		return nil, errors.New("processor: task config needs an application id")
	}
	if cfg.Emit == nil {
		return nil, errors.New("processor: task config needs an Emit function")
	}
	if cfg.ID.Subtopology < 0 || cfg.ID.Subtopology >= len(g.Subtopologies) {
		return nil, fmt.Errorf("processor: no sub-topology %d", cfg.ID.Subtopology)
	}
	st := &g.Subtopologies[cfg.ID.Subtopology]
	t := &Task{
		cfg:      cfg,
		byName:   make(map[string]*node, len(st.Nodes)),
		sources:  map[string]*node{},
		stores:   map[string]statestore.Store{},
		stream:   -1,
		wall:     0,
		counters: map[string]int64{},

		partitionTime: map[string]int64{},
	}
	if !cfg.WallClock.IsZero() {
		t.wall = cfg.WallClock.UnixMilli()
	}
	if len(st.Stores) > 0 && cfg.Stores == nil {
		return nil, errors.New("processor: task config needs a store factory")
	}
	for _, spec := range st.Stores {
		s, err := cfg.Stores.Open(spec, cfg.ID.Partition)
		if err != nil {
			return nil, fmt.Errorf("processor: task %s: open store %q: %w", cfg.ID, spec.Name, err)
		}
		if spec.Logged {
			s, err = newLogged(s, t.changelogEmitter(spec.Name, spec.Kind))
			if err != nil {
				return nil, err
			}
		}
		t.stores[spec.Name] = s
	}
	globals, err := globalStores(g, st, cfg.Globals)
	if err != nil {
		return nil, err
	}
	t.globals = globals
	for i := range st.Nodes {
		def := &st.Nodes[i]
		n := &node{def: def, task: t}
		if def.Kind == KindSink {
			n.topic = def.Topic.Resolve(cfg.ApplicationID)
		}
		n.ctx = &nodeContext{node: n}
		if def.New != nil {
			n.proc = def.New()
		}
		t.nodes = append(t.nodes, n)
		t.byName[def.Name] = n
		if def.Kind == KindSource {
			for _, topic := range def.Topics {
				t.sources[topic.Resolve(cfg.ApplicationID)] = n
			}
		}
	}
	for _, n := range t.nodes {
		for _, c := range n.def.Children {
			child, ok := t.byName[c]
			if !ok {
				return nil, fmt.Errorf("processor: node %q: unknown child %q", n.def.Name, c)
			}
			n.children = append(n.children, child)
		}
	}
	for _, n := range t.nodes {
		if in, ok := n.proc.(Initializer[any, any]); ok {
			if err := t.guard(func() error { return in.Init(n.ctx) }); err != nil {
				return nil, fmt.Errorf("processor: task %s: init %q: %w", cfg.ID, n.def.Name, err)
			}
		}
	}
	return t, nil
}

// ID returns the task's id.
func (t *Task) ID() TaskID { return t.cfg.ID }

// Topics returns the resolved topics the task reads.
func (t *Task) Topics() []string {
	out := make([]string, 0, len(t.sources))
	for _, n := range t.nodes {
		if n.def.Kind == KindSource {
			out = append(out, TopicNames(t.cfg.ApplicationID, n.def.Topics)...)
		}
	}
	return out
}

// Process runs one input record through the sub-topology, then fires the
// stream-time punctuators that are due. Records of one partition must come
// in offset order. A record the task cannot handle yields a *RecordError;
// the task stays usable.
func (t *Task) Process(r RawRecord) error {
	if t.closed {
		return ErrTaskClosed
	}
	src, ok := t.sources[r.Topic]
	if !ok {
		return fmt.Errorf("%w: %q (task %s)", ErrUnknownTopic, r.Topic, t.cfg.ID)
	}
	fail := func(kind ErrorKind, nodeName string, err error) error {
		return &RecordError{Kind: kind, Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Node: nodeName, Err: err}
	}
	ts := r.Timestamp.UnixMilli()
	if src.def.Timestamp == nil && !ValidTimestamp(r.Timestamp) {
		return fail(DeserializationError, "", fmt.Errorf("invalid timestamp %v", r.Timestamp))
	}
	k, v, err := src.def.Decode(r.Topic, r.Key, r.Value)
	if err != nil {
		return fail(DeserializationError, "", err)
	}
	if src.def.Timestamp != nil {
		var keep bool
		if ts, keep, err = t.extractTimestamp(src, r, k, v); err != nil {
			return fail(DeserializationError, "", err)
		} else if !keep {
			return nil
		}
	}
	if ts > t.stream {
		t.stream = ts
	}
	t.inRecord, t.recordTS = true, ts
	defer func() { t.inRecord = false }()
	rec := untyped{
		Key: k, Value: v, Timestamp: time.UnixMilli(ts), Headers: r.Headers,
		Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
	}
	if err := t.guard(func() error { return src.ctx.Forward(rec) }); err != nil {
		var re *RecordError
		if errors.As(err, &re) {
			return re
		}
		return fail(ProcessingError, "", err)
	}
	if err := t.punctuate(StreamTime, t.stream); err != nil {
		return fail(ProcessingError, "", err)
	}
	return nil
}

// PunctuateWallClock tells the task the wall-clock time and fires the
// wall-clock punctuators that are due.
func (t *Task) PunctuateWallClock(now time.Time) error {
	if t.closed {
		return ErrTaskClosed
	}
	ms := now.UnixMilli()
	if ms > t.wall {
		t.wall = ms
	}
	return t.punctuate(WallClockTime, t.wall)
}

// StreamTime returns the largest record timestamp seen, or the zero time.
func (t *Task) StreamTime() time.Time {
	if t.stream < 0 {
		return time.Time{}
	}
	return time.UnixMilli(t.stream)
}

// Store returns one of the task's stores (for interactive queries and tests).
func (t *Task) Store(name string) (statestore.Store, bool) {
	s, ok := t.stores[name]
	if l, isLogged := s.(interface{ unwrap() statestore.Store }); isLogged {
		return l.unwrap(), ok
	}
	return s, ok
}

// StoreNames returns the names of the task's stores, sorted.
func (t *Task) StoreNames() []string {
	names := make([]string, 0, len(t.stores))
	for name := range t.stores {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// Counters returns a copy of the task's counters (see the Metric constants).
func (t *Task) Counters() map[string]int64 {
	out := make(map[string]int64, len(t.counters))
	for k, v := range t.counters {
		out[k] = v
	}
	return out
}

// Close closes the processors in reverse order. It does not close the
// stores: the engine that opened them through the factory owns them.
func (t *Task) Close() error {
	if t.closed {
		return nil
	}
	t.closed = true
	t.discardCaches() // gives their bytes back to the shared budget
	var errs []error
	for i := len(t.nodes) - 1; i >= 0; i-- {
		if c, ok := t.nodes[i].proc.(Closer); ok {
			if err := t.guard(c.Close); err != nil {
				errs = append(errs, fmt.Errorf("processor: close %q: %w", t.nodes[i].def.Name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// guard runs user code and turns a panic into an error wrapping ErrPanic:
// a bug in a user function becomes a processing error for the record, which
// the error policy handles, instead of a crash of every task of the process.
func (t *Task) guard(fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v", ErrPanic, p)
		}
	}()
	return fn()
}

// emit sends a sink's record to the task's output.
func (t *Task) emit(n *node, r untyped) error {
	topic := n.topic
	k, v, err := n.def.Encode(topic, r.Key, r.Value)
	if err != nil {
		return &RecordError{Kind: SerializationError, Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Node: n.def.Name, Err: err}
	}
	kind := OutputSink
	switch {
	case n.def.External:
		kind = OutputExternal
	case n.def.Topic.Internal:
		kind = OutputRepartition
	}
	return t.cfg.Emit(Output{Topic: topic, Partition: -1, Key: k, Value: v, Timestamp: r.Timestamp, Headers: r.Headers, Kind: kind})
}

// changelogEmitter returns the function a logged store calls on each change.
func (t *Task) changelogEmitter(store string, kind statestore.Kind) func(key, value []byte) error {
	topic := ChangelogTopic(store).Resolve(t.cfg.ApplicationID)
	if t.cfg.CoalesceChangelog {
		pc := newPendingChangelog(topic, t.cfg.ID.Partition, kind)
		t.pending = append(t.pending, pc)
		return func(key, value []byte) error {
			pc.add(key, value, t.changelogTime())
			return nil
		}
	}
	return func(key, value []byte) error {
		ts := t.changelogTime()
		return t.cfg.Emit(Output{
			Topic: topic, Partition: t.cfg.ID.Partition, Key: key, Value: value,
			Timestamp: time.UnixMilli(ts), Kind: OutputChangelog,
		})
	}
}

// changelogTime is the timestamp of a change made now: the input record's,
// else (a punctuation) stream time, else wall-clock time, in ms.
func (t *Task) changelogTime() int64 {
	if t.inRecord {
		return t.recordTS
	}
	if t.stream >= 0 {
		return t.stream
	}
	return t.wall
}
