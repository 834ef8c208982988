package topology

import (
	"fmt"
	"time"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/statestore"
)

// fkReceive keeps the subscriptions of a foreign-key join and answers them
// with the right table's value (step 2): Kafka Streams'
// SubscriptionReceiveProcessorSupplier and SubscriptionJoinProcessorSupplier
// in one node.
type fkReceive[KO, VO any] struct {
	subs, other, otherTS string // otherTS "" when other is versioned
	subTopic, respTopic  processor.TopicRef
	kos                  serde.Serde[KO]
	vos                  serde.Serde[VO]
	gate                 versionGate[KO, VO] // reads a versioned other table

	subName, respName string
	store             statestore.KeyValueStore
	right             *statestore.KV[KO, VO]
	rightTS           *statestore.KV[KO, int64]
}

func (p *fkReceive[KO, VO]) Init(ctx processor.Context[any, any]) error {
	p.subName, p.respName = p.subTopic.Resolve(ctx.ApplicationID()), p.respTopic.Resolve(ctx.ApplicationID())
	var err error
	if p.store, err = kvStore(ctx, p.subs); err != nil {
		return err
	}
	if p.otherTS == "" {
		return p.gate.init(ctx)
	}
	if p.right, err = processor.KeyValueStore(ctx, p.other, p.kos, p.vos); err != nil {
		return err
	}
	p.rightTS, err = processor.KeyValueStore(ctx, p.otherTS, p.kos, serde.Int64())
	return err
}

func (p *fkReceive[KO, VO]) Process(ctx processor.Context[any, any], r processor.Record[any, any]) error {
	fk, _ := r.Key.([]byte)
	vb, _ := r.Value.([]byte)
	if dropNull(ctx, r.Value == nil) {
		return nil
	}
	s, err := decodeSubscription(vb)
	if err != nil {
		return err
	}
	if dropNull(ctx, r.Key == nil && s.op != fkPropagateNullIfAbsent) {
		return nil
	}
	var (
		vo    VO
		found bool
		ts    = r.Timestamp
	)
	if r.Key != nil {
		key := subscriptionKey(fk, s.pk)
		if s.op.deletes() {
			err = p.store.Delete(key)
		} else {
			err = p.store.Put(key, storedSubscription(s.hash))
		}
		if err != nil {
			return fmt.Errorf("topology: foreign-key join %q: %w", p.subs, err)
		}
		k, err := p.kos.Deserialize(p.subName, fk)
		if err != nil {
			return err
		}
		if p.right == nil { // versioned
			var vts time.Time
			if vo, vts, found, err = p.gate.latest(k); err != nil {
				return fmt.Errorf("topology: foreign-key join with %q: %w", p.other, err)
			}
			if found && vts.After(ts) {
				ts = vts
			}
		} else if vo, found, err = p.right.Get(k); err != nil {
			return fmt.Errorf("topology: foreign-key join with %q: %w", p.other, err)
		} else if found {
			rts, ok, err := p.rightTS.Get(k)
			if err != nil {
				return fmt.Errorf("topology: foreign-key join with %q: %w", p.other, err)
			}
			if ok && rts > ts.UnixMilli() {
				ts = time.UnixMilli(rts)
			}
		}
	}
	resp := response{hash: s.hash}
	switch s.op {
	case fkDeleteNoPropagate:
		return nil
	case fkPropagateIfAvailable:
		if !found {
			return nil
		}
	case fkDeleteAndPropagate:
		found = false
	}
	if found {
		if resp.value, err = p.vos.Serialize(p.respName, vo); err != nil {
			return err
		}
		resp.found = true
	}
	out := r
	out.Key, out.Value, out.Timestamp = s.pk, resp.encode(), ts
	return ctx.Forward(out)
}

// fkForeignJoin sends each right update to the left keys subscribed to its
// key (step 3): Kafka Streams' ForeignTableJoinProcessorSupplier.
type fkForeignJoin[KO, VO any] struct {
	subs                string
	subTopic, respTopic processor.TopicRef
	kos                 serde.Serde[KO]
	vos                 serde.Serde[VO]
	gate                versionGate[KO, VO] // skips a versioned other table's out-of-order updates

	subName, respName string
	store             statestore.KeyValueStore
}

func (p *fkForeignJoin[KO, VO]) Init(ctx processor.Context[any, any]) error {
	p.subName, p.respName = p.subTopic.Resolve(ctx.ApplicationID()), p.respTopic.Resolve(ctx.ApplicationID())
	var err error
	if p.store, err = kvStore(ctx, p.subs); err != nil {
		return err
	}
	return p.gate.init(ctx)
}

func (p *fkForeignJoin[KO, VO]) Process(ctx processor.Context[any, any], r processor.Record[any, any]) error {
	if dropNull(ctx, r.Key == nil) {
		return nil
	}
	k, err := processor.As[KO](r.Key)
	if err != nil {
		return err
	}
	if skip, err := p.gate.outOfOrder(k, r.Timestamp); skip || err != nil {
		return err
	}
	fk, err := p.kos.Serialize(p.subName, k)
	if err != nil {
		return err
	}
	var value []byte
	if r.Value != nil {
		vo, err := processor.As[VO](r.Value)
		if err != nil {
			return err
		}
		if value, err = p.vos.Serialize(p.respName, vo); err != nil {
			return err
		}
	}
	// Read every subscriber first: forwarding may write the store (a
	// self-join's left side), and an iterator must not outlive that.
	type subscriber struct {
		pk   []byte
		hash fkHash
	}
	var subscribers []subscriber
	prefix := subscriptionPrefix(fk)
	it, err := p.store.PrefixScan(prefix)
	if err != nil {
		return fmt.Errorf("topology: foreign-key join %q: %w", p.subs, err)
	}
	for it.Next() {
		pk, ok := splitSubscriptionKey(it.Key(), prefix)
		if !ok {
			continue
		}
		h, err := decodeStoredSubscription(it.Value())
		if err != nil {
			it.Close()
			return err
		}
		subscribers = append(subscribers, subscriber{pk: pk, hash: h})
	}
	if err := closeIter(it); err != nil {
		return fmt.Errorf("topology: foreign-key join %q: %w", p.subs, err)
	}
	for _, s := range subscribers {
		out := r
		out.Key = s.pk
		out.Value = response{hash: s.hash, found: r.Value != nil, value: value}.encode()
		if err := ctx.Forward(out); err != nil {
			return err
		}
	}
	return nil
}

// fkResolve joins each response with the left key's current value, or
// drops it when the value it answers has been replaced (step 4): Kafka
// Streams' ResponseJoinProcessorSupplier.
type fkResolve[K, V, VO, VR any] struct {
	values              string
	subTopic, respTopic processor.TopicRef
	ks                  serde.Serde[K]
	vs                  serde.Serde[V]
	vos                 serde.Serde[VO]
	joiner              func(V, VO, bool) VR
	left                bool

	subName, respName string
	kv                *statestore.KV[K, V]
}

func (p *fkResolve[K, V, VO, VR]) Init(ctx processor.Context[any, any]) error {
	p.subName, p.respName = p.subTopic.Resolve(ctx.ApplicationID()), p.respTopic.Resolve(ctx.ApplicationID())
	kv, err := processor.KeyValueStore(ctx, p.values, p.ks, p.vs)
	p.kv = kv
	return err
}

func (p *fkResolve[K, V, VO, VR]) Process(ctx processor.Context[any, any], r processor.Record[any, any]) error {
	kb, _ := r.Key.([]byte)
	vb, _ := r.Value.([]byte)
	if dropNull(ctx, r.Key == nil || r.Value == nil) {
		return nil
	}
	resp, err := decodeResponse(vb)
	if err != nil {
		return err
	}
	k, err := p.ks.Deserialize(p.respName, kb)
	if err != nil {
		return err
	}
	v, has, err := p.kv.Get(k)
	if err != nil {
		return fmt.Errorf("topology: foreign-key join %q: %w", p.values, err)
	}
	var current fkHash
	if has {
		b, err := p.vs.Serialize(p.subName, v)
		if err != nil {
			return err
		}
		current = hashValue(b)
	}
	if current != resp.hash {
		ctx.Count(processor.MetricDroppedStale, 1)
		return nil
	}
	out := r
	out.Key, out.Value = k, nil
	if resp.found || (p.left && has) {
		var vo VO
		if resp.found {
			if vo, err = p.vos.Deserialize(p.respName, resp.value); err != nil {
				return err
			}
		}
		out.Value = p.joiner(v, vo, resp.found)
	}
	return ctx.Forward(out)
}
