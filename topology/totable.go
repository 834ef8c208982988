package topology

import (
	"fmt"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/statestore"
)

// ToTable reads the stream as a table, like Kafka Streams' KStream.toTable:
// each record is an update of its key, a record with a nil value deletes
// the key, and a record with a null key is dropped and counted under
// processor.MetricDroppedNull. Every other record is forwarded as the
// table's update, with its own timestamp.
//
// With Materialized(name) the table is kept in a store of that name (with a
// changelog), so it can be joined and queried; without it the table is not
// materialized. If the stream's keys may have changed, it is repartitioned
// first (through "<application id>-<node>-repartition"), as Kafka Streams
// does, so that each key's updates reach one task.
func (s Stream[K, V]) ToTable(opts ...Option) Table[K, V] {
	b := s.b
	cfg := newConfig(opts)
	name := cfg.name
	if s.rekeyed && name == "" {
		name = b.nextName("KSTREAM-TOTABLE") // names the repartition topic too
	}
	in := s.partitioned(name)
	store, ks, vs := cfg.store, in.ks, in.vs
	def := &nodeDef{kind: processor.KindProcessor}
	if store == "" {
		def.newProc = func() processor.Processor[any, any, any, any] {
			return processor.Func[any, any, any, any](dropNullKeys)
		}
	} else {
		def.newProc = func() processor.Processor[any, any, any, any] {
			p := &materializeProc[K, V]{store: store, ks: ks, vs: vs}
			if ts := store + "-timestamps"; b.hasStore(ts) { // the table is joined with another
				p.timestamps = ts
			}
			return p
		}
	}
	n := b.addNode(def, "KSTREAM-TOTABLE", config{name: name}, in.node)
	out := Table[K, V]{b: b, node: n, ks: ks, vs: vs, store: store}
	if store == "" {
		// Kafka Streams names a store for every toTable, materialized or
		// not: the number is taken so that later names match its own.
		b.nextName("KSTREAM-TOTABLE-STATE-STORE")
		return out
	}
	in.needSerdes(fmt.Sprintf("ToTable(Materialized(%q))", store))
	b.addStore(statestore.Spec{Name: store, Kind: statestore.KindKeyValue, Logged: true}, n)
	queryable(b, store, ks, vs)
	return out
}

// dropNullKeys forwards every record with a key and counts the others.
func dropNullKeys(ctx processor.Context[any, any], r processor.Record[any, any]) error {
	if dropNull(ctx, r.Key == nil) {
		return nil
	}
	return ctx.Forward(r)
}
