package topology

import (
	"reflect"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
)

// Type-changing operations are functions, not methods: Go methods cannot
// introduce type parameters. The resulting stream keeps the serde of every
// part whose type did not change and infers serdes for built-in types; set
// the others with WithKeySerde / WithValueSerde.

// Map turns each record into a new key and value. The keys may change, so
// grouping or joining the result repartitions it.
func Map[K, V, KR, VR any](s Stream[K, V], fn func(K, V) (KR, VR), opts ...Option) Stream[KR, VR] {
	n := s.b.stateless("KSTREAM-MAP", newConfig(opts), func(ctx processor.Context[any, any], r processor.Record[any, any]) error {
		tr, err := processor.Assert[K, V](r)
		if err != nil {
			return err
		}
		k, v := fn(tr.Key, tr.Value)
		r.Key, r.Value = k, v
		return ctx.Forward(r)
	}, s.node)
	return Stream[KR, VR]{b: s.b, node: n, ks: sameOrInfer[K, KR](s.ks), vs: sameOrInfer[V, VR](s.vs), rekeyed: true}
}

// MapValues turns each value into a new value; keys stay as they are.
func MapValues[K, V, VR any](s Stream[K, V], fn func(V) VR, opts ...Option) Stream[K, VR] {
	n := s.b.stateless("KSTREAM-MAPVALUES", newConfig(opts), func(ctx processor.Context[any, any], r processor.Record[any, any]) error {
		v, err := processor.As[V](r.Value)
		if err != nil {
			return err
		}
		r.Value = fn(v)
		return ctx.Forward(r)
	}, s.node)
	return Stream[K, VR]{b: s.b, node: n, ks: s.ks, vs: sameOrInfer[V, VR](s.vs), rekeyed: s.rekeyed}
}

// FlatMap turns each record into zero or more records with new keys.
func FlatMap[K, V, KR, VR any](s Stream[K, V], fn func(K, V) []processor.KeyValue[KR, VR], opts ...Option) Stream[KR, VR] {
	n := s.b.stateless("KSTREAM-FLATMAP", newConfig(opts), func(ctx processor.Context[any, any], r processor.Record[any, any]) error {
		tr, err := processor.Assert[K, V](r)
		if err != nil {
			return err
		}
		for _, kv := range fn(tr.Key, tr.Value) {
			r.Key, r.Value = kv.Key, kv.Value
			if err := ctx.Forward(r); err != nil {
				return err
			}
		}
		return nil
	}, s.node)
	return Stream[KR, VR]{b: s.b, node: n, ks: sameOrInfer[K, KR](s.ks), vs: sameOrInfer[V, VR](s.vs), rekeyed: true}
}

// FlatMapValues turns each value into zero or more values with the same key.
func FlatMapValues[K, V, VR any](s Stream[K, V], fn func(V) []VR, opts ...Option) Stream[K, VR] {
	n := s.b.stateless("KSTREAM-FLATMAPVALUES", newConfig(opts), func(ctx processor.Context[any, any], r processor.Record[any, any]) error {
		v, err := processor.As[V](r.Value)
		if err != nil {
			return err
		}
		for _, out := range fn(v) {
			r.Value = out
			if err := ctx.Forward(r); err != nil {
				return err
			}
		}
		return nil
	}, s.node)
	return Stream[K, VR]{b: s.b, node: n, ks: s.ks, vs: sameOrInfer[V, VR](s.vs), rekeyed: s.rekeyed}
}

// SelectKey gives each record a new key computed from it; values stay.
func SelectKey[K, V, KR any](s Stream[K, V], fn func(K, V) KR, opts ...Option) Stream[KR, V] {
	n := s.b.stateless("KSTREAM-KEY-SELECT", newConfig(opts), func(ctx processor.Context[any, any], r processor.Record[any, any]) error {
		tr, err := processor.Assert[K, V](r)
		if err != nil {
			return err
		}
		r.Key = fn(tr.Key, tr.Value)
		return ctx.Forward(r)
	}, s.node)
	return Stream[KR, V]{b: s.b, node: n, ks: sameOrInfer[K, KR](s.ks), vs: s.vs, rekeyed: true}
}

// Process runs a custom processor on each record. The supplier is called
// once per task. Stores the processor uses must be added with AddStore and
// connected with WithStores. The processor may change keys, so grouping or
// joining the result repartitions it.
func Process[K, V, KR, VR any](s Stream[K, V], supplier processor.Supplier[K, V, KR, VR], opts ...Option) Stream[KR, VR] {
	cfg := newConfig(opts)
	if supplier == nil {
		s.b.failf("Process: nil supplier")
	}
	n := s.b.addNode(&nodeDef{
		kind: processor.KindProcessor,
		newProc: func() processor.Processor[any, any, any, any] {
			return processor.Adapt(supplier())
		},
	}, "KSTREAM-PROCESSOR", cfg, s.node)
	for _, st := range cfg.stores {
		s.b.connectStore(n, st)
	}
	return Stream[KR, VR]{b: s.b, node: n, ks: sameOrInfer[K, KR](s.ks), vs: sameOrInfer[V, VR](s.vs), rekeyed: true}
}

// sameOrInfer keeps s when T and R are the same type, and infers R's serde
// otherwise.
func sameOrInfer[T, R any](s serde.Serde[T]) serde.Serde[R] {
	if same, ok := any(s).(serde.Serde[R]); ok && s != nil {
		return same
	}
	return inferSerde[R]()
}

func typeName[T any]() string { return reflect.TypeFor[T]().String() }
