package topology

import "github.com/weirstream/weir/processor"

// Splitter routes each record of a stream to the first branch whose
// predicate it satisfies, like Kafka Streams' split(). Create one with
// Stream.Split, add branches with Branch, and finish with Default or
// Branches:
//
//	routes := orders.Split(topology.Named("orders-")).
//		Branch("large", func(_ string, o Order) bool { return o.Total > 1000 }).
//		Default("small")
//	routes["orders-large"].To("large-orders")
//
// A record that matches no branch goes to the default branch if there is
// one and is otherwise not forwarded.
type Splitter[K, V any] struct {
	s        Stream[K, V]
	prefix   string
	names    []string
	preds    []func(K, V) bool
	finished bool
}

// Branch adds a branch named prefix+name for the records that satisfy pred
// and did not match an earlier branch.
func (sp *Splitter[K, V]) Branch(name string, pred func(K, V) bool) *Splitter[K, V] {
	if sp.finished {
		sp.s.b.failf("Split: Branch(%q) after Default or Branches", name)
		return sp
	}
	if name == "" || pred == nil {
		sp.s.b.failf("Split: branch needs a name and a predicate")
		return sp
	}
	sp.names = append(sp.names, sp.prefix+name)
	sp.preds = append(sp.preds, pred)
	return sp
}

// Default adds a branch named prefix+name for the records that matched no
// other branch, and returns every branch by name.
func (sp *Splitter[K, V]) Default(name string) map[string]Stream[K, V] {
	return sp.finish(sp.prefix + name)
}

// Branches returns every branch by name; records matching none are not
// forwarded.
func (sp *Splitter[K, V]) Branches() map[string]Stream[K, V] {
	return sp.finish("")
}

func (sp *Splitter[K, V]) finish(defaultName string) map[string]Stream[K, V] {
	out := map[string]Stream[K, V]{}
	if sp.finished {
		sp.s.b.failf("Split: finished twice")
		return out
	}
	sp.finished = true
	b := sp.s.b
	names := append([]string(nil), sp.names...)
	preds := append([]func(K, V) bool(nil), sp.preds...)
	router := b.stateless("KSTREAM-BRANCH", config{name: sp.prefix}, func(ctx processor.Context[any, any], r processor.Record[any, any]) error {
		tr, err := processor.Assert[K, V](r)
		if err != nil {
			return err
		}
		for i, pred := range preds {
			if pred(tr.Key, tr.Value) {
				return ctx.ForwardTo(names[i], r)
			}
		}
		if defaultName != "" {
			return ctx.ForwardTo(defaultName, r)
		}
		return nil
	}, sp.s.node)
	if defaultName != "" {
		names = append(names, defaultName)
	}
	for _, name := range names {
		if _, dup := out[name]; dup {
			b.failf("Split: duplicate branch %q", name)
			continue
		}
		n := b.stateless("KSTREAM-BRANCHCHILD", config{name: name}, forwardAll, router)
		out[name] = sp.s.derive(n)
	}
	return out
}
