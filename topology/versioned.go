package topology

import (
	"fmt"
	"time"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/statestore"
)

// Versioned tables (Kafka Streams' KIP-889 and KIP-914).
//
// A table read with NewTable(..., Versioned(retention)) keeps every value
// each key had within the history retention, in a statestore.VersionedStore
// (changelogged and restored as key-value stores are):
//
//   - An update is put into the store at its timestamp. An update older than
//     the key's latest version goes into the key's history; it is still
//     forwarded downstream, as Kafka Streams forwards it.
//   - An update older than the table's stream time minus the history
//     retention is not stored and not forwarded: it is counted under
//     processor.MetricDroppedExpired.
//   - A stream record joined with a versioned table (Join, LeftJoin) meets
//     the table's value as of the record's own timestamp, not the latest.
//     A record older than the history retention finds no value (unless the
//     key's latest value was already valid then). A left join forwards a
//     record with a null key, joined with no table value (Kafka Streams'
//     KIP-962); an inner join drops it.
//   - WithGrace(d) on such a join holds stream records in a time-ordered,
//     changelogged buffer until stream time (the largest timestamp the
//     buffer has taken) passes their timestamp plus d, so table updates up
//     to d late are seen. A record already d older than that stream time is
//     joined at once.
//
// A Filter of a versioned table (or of a table derived from one without a
// store) forwards every update that fails it as a delete, present or not,
// as Kafka Streams' filter does with versioned semantics.
//
// JoinTables, LeftJoinTables and OuterJoinTables of a versioned table
// follow Kafka Streams' versioned semantics: an update of a versioned side older than that side's latest
// version is skipped (it went into the side's history only), and a
// versioned side is looked up by its latest version, stamped with that
// version's timestamp.

// Versioned makes NewTable keep the table in a versioned store with the
// given history retention: how long, behind the table's stream time, older
// values of a key are kept for as-of lookups, and how late an update may be
// and still be stored. It is Kafka Streams'
// Materialized.as(Stores.persistentVersionedKeyValueStore(name, retention)).
// Name the store with Materialized(name); a negative retention is a Build
// error. Only NewTable reads this option.
func Versioned(historyRetention time.Duration) Option {
	return func(c *config) { c.versioned = &historyRetention }
}

// WithGrace gives a stream–table join (Join, LeftJoin) a grace period, as
// Kafka Streams' Joined.withGracePeriod (KIP-923): stream records wait in a
// buffer (store "<node>-Buffer") until the buffer's stream time reaches
// their timestamp plus d, then join the table as of their timestamp, in
// timestamp order. The table must be versioned with a history retention of
// at least d (Build reports it otherwise, as Kafka Streams refuses it), the
// stream must have serdes, and d must not be negative.
func WithGrace(d time.Duration) Option {
	return func(c *config) { c.grace = &d }
}

// materializeVersioned adds the node that puts each update into a new
// versioned store.
func (t Table[K, V]) materializeVersioned(store string, history time.Duration) Table[K, V] {
	b := t.b
	if store == "" {
		store = b.nextName("KTABLE-SOURCE-STATE-STORE")
	}
	if history < 0 {
		b.failf("table store %q: negative history retention %v", store, history)
	}
	ks, vs := t.ks, t.vs
	n := b.addNode(&nodeDef{
		kind: processor.KindProcessor,
		newProc: func() processor.Processor[any, any, any, any] {
			return &versionedSourceProc[K, V]{store: store, history: history, ks: ks, vs: vs}
		},
	}, "KTABLE-SOURCE-MATERIALIZE", config{}, t.node)
	b.addStore(statestore.Spec{Name: store, Kind: statestore.KindKeyValue, Logged: true}, n)
	queryable(b, store, ks, vs)
	if sd, ok := b.stores[store]; ok && sd.codec != nil {
		sd.codec.Versioned, sd.codec.HistoryRetention = true, history
	}
	t.node, t.store, t.history, t.versioned, t.versionedUpstream = n, store, history, true, true
	return t
}

// filterVersioned is Filter of a table with versioned semantics: as Kafka
// Streams' filter does then, every update failing pred (and every
// tombstone) is forwarded as a delete, whether or not the key was in the
// filtered table — out-of-order updates included.
func (t Table[K, V]) filterVersioned(pred func(K, V) bool, keep bool, cfg config) Table[K, V] {
	n := t.b.stateless("KTABLE-FILTER", cfg, func(ctx processor.Context[any, any], r processor.Record[any, any]) error {
		if r.Value != nil {
			tr, err := processor.Assert[K, V](r)
			if err != nil {
				return err
			}
			if pred(tr.Key, tr.Value) != keep {
				r.Value = nil
			}
		}
		return ctx.Forward(r)
	}, t.node)
	out := Table[K, V]{b: t.b, node: n, ks: t.ks, vs: t.vs, versionedUpstream: true}
	if cfg.store != "" {
		out = out.materialize("KTABLE-FILTER", cfg.store)
	}
	return out
}

// versionedStore opens store as a typed versioned store.
func versionedStore[K, V any](ctx processor.Context[any, any], store string, history time.Duration, ks serde.Serde[K], vs serde.Serde[V]) (*statestore.Versions[K, V], error) {
	kv, err := kvStore(ctx, store)
	if err != nil {
		return nil, err
	}
	return statestore.NewVersions(statestore.NewVersioned(kv, history), ks, vs), nil
}

// versionedSourceProc puts each table update into the versioned store and
// forwards those the store took.
type versionedSourceProc[K, V any] struct {
	store   string
	history time.Duration
	ks      serde.Serde[K]
	vs      serde.Serde[V]
	table   *statestore.Versions[K, V]
}

func (p *versionedSourceProc[K, V]) Init(ctx processor.Context[any, any]) error {
	var err error
	p.table, err = versionedStore(ctx, p.store, p.history, p.ks, p.vs)
	return err
}

func (p *versionedSourceProc[K, V]) Process(ctx processor.Context[any, any], r processor.Record[any, any]) error {
	k, ok, err := tableKey[K](ctx, r)
	if !ok {
		return err
	}
	var status statestore.PutStatus
	if r.Value == nil {
		status, _, err = p.table.PutTombstone(k, r.Timestamp)
	} else {
		var v V
		if v, err = processor.As[V](r.Value); err != nil {
			return err
		}
		status, _, err = p.table.Put(k, v, r.Timestamp)
	}
	if err != nil {
		return fmt.Errorf("topology: table %q: %w", p.store, err)
	}
	if status == statestore.PutExpired {
		ctx.Count(processor.MetricDroppedExpired, 1)
		return nil
	}
	return ctx.Forward(r)
}
