package processor

import (
	"fmt"

	"github.com/weirstream/weir/statestore"
)

// Record caches (Kafka Streams' statestore.cache.max.bytes): a processor
// that forwards an update per input record — an aggregation forwarding the
// key's new aggregate — may keep the latest update of each key in a
// statestore.Cache instead, and forward only what leaves the cache: the
// least recently used keys when the cache is over its byte budget, and
// every key at the end of each epoch or batch, when the engine calls
// Task.FlushCache right before it commits. Updates of a key within one
// commit interval are so coalesced into one record downstream. The engine
// turns the cache on by giving TaskConfig.CacheBudget; processors ask for
// it with CacheBudgetOf and implement CacheFlusher.

// CacheFlusher is implemented by processors that keep a record cache.
type CacheFlusher interface {
	// FlushCache forwards every cached update, least recently used first,
	// and empties the cache.
	FlushCache() error
	// DiscardCache drops every cached update without forwarding it (an
	// abandoned epoch or batch).
	DiscardCache()
}

// CacheBudgetOf returns the record-cache budget of the task ctx belongs to,
// or nil when the task runs without record caches (every update is then
// forwarded as it happens).
func CacheBudgetOf[KOut, VOut any](ctx Context[KOut, VOut]) *statestore.CacheBudget {
	if c, ok := ctx.(interface {
		cacheBudget() *statestore.CacheBudget
	}); ok {
		return c.cacheBudget()
	}
	return nil
}

func (c *nodeContext) cacheBudget() *statestore.CacheBudget { return c.node.task.cfg.CacheBudget }

func (c typedContext[KOut, VOut]) cacheBudget() *statestore.CacheBudget { return CacheBudgetOf(c.c) }

// FlushCache forwards the updates held in the record caches of the task's
// processors (see CacheFlusher), upstream nodes first, so what a flush
// forwards into a cache further down is flushed too. Engines call it at
// the end of every epoch or batch, before FlushChangelog and the commit,
// so the commit carries the flushed outputs. Without a cache budget there
// is nothing to flush. An error (an output the producer did not take, or a
// record a sink cannot serialize) stops the flush and is returned: the
// engine does not commit.
func (t *Task) FlushCache() error {
	if t.closed || t.cfg.CacheBudget == nil {
		return nil
	}
	for _, n := range t.nodes {
		f, ok := n.proc.(CacheFlusher)
		if !ok {
			continue
		}
		if err := t.guard(f.FlushCache); err != nil {
			return fmt.Errorf("processor: task %s: flush the record cache of %q: %w", t.cfg.ID, n.def.Name, err)
		}
	}
	return nil
}

// discardCaches drops the updates held in the task's record caches.
func (t *Task) discardCaches() {
	for _, n := range t.nodes {
		if f, ok := n.proc.(CacheFlusher); ok {
			f.DiscardCache()
		}
	}
}
