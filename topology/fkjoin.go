package topology

import (
	"fmt"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/statestore"
)

// Foreign-key table–table joins, as Kafka Streams' KTable.join(other,
// foreignKeyExtractor, joiner) and leftJoin (KIP-213; the extractor reads
// key and value, KIP-1104). Each left entry names, through foreignKey, the
// key of one entry of the other (right) table; the result is keyed by the
// left key.
//
// The two tables need not be co-partitioned: the join runs as Kafka Streams
// runs it, through two internal topics.
//
//  1. Subscription send (left side, "<name>-subscription-registration-
//     processor"): each left update is compared with the key's previous
//     value (kept in "<name>-left-values") and sent to the right side keyed
//     by foreign key, on "<app>-<name>-subscription-registration-repartition",
//     with an instruction (see fkInstruction) and the hash of the new left
//     value. A foreign key that changed unsubscribes the old one.
//  2. Subscription receive (right side): the subscription is kept, or
//     removed, in "<name>-subscription-store" under (foreign key, left
//     key), and answered with the right table's current value as the
//     instruction says, keyed by left key, on
//     "<app>-<name>-subscription-response-repartition".
//  3. Foreign join (right side): each right update is sent to every left
//     key subscribed to it (a prefix scan of the subscription store).
//  4. Response resolve (left side): a response whose hash is not the hash
//     of the left key's current value answers a value since replaced and
//     is dropped (counted under processor.MetricDroppedStale); the others
//     are joined with the current left value and forwarded.
//
// The topics are named like repartition topics, as engines recognize
// their own topics by the suffix (Kafka Streams ends them in "-topic").
// The subscription topic has as many partitions as the right table's
// sub-topology, the response topic as many as the left's: weir's topic plan
// copies them from the sub-topology that reads them, not the one that
// writes. Responses are partitioned by left key (Kafka Streams sends them to
// the partition the subscription came from; both are the left key's
// partition when the left topic is partitioned by Kafka's default
// partitioner, as weir's sinks are).
//
// A result is stamped like Kafka Streams': a response to a subscription
// with the later of the left record's and the right value's timestamps, a
// response to a right update with the right record's. The right table must
// be materialized; the left need not be.

// JoinTablesOnForeignKey joins table t with table other on a foreign key (an
// inner join): for each left entry (k, v) whose foreign key foreignKey(k, v)
// is in other with value vo, the result has (k, joiner(v, vo)). Updates on
// either side update the result; a left entry whose foreign key is absent
// from other has no result, and a result that existed is deleted.
//
// Named(name) names the join's nodes, internal topics and stores (default
// "KTABLE-FK-JOIN-<n>"); Materialized(store) gives the result a store of its
// own, so it can be queried.
func JoinTablesOnForeignKey[K, V, KO, VO, VR any](t Table[K, V], other Table[KO, VO], foreignKey func(K, V) KO, joiner func(V, VO) VR, opts ...Option) Table[K, VR] {
	var join func(V, VO, bool) VR
	if joiner != nil {
		join = func(v V, vo VO, _ bool) VR { return joiner(v, vo) }
	}
	return fkJoin(t, other, foreignKey, join, false, "JoinTablesOnForeignKey", opts)
}

// LeftJoinTablesOnForeignKey joins table t with table other on a foreign key,
// keeping every left entry: the result has (k, joiner(v, vo, found)) for
// each left entry, found false and vo the zero value when the foreign key is
// not in other.
func LeftJoinTablesOnForeignKey[K, V, KO, VO, VR any](t Table[K, V], other Table[KO, VO], foreignKey func(K, V) KO, joiner func(v V, vo VO, found bool) VR, opts ...Option) Table[K, VR] {
	return fkJoin(t, other, foreignKey, joiner, true, "LeftJoinTablesOnForeignKey", opts)
}

func fkJoin[K, V, KO, VO, VR any](t Table[K, V], other Table[KO, VO], foreignKey func(K, V) KO, joiner func(V, VO, bool) VR, left bool, op string, opts []Option) Table[K, VR] {
	b := t.b
	cfg := newConfig(opts)
	if other.b != b {
		b.failf("%s: tables from different builders", op)
		return Table[K, VR]{b: b, node: t.node}
	}
	if foreignKey == nil || joiner == nil {
		b.failf("%s: nil foreign-key extractor or joiner", op)
	}
	if other.store == "" {
		b.failf("%s: the other table is not materialized; give it Materialized(name)", op)
	}
	if t.ks == nil || t.vs == nil {
		b.failf("%s: no serde for the left table's %s or %s; set them with WithKeySerde and WithValueSerde", op, typeName[K](), typeName[V]())
	}
	if other.ks == nil || other.vs == nil {
		b.failf("%s: no serde for the other table's %s or %s; set them with WithKeySerde and WithValueSerde", op, typeName[KO](), typeName[VO]())
	}
	base := cfg.name
	if base == "" {
		base = b.nextName("KTABLE-FK-JOIN")
	}
	subTopic := processor.TopicRef{Name: base + "-subscription-registration-repartition", Internal: true}
	respTopic := processor.TopicRef{Name: base + "-subscription-response-repartition", Internal: true}
	values, subs := base+"-left-values", base+"-subscription-store"
	var otherTS string // the other side's timestamps, when it is not versioned
	if !other.versioned {
		otherTS = b.timestampsOf(other.store)
	}
	ks, vs, kos, vos, otherStore := t.ks, t.vs, other.ks, other.vs, other.store
	leftGate, rightGate := newVersionGate(t), newVersionGate(other)

	send := b.addNode(&nodeDef{
		kind: processor.KindProcessor,
		newProc: func() processor.Processor[any, any, any, any] {
			return &fkSend[K, V, KO]{values: values, topic: subTopic, ks: ks, vs: vs, kos: kos, foreignKey: foreignKey, left: left, gate: leftGate}
		},
	}, "", config{name: base + "-subscription-registration-processor"}, t.node)
	leftGate.connect(b, send)
	b.addStore(statestore.Spec{Name: values, Kind: statestore.KindKeyValue, Logged: true}, send)
	if sd, ok := b.stores[values]; ok {
		sd.companion = true
	}
	subSink := b.addNode(&nodeDef{kind: processor.KindSink, topic: subTopic, encode: rawEncode},
		"", config{name: base + "-subscription-registration-sink"}, send)
	subSrc := b.addSource(subTopic, rawDecode, config{name: base + "-subscription-registration-source"}, "")
	recv := b.addNode(&nodeDef{
		kind: processor.KindProcessor,
		newProc: func() processor.Processor[any, any, any, any] {
			return &fkReceive[KO, VO]{subs: subs, other: otherStore, otherTS: otherTS, subTopic: subTopic, respTopic: respTopic, kos: kos, vos: vos, gate: rightGate}
		},
	}, "", config{name: base + "-subscription-receive"}, subSrc)
	b.addStore(statestore.Spec{Name: subs, Kind: statestore.KindKeyValue, Logged: true}, recv)
	b.connectStore(recv, otherStore)
	if otherTS != "" {
		b.connectStore(recv, otherTS)
	}
	foreign := b.addNode(&nodeDef{
		kind: processor.KindProcessor,
		newProc: func() processor.Processor[any, any, any, any] {
			return &fkForeignJoin[KO, VO]{subs: subs, subTopic: subTopic, respTopic: respTopic, kos: kos, vos: vos, gate: rightGate}
		},
	}, "", config{name: base + "-foreign-join-subscription"}, other.node)
	rightGate.connect(b, foreign)
	b.connectStore(foreign, subs)
	respSink := b.addNode(&nodeDef{kind: processor.KindSink, topic: respTopic, encode: rawEncode},
		"", config{name: base + "-subscription-response-sink"}, recv, foreign)
	respSrc := b.addSource(respTopic, rawDecode, config{name: base + "-subscription-response-source"}, "")
	resolve := b.addNode(&nodeDef{
		kind: processor.KindProcessor,
		newProc: func() processor.Processor[any, any, any, any] {
			return &fkResolve[K, V, VO, VR]{values: values, subTopic: subTopic, respTopic: respTopic, ks: ks, vs: vs, vos: vos, joiner: joiner, left: left}
		},
	}, "", config{name: base + "-subscription-response-resolver"}, respSrc)
	b.connectStore(resolve, values)
	// Each internal topic is co-partitioned with the table its reader
	// joins: its partition count is the reader's.
	subSink.copartition, respSink.copartition = recv, resolve

	out := Table[K, VR]{b: b, node: resolve, ks: t.ks, vs: inferSerde[VR]()}
	if cfg.store != "" {
		out = out.materialize("KTABLE-FK-JOIN-OUTPUT", cfg.store)
	}
	return out
}

// rawEncode writes the records of the internal topics, whose keys and
// values the processors already hold as bytes.
func rawEncode(topic string, k, v any) ([]byte, []byte, error) {
	kb, ok := k.([]byte)
	if k != nil && !ok {
		return nil, nil, fmt.Errorf("%w: key %T on %s", errFKWire, k, topic)
	}
	vb, ok := v.([]byte)
	if v != nil && !ok {
		return nil, nil, fmt.Errorf("%w: value %T on %s", errFKWire, v, topic)
	}
	return kb, vb, nil
}

// rawDecode reads the records of the internal topics as bytes; a nil key or
// value stays a nil interface.
func rawDecode(_ string, kb, vb []byte) (any, any, error) {
	var k, v any
	if kb != nil {
		k = kb
	}
	if vb != nil {
		v = vb
	}
	return k, v, nil
}

// fkSend turns left updates into subscriptions (step 1).
type fkSend[K, V, KO any] struct {
	values     string
	topic      processor.TopicRef
	ks         serde.Serde[K]
	vs         serde.Serde[V]
	kos        serde.Serde[KO]
	foreignKey func(K, V) KO
	left       bool
	gate       versionGate[K, V] // skips a versioned left table's out-of-order updates

	resolved string
	kv       *statestore.KV[K, V]
}

func (p *fkSend[K, V, KO]) Init(ctx processor.Context[any, any]) error {
	p.resolved = p.topic.Resolve(ctx.ApplicationID())
	kv, err := processor.KeyValueStore(ctx, p.values, p.ks, p.vs)
	p.kv = kv
	if err == nil {
		err = p.gate.init(ctx)
	}
	return err
}

func (p *fkSend[K, V, KO]) Process(ctx processor.Context[any, any], r processor.Record[any, any]) error {
	k, ok, err := tableKey[K](ctx, r)
	if !ok {
		return err
	}
	if skip, err := p.gate.outOfOrder(k, r.Timestamp); skip || err != nil {
		return err
	}
	old, hadOld, err := p.kv.Get(k)
	if err != nil {
		return fmt.Errorf("topology: foreign-key join %q: %w", p.values, err)
	}
	var v V
	hasNew := r.Value != nil
	if hasNew {
		if v, err = processor.As[V](r.Value); err != nil {
			return err
		}
		err = p.kv.Put(k, v)
	} else if hadOld {
		err = p.kv.Delete(k)
	}
	if err != nil {
		return fmt.Errorf("topology: foreign-key join %q: %w", p.values, err)
	}
	if !hasNew && !hadOld {
		return nil // the delete of an absent key changes nothing
	}
	pk, err := p.ks.Serialize(p.resolved, k)
	if err != nil {
		return err
	}
	var hash fkHash
	var newFK, oldFK []byte
	if hasNew {
		vb, err := p.vs.Serialize(p.resolved, v)
		if err != nil {
			return err
		}
		hash = hashValue(vb)
		if newFK, err = p.kos.Serialize(p.resolved, p.foreignKey(k, v)); err != nil {
			return err
		}
	}
	if hadOld {
		if oldFK, err = p.kos.Serialize(p.resolved, p.foreignKey(k, old)); err != nil {
			return err
		}
	}
	for _, s := range fkInstructions(p.left, hadOld, hasNew, oldFK, newFK) {
		out := r
		out.Key = nil
		if s.fk != nil {
			out.Key = s.fk
		}
		out.Value = subscription{op: s.op, hash: hash, pk: pk}.encode()
		if err := ctx.Forward(out); err != nil {
			return err
		}
	}
	return nil
}

// fkSent is one subscription to send: to foreign key fk (nil: none).
type fkSent struct {
	fk []byte
	op fkInstruction
}

// fkInstructions returns the subscriptions a left update sends, in order,
// as Kafka Streams 4.4's SubscriptionSendProcessorSupplier does: hadOld and
// hasNew say whether the key had a value before and has one now, oldFK and
// newFK are the serialized foreign keys of those values.
//
// Inner join: a new key, or an update keeping its foreign key, subscribes
// and is answered only if the foreign value exists; an update changing its
// foreign key unsubscribes silently from the old one and subscribes to the
// new with PROPAGATE_NULL (a result set before must be unset when the new
// foreign key has no value); a delete unsubscribes and propagates the
// delete. Left join: a changed foreign key, or a delete, unsubscribes
// silently from the old one; then every update subscribes to its foreign
// key with PROPAGATE_NULL — a delete to none (a nil key), whose answer is
// the result's delete.
func fkInstructions(left, hadOld, hasNew bool, oldFK, newFK []byte) []fkSent {
	var out []fkSent
	changed := hadOld && (!hasNew || string(oldFK) != string(newFK))
	if left {
		if changed {
			out = append(out, fkSent{fk: oldFK, op: fkDeleteNoPropagate})
		}
		if hadOld || hasNew {
			out = append(out, fkSent{fk: newFK, op: fkPropagateNullIfAbsent})
		}
		return out
	}
	switch {
	case hasNew && changed:
		out = append(out, fkSent{fk: oldFK, op: fkDeleteNoPropagate}, fkSent{fk: newFK, op: fkPropagateNullIfAbsent})
	case hasNew:
		out = append(out, fkSent{fk: newFK, op: fkPropagateIfAvailable})
	case hadOld:
		out = append(out, fkSent{fk: oldFK, op: fkDeleteAndPropagate})
	}
	return out
}
