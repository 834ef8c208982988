package topologytest

import (
	"fmt"
	"time"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/statestore"
)

// globalTable is a global table as the driver runs it: its store, updated
// synchronously by every record piped into its topic, as Kafka Streams'
// TopologyTestDriver updates a global store.
type globalTable struct {
	def   *processor.GlobalStore
	store statestore.KeyValueStore
}

// openGlobals opens an in-memory store per global table of the graph.
func (d *Driver) openGlobals() error {
	d.globals = map[string]*globalTable{}
	d.gstores = map[string]statestore.KeyValueStore{}
	d.gcount = map[string]int64{}
	for i := range d.graph.Globals {
		def := &d.graph.Globals[i]
		s, err := d.stores.Open(def.Spec, 0)
		if err != nil {
			return fmt.Errorf("topologytest: global store %q: %w", def.Spec.Name, err)
		}
		kv, ok := s.(statestore.KeyValueStore)
		if !ok {
			return fmt.Errorf("topologytest: global store %q is a %T, not a key-value store", def.Spec.Name, s)
		}
		d.globals[def.Topic] = &globalTable{def: def, store: kv}
		d.gstores[def.Spec.Name] = kv
	}
	return nil
}

// pipeGlobal writes one record of a global table's topic into its store.
// It causes no output: a global table's updates trigger nothing.
func (d *Driver) pipeGlobal(g *globalTable, topic string, key, value []byte, ts time.Time, headers []processor.Header) error {
	off := d.offsets[topic]
	d.offsets[topic] = off + 1
	rec := processor.RawRecord{Topic: topic, Offset: off, Key: key, Value: value, Timestamp: ts, Headers: headers}
	d.glog[topic] = append(d.glog[topic], rec)
	upd, err := g.def.ApplyGlobal(g.store, rec)
	if err != nil {
		return d.handle(err)
	}
	if upd == processor.GlobalDroppedNull {
		d.gcount[processor.MetricDroppedNull]++
	}
	return nil
}
