package processor

import (
	"errors"
	"fmt"
	"time"

	"github.com/weirstream/weir/statestore"
)

// nodeContext is the untyped Context of one node in a task.
type nodeContext struct {
	node *node
}

var _ Context[any, any] = (*nodeContext)(nil)

// Forward sends r to every child.
func (c *nodeContext) Forward(r Record[any, any]) error {
	for _, child := range c.node.children {
		if err := c.node.task.deliver(child, r); err != nil {
			return err
		}
	}
	return nil
}

// ForwardTo sends r to the named child.
func (c *nodeContext) ForwardTo(name string, r Record[any, any]) error {
	for _, child := range c.node.children {
		if child.def.Name == name {
			return c.node.task.deliver(child, r)
		}
	}
	return fmt.Errorf("%w: %q is not a child of %q", ErrUnknownChild, name, c.node.def.Name)
}

// StateStore returns a store the node is connected to.
func (c *nodeContext) StateStore(name string) (statestore.Store, error) {
	for _, s := range c.node.def.Stores {
		if s == name {
			if gs, ok := c.node.task.globals[name]; ok {
				return gs, nil
			}
			return c.node.task.stores[name], nil
		}
	}
	return nil, fmt.Errorf("%w: %q is not connected to node %q", ErrUnknownStore, name, c.node.def.Name)
}

// Schedule registers a punctuator.
func (c *nodeContext) Schedule(interval time.Duration, typ PunctuationType, fn Punctuator) (Cancellable, error) {
	return c.node.task.sched.add(c.node.task, c, interval, typ, fn)
}

// TaskID returns the task's id.
func (c *nodeContext) TaskID() TaskID { return c.node.task.cfg.ID }

// ApplicationID returns the application id.
func (c *nodeContext) ApplicationID() string { return c.node.task.cfg.ApplicationID }

// NodeName returns the node's name.
func (c *nodeContext) NodeName() string { return c.node.def.Name }

// StreamTime returns the task's stream time.
func (c *nodeContext) StreamTime() time.Time { return c.node.task.StreamTime() }

// Count adds n to a task counter.
func (c *nodeContext) Count(name string, n int64) { c.node.task.counters[name] += n }

// deliver hands r to node n: a sink encodes and emits it; a processor
// processes it. An error or panic becomes a *RecordError naming n, unless a
// node further down already produced one.
func (t *Task) deliver(n *node, r untyped) (err error) {
	if n.def.Kind == KindSink {
		return t.emit(n, r)
	}
	defer func() {
		if p := recover(); p != nil {
			err = t.nodeError(n, r, fmt.Errorf("%w: %v", ErrPanic, p))
		}
	}()
	if err := n.proc.Process(n.ctx, r); err != nil {
		var re *RecordError
		if errors.As(err, &re) {
			return err
		}
		return t.nodeError(n, r, err)
	}
	return nil
}

func (t *Task) nodeError(n *node, r untyped, err error) error {
	return &RecordError{Kind: ProcessingError, Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Node: n.def.Name, Err: err}
}

// typedContext is the typed view of a node's context a user processor sees.
type typedContext[KOut, VOut any] struct {
	c Context[any, any]
}

var _ Context[string, int64] = typedContext[string, int64]{}

func (c typedContext[KOut, VOut]) Forward(r Record[KOut, VOut]) error {
	return c.c.Forward(Erase(r))
}

func (c typedContext[KOut, VOut]) ForwardTo(child string, r Record[KOut, VOut]) error {
	return c.c.ForwardTo(child, Erase(r))
}

func (c typedContext[KOut, VOut]) StateStore(name string) (statestore.Store, error) {
	return c.c.StateStore(name)
}

func (c typedContext[KOut, VOut]) Schedule(interval time.Duration, typ PunctuationType, fn Punctuator) (Cancellable, error) {
	return c.c.Schedule(interval, typ, fn)
}

func (c typedContext[KOut, VOut]) TaskID() TaskID             { return c.c.TaskID() }
func (c typedContext[KOut, VOut]) ApplicationID() string      { return c.c.ApplicationID() }
func (c typedContext[KOut, VOut]) NodeName() string           { return c.c.NodeName() }
func (c typedContext[KOut, VOut]) StreamTime() time.Time      { return c.c.StreamTime() }
func (c typedContext[KOut, VOut]) Count(name string, n int64) { c.c.Count(name, n) }

// Adapt turns a typed processor into the untyped form a Graph node runs. It
// checks key and value types at run time; a mismatch (a wiring bug) is a
// processing error wrapping ErrTypeMismatch.
func Adapt[KIn, VIn, KOut, VOut any](p Processor[KIn, VIn, KOut, VOut]) Processor[any, any, any, any] {
	return &adapted[KIn, VIn, KOut, VOut]{p: p}
}

type adapted[KIn, VIn, KOut, VOut any] struct {
	p  Processor[KIn, VIn, KOut, VOut]
	tc typedContext[KOut, VOut]
}

func (a *adapted[KIn, VIn, KOut, VOut]) Init(ctx Context[any, any]) error {
	a.tc = typedContext[KOut, VOut]{c: ctx}
	if in, ok := a.p.(Initializer[KOut, VOut]); ok {
		return in.Init(a.tc)
	}
	return nil
}

func (a *adapted[KIn, VIn, KOut, VOut]) Process(_ Context[any, any], r Record[any, any]) error {
	tr, err := Assert[KIn, VIn](r)
	if err != nil {
		return err
	}
	return a.p.Process(a.tc, tr)
}

func (a *adapted[KIn, VIn, KOut, VOut]) Close() error {
	if c, ok := a.p.(Closer); ok {
		return c.Close()
	}
	return nil
}
