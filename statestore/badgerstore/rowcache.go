package badgerstore

import "sync"

// DefaultReadCacheBytes is the size of a DB's read cache when
// Options.ReadCacheBytes is zero.
const DefaultReadCacheBytes = 8 << 20

// rowCacheOverhead is what the read cache counts for each entry on top of
// its key and value: the map slot, the entry and the string header.
const rowCacheOverhead = 64

// rowCache is a DB's read cache: the committed value of the rows that
// point reads (a store's Get) read, so that reading a row again costs a map
// lookup instead of a Badger transaction, a skiplist search through the
// memtables and the levels. A staging overlay reads its base once per key
// per epoch; a word count's hot keys are read every epoch.
//
// It caches absent rows too (a Get that found nothing). Every write of the
// DB passes through commit or writeBatch, which update the rows they write
// that the cache holds (a delete makes them absent); DropPartition clears
// it. So a cached row is the row's committed value — except while a write
// is being committed, when a concurrent read may still get the value before
// it, as it could from Badger.
//
// A read that misses fills the cache only if no write committed since the
// read began (gen): otherwise it might put back a value a write replaced.
// When the cache is over its bytes it drops entries, in map order, until
// it is at three quarters of them.
type rowCache struct {
	mu    sync.Mutex
	rows  map[string]cachedRow
	bytes int64
	max   int64 // ≤ 0: no cache
	gen   uint64
}

type cachedRow struct {
	value []byte // the value, never nil when found
	found bool
}

func newRowCache(max int64) *rowCache {
	return &rowCache{rows: map[string]cachedRow{}, max: max}
}

// get returns a copy of the cached row of key and whether it is cached
// (hit); on a miss it returns the generation to pass to fill.
func (c *rowCache) get(key []byte) (value []byte, found, hit bool, gen uint64) {
	if c.max <= 0 {
		return nil, false, false, 0
	}
	c.mu.Lock()
	r, ok := c.rows[string(key)]
	gen = c.gen
	c.mu.Unlock()
	if !ok {
		return nil, false, false, gen
	}
	if !r.found {
		return nil, false, true, gen
	}
	return append(make([]byte, 0, len(r.value)), r.value...), true, true, gen
}

// fill caches what a read of key that began at generation gen found,
// unless a write committed since. value is copied.
func (c *rowCache) fill(key, value []byte, found bool, gen uint64) {
	if c.max <= 0 {
		return
	}
	n := int64(len(key)+len(value)) + rowCacheOverhead
	if n > c.max/4 {
		return // one huge row must not empty the cache
	}
	r := cachedRow{found: found}
	if found {
		r.value = append(make([]byte, 0, len(value)), value...)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	if old, ok := c.rows[string(key)]; ok {
		c.bytes -= int64(len(key)+len(old.value)) + rowCacheOverhead
	}
	c.rows[string(key)] = r
	c.bytes += n
	c.shrink()
}

// written updates the cached rows of ops after a write of them: a
// committed write's rows take their new values; a failed write's rows are
// dropped, since some of them may have committed.
func (c *rowCache) written(ops []op, committed bool) {
	if c.max <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	for _, o := range ops {
		old, ok := c.rows[string(o.key)]
		switch {
		case !ok:
		case !committed:
			c.bytes -= int64(len(o.key)+len(old.value)) + rowCacheOverhead
			delete(c.rows, string(o.key))
		default:
			r := cachedRow{found: !o.del}
			if !o.del {
				r.value = append(make([]byte, 0, len(o.value)), o.value...)
			}
			c.bytes += int64(len(r.value) - len(old.value))
			c.rows[string(o.key)] = r
		}
	}
	if committed {
		c.shrink()
	}
}

// clear drops every cached row.
func (c *rowCache) clear() {
	if c.max <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.rows)
	c.bytes = 0
}

// shrink drops rows until the cache is at three quarters of its bytes,
// if it is over them. The caller holds mu.
func (c *rowCache) shrink() {
	if c.bytes <= c.max {
		return
	}
	for k, r := range c.rows {
		if c.bytes <= c.max*3/4 {
			return
		}
		c.bytes -= int64(len(k)+len(r.value)) + rowCacheOverhead
		delete(c.rows, k)
	}
}
