// Package topologytest runs a topology in memory, for unit tests — weir's
// TopologyTestDriver.
//
// Pipe records into input topics, read what the topology wrote to output
// topics, look into its stores and advance the wall clock to fire
// punctuators. Each sub-topology runs as one task (partition 0); records
// written to repartition topics are processed by the reading sub-topology
// right away, in order, before Pipe returns. A record piped into a global
// table's topic updates its store at once, as TopologyTestDriver does, and
// causes no output. Restart stops the application and starts it again with
// its stores restored from their changelogs, as after a crash or a
// deployment. Nothing touches the network or the real clock.
//
//	d, err := topologytest.New(topo, topologytest.Config{})
//	in := topologytest.Input(d, "words", serde.String(), serde.String())
//	out := topologytest.Output(d, "counts", serde.String(), serde.Int64())
//	_ = in.Pipe("", "hello", time.UnixMilli(1000))
//	got, _ := out.ReadKeyValues() // [{hello 1}]
//
// A Driver is not safe for concurrent use.
package topologytest

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/statestore"
	"github.com/weirstream/weir/topology"
)

// Config configures a Driver.
type Config struct {
	// ApplicationID names internal topics ("<id>-<name>-repartition",
	// "<id>-<store>-changelog"). Default "weir-test".
	ApplicationID string
	// WallClock is the initial wall-clock time. Default: the Unix epoch.
	WallClock time.Time
	// OnError decides what happens to an input record the topology cannot
	// handle (a *processor.RecordError): return nil to skip it, an error to
	// fail the Pipe call. Default: fail. An error wrapping processor.ErrStop
	// fails the Pipe call whatever OnError says.
	OnError func(*processor.RecordError) error
}

// Driver runs a topology in memory.
type Driver struct {
	cfg     Config
	graph   *processor.Graph
	tasks   []*processor.Task
	readers map[string]*processor.Task // resolved topic -> task
	globals map[string]*globalTable    // topic -> global table
	gstores map[string]statestore.KeyValueStore
	gcount  map[string]int64 // counters of the global tables
	stores  statestore.Factory
	topics  map[string][]processor.Output
	// glog holds the records piped into each global table's topic, which
	// a restarted driver replays into its global stores.
	glog    map[string][]processor.RawRecord
	read    map[string]int // read position per output topic
	offsets map[string]int64
	queue   []processor.Output
	wall    time.Time
	closed  bool
}

// New creates a driver for topo, with one task per sub-topology.
func New(topo *topology.Topology, cfg Config) (*Driver, error) {
	if topo == nil {
		return nil, errors.New("topologytest: nil topology")
	}
	return open(topo.Graph(), cfg, nil)
}

// open creates a driver for graph. When prev is not nil, the new driver
// takes over prev's topics, read positions and input offsets, and restores
// its stores from them before processing anything (see Restart).
func open(graph *processor.Graph, cfg Config, prev *Driver) (*Driver, error) {
	if cfg.ApplicationID == "" {
		cfg.ApplicationID = "weir-test"
	}
	if cfg.WallClock.IsZero() {
		cfg.WallClock = time.UnixMilli(0)
	}
	d := &Driver{
		cfg: cfg, graph: graph, readers: map[string]*processor.Task{},
		stores: statestore.NewInMemoryFactory(), topics: map[string][]processor.Output{},
		glog: map[string][]processor.RawRecord{},
		read: map[string]int{}, offsets: map[string]int64{}, wall: cfg.WallClock,
	}
	if err := d.openGlobals(); err != nil {
		return nil, err
	}
	if prev != nil {
		if err := d.restoreFrom(prev); err != nil {
			return nil, err
		}
	}
	for i := range d.graph.Subtopologies {
		t, err := processor.NewTask(d.graph, processor.TaskConfig{
			ApplicationID: cfg.ApplicationID,
			ID:            processor.TaskID{Subtopology: i},
			Stores:        d.stores,
			Emit:          d.emit,
			WallClock:     cfg.WallClock,
			Globals:       d.gstores,
		})
		if err != nil {
			return nil, fmt.Errorf("topologytest: %w", err)
		}
		d.tasks = append(d.tasks, t)
		for _, topic := range t.Topics() {
			d.readers[topic] = t
		}
	}
	if err := d.drain(); err != nil {
		return nil, err
	}
	return d, nil
}

// emit records a task output: repartition records are queued for their
// reader, everything is kept in its topic.
func (d *Driver) emit(o processor.Output) error {
	d.topics[o.Topic] = append(d.topics[o.Topic], o)
	if _, ok := d.readers[o.Topic]; ok && o.Kind == processor.OutputRepartition {
		d.queue = append(d.queue, o)
	}
	return nil
}

// PipeRaw feeds one record of bytes into topic, as a Kafka consumer would
// read it, and processes everything it causes downstream.
func (d *Driver) PipeRaw(topic string, key, value []byte, ts time.Time, headers ...processor.Header) error {
	if d.closed {
		return errors.New("topologytest: driver closed")
	}
	if g, ok := d.globals[topic]; ok {
		return d.pipeGlobal(g, topic, key, value, ts, headers)
	}
	if _, ok := d.readers[topic]; !ok {
		return fmt.Errorf("topologytest: no source reads topic %q", topic)
	}
	d.queue = append(d.queue, processor.Output{Topic: topic, Key: key, Value: value, Timestamp: ts, Headers: headers})
	return d.drain()
}

// drain processes queued input and repartition records in order.
func (d *Driver) drain() error {
	for len(d.queue) > 0 {
		o := d.queue[0]
		d.queue = d.queue[1:]
		t := d.readers[o.Topic]
		off := d.offsets[o.Topic]
		d.offsets[o.Topic] = off + 1
		err := t.Process(processor.RawRecord{
			Topic: o.Topic, Partition: 0, Offset: off, Key: o.Key, Value: o.Value,
			Timestamp: o.Timestamp, Headers: o.Headers,
		})
		if err != nil {
			if err = d.handle(err); err != nil {
				d.queue = nil
				return err
			}
		}
	}
	return nil
}

func (d *Driver) handle(err error) error {
	var re *processor.RecordError
	if !errors.As(err, &re) {
		return fmt.Errorf("topologytest: %w", err)
	}
	if d.cfg.OnError == nil || errors.Is(re, processor.ErrStop) {
		return fmt.Errorf("topologytest: %w", re)
	}
	return d.cfg.OnError(re)
}

// AdvanceWallClock moves the wall clock forward by dt and fires the
// wall-clock punctuators that are due.
func (d *Driver) AdvanceWallClock(dt time.Duration) error {
	if dt < 0 {
		return fmt.Errorf("topologytest: negative clock advance %v", dt)
	}
	d.wall = d.wall.Add(dt)
	for _, t := range d.tasks {
		if err := t.PunctuateWallClock(d.wall); err != nil {
			return fmt.Errorf("topologytest: %w", err)
		}
	}
	return d.drain()
}

// WallClock returns the driver's wall-clock time.
func (d *Driver) WallClock() time.Time { return d.wall }

// Topic returns every record written to topic (a sink, repartition or
// changelog topic; internal topics by full name), including those already
// read by an OutputTopic.
func (d *Driver) Topic(topic string) []processor.Output {
	return append([]processor.Output(nil), d.topics[topic]...)
}

// Topics returns the names of the topics written so far, sorted.
func (d *Driver) Topics() []string {
	out := make([]string, 0, len(d.topics))
	for t := range d.topics {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// Store returns the store named name, from the task that owns it.
func (d *Driver) Store(name string) (statestore.Store, error) {
	if s, ok := d.gstores[name]; ok {
		return s, nil
	}
	for _, t := range d.tasks {
		if s, ok := t.Store(name); ok {
			return s, nil
		}
	}
	return nil, fmt.Errorf("topologytest: no store %q", name)
}

// Counters returns the sum over tasks of each task counter (for example
// processor.MetricDroppedLate).
func (d *Driver) Counters() map[string]int64 {
	sum := map[string]int64{}
	for k, v := range d.gcount {
		sum[k] += v
	}
	for _, t := range d.tasks {
		for k, v := range t.Counters() {
			sum[k] += v
		}
	}
	return sum
}

// Close closes the tasks and their stores.
func (d *Driver) Close() error {
	if d.closed {
		return nil
	}
	d.closed = true
	var errs []error
	for _, s := range d.gstores {
		errs = append(errs, s.Close())
	}
	for _, t := range d.tasks {
		errs = append(errs, t.Close())
		for _, st := range d.graph.Subtopologies[t.ID().Subtopology].Stores {
			if s, ok := t.Store(st.Name); ok {
				errs = append(errs, s.Close())
			}
		}
	}
	return errors.Join(errs...)
}
