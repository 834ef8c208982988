package statestore

import (
	"errors"
	"fmt"
	"sync/atomic"
)

// CacheEntryOverhead is the number of bytes a Cache counts for each entry on
// top of its key and value sizes: the entry itself, its list links and its
// index slot. It keeps a cache of many tiny entries bounded too.
const CacheEntryOverhead = 64

// CacheBudget is the byte bound that the record caches of one application
// instance share (Kafka Streams' statestore.cache.max.bytes). Every Cache
// made with it counts its entries against it; a Cache whose Put finds the
// budget exceeded evicts its own least recently used entries until the
// budget holds again or it is empty. It is safe for concurrent use: the
// caches of tasks that run on different goroutines share one budget.
type CacheBudget struct {
	max  int64
	used atomic.Int64
}

// NewCacheBudget returns a budget of max bytes; max must be positive.
func NewCacheBudget(max int64) (*CacheBudget, error) {
	if max <= 0 {
		return nil, fmt.Errorf("statestore: cache budget of %d bytes: must be positive", max)
	}
	return &CacheBudget{max: max}, nil
}

// Max returns the budget's bound in bytes.
func (b *CacheBudget) Max() int64 { return b.max }

// Used returns the bytes the caches of this budget hold now.
func (b *CacheBudget) Used() int64 { return b.used.Load() }

// Cache is a record cache (Kafka Streams' ThreadCache/NamedCache): the
// latest value of each key updated since the last Flush, in least recently
// used order. Put of a key already cached replaces its value and makes it
// the most recently used; when the budget is exceeded the least recently
// used entries are evicted — handed to the evict function and removed —
// oldest first. Flush evicts every entry, oldest first; Discard drops them
// without evicting (an abandoned epoch or batch).
//
// The values are opaque to the cache: the caller says how many bytes each
// one counts for. A Cache is not safe for concurrent use; one task owns it.
type Cache[V any] struct {
	budget *CacheBudget
	evict  func(key []byte, v V) error
	index  map[string]*cacheEntry[V]
	head   *cacheEntry[V] // least recently used
	tail   *cacheEntry[V] // most recently used
	bytes  int64
}

type cacheEntry[V any] struct {
	key        []byte
	value      V
	size       int64
	prev, next *cacheEntry[V]
}

// NewCache returns an empty cache counted against budget; evict receives
// each entry that leaves the cache by eviction or Flush.
func NewCache[V any](budget *CacheBudget, evict func(key []byte, v V) error) (*Cache[V], error) {
	if budget == nil {
		return nil, errors.New("statestore: cache needs a budget")
	}
	if evict == nil {
		return nil, errors.New("statestore: cache needs an evict function")
	}
	return &Cache[V]{budget: budget, evict: evict, index: map[string]*cacheEntry[V]{}}, nil
}

// Get returns the cached value of key and whether there is one; a hit makes
// the entry the most recently used.
func (c *Cache[V]) Get(key []byte) (V, bool) {
	e, ok := c.index[string(key)]
	if !ok {
		var zero V
		return zero, false
	}
	c.touch(e)
	return e.value, true
}

// Put makes v the cached value of key, counting keyLen+size+
// CacheEntryOverhead bytes for it (size is the value's size), then evicts
// least recently used entries while the budget is exceeded — possibly this
// one, if it alone exceeds it. key is copied. An error of the evict
// function stops the eviction and is returned; the entry it was called with
// has left the cache.
func (c *Cache[V]) Put(key []byte, v V, size int) error {
	n := int64(len(key)+size) + CacheEntryOverhead
	if e, ok := c.index[string(key)]; ok {
		e.value = v
		c.account(n - e.size)
		e.size = n
		c.touch(e)
	} else {
		e := &cacheEntry[V]{key: append([]byte(nil), key...), value: v, size: n}
		c.index[string(e.key)] = e
		c.pushBack(e)
		c.account(n)
	}
	for c.head != nil && c.budget.used.Load() > c.budget.max {
		if err := c.evictHead(); err != nil {
			return err
		}
	}
	return nil
}

// Flush evicts every entry, least recently used first. On an error of the
// evict function the entries not yet evicted stay cached and the error is
// returned.
func (c *Cache[V]) Flush() error {
	for c.head != nil {
		if err := c.evictHead(); err != nil {
			return err
		}
	}
	return nil
}

// Discard drops every entry without evicting it.
func (c *Cache[V]) Discard() {
	c.account(-c.bytes)
	c.index = map[string]*cacheEntry[V]{}
	c.head, c.tail = nil, nil
}

// Len returns the number of cached entries.
func (c *Cache[V]) Len() int { return len(c.index) }

// Bytes returns the bytes this cache counts against its budget.
func (c *Cache[V]) Bytes() int64 { return c.bytes }

func (c *Cache[V]) evictHead() error {
	e := c.head
	c.unlink(e)
	delete(c.index, string(e.key))
	c.account(-e.size)
	return c.evict(e.key, e.value)
}

func (c *Cache[V]) account(n int64) {
	c.bytes += n
	c.budget.used.Add(n)
}

func (c *Cache[V]) touch(e *cacheEntry[V]) {
	if c.tail == e {
		return
	}
	c.unlink(e)
	c.pushBack(e)
}

func (c *Cache[V]) pushBack(e *cacheEntry[V]) {
	e.prev, e.next = c.tail, nil
	if c.tail != nil {
		c.tail.next = e
	} else {
		c.head = e
	}
	c.tail = e
}

func (c *Cache[V]) unlink(e *cacheEntry[V]) {
	if e.prev != nil {
		e.prev.next = e.next
	} else {
		c.head = e.next
	}
	if e.next != nil {
		e.next.prev = e.prev
	} else {
		c.tail = e.prev
	}
	e.prev, e.next = nil, nil
}
