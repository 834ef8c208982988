package statestore_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/statestore"
)

type evicted struct {
	key string
	v   int
}

func newTestCache(t *testing.T, b *statestore.CacheBudget) (*statestore.Cache[int], *[]evicted) {
	t.Helper()
	var out []evicted
	c, err := statestore.NewCache(b, func(k []byte, v int) error {
		out = append(out, evicted{string(k), v})
		return nil
	})
	require.NoError(t, err)
	return c, &out
}

func budget(t *testing.T, n int64) *statestore.CacheBudget {
	t.Helper()
	b, err := statestore.NewCacheBudget(n)
	require.NoError(t, err)
	return b
}

func TestCacheCoalescesUpdatesOfAKey(t *testing.T) {
	c, out := newTestCache(t, budget(t, 1<<20))
	for i := 1; i <= 5; i++ {
		require.NoError(t, c.Put([]byte("a"), i, 8))
		require.NoError(t, c.Put([]byte("b"), 10*i, 8))
	}
	v, ok := c.Get([]byte("a"))
	require.True(t, ok)
	require.Equal(t, 5, v)
	require.Empty(t, *out, "nothing leaves the cache before a flush or an eviction")
	require.Equal(t, 2, c.Len())

	require.NoError(t, c.Flush())
	// The latest value of each key, least recently used first: the Get
	// made "a" the most recently used.
	require.Equal(t, []evicted{{"b", 50}, {"a", 5}}, *out)
	require.Zero(t, c.Len())
	require.Zero(t, c.Bytes())
	_, ok = c.Get([]byte("a"))
	require.False(t, ok)
}

func TestCacheEvictsLeastRecentlyUsedWhenOverBudget(t *testing.T) {
	entry := int64(1 + 8 + statestore.CacheEntryOverhead) // key, value, overhead
	c, out := newTestCache(t, budget(t, 3*entry))
	require.NoError(t, c.Put([]byte("a"), 1, 8))
	require.NoError(t, c.Put([]byte("b"), 2, 8))
	require.NoError(t, c.Put([]byte("c"), 3, 8))
	require.Empty(t, *out, "three entries fit")
	_, _ = c.Get([]byte("a")) // a is now the most recently used: b is the oldest
	require.NoError(t, c.Put([]byte("d"), 4, 8))
	require.Equal(t, []evicted{{"b", 2}}, *out)
	require.NoError(t, c.Put([]byte("c"), 33, 8)) // an update refreshes c
	require.NoError(t, c.Put([]byte("e"), 5, 8))
	require.Equal(t, []evicted{{"b", 2}, {"a", 1}}, *out)
	require.NoError(t, c.Flush())
	require.Equal(t, []evicted{{"b", 2}, {"a", 1}, {"d", 4}, {"c", 33}, {"e", 5}}, *out)
}

func TestCacheByteAccounting(t *testing.T) {
	b := budget(t, 1<<20)
	c1, _ := newTestCache(t, b)
	c2, _ := newTestCache(t, b)
	require.NoError(t, c1.Put([]byte("key"), 1, 100))
	require.Equal(t, int64(3+100+statestore.CacheEntryOverhead), c1.Bytes())
	require.NoError(t, c1.Put([]byte("key"), 2, 10)) // a smaller value replaces the larger one
	require.Equal(t, int64(3+10+statestore.CacheEntryOverhead), c1.Bytes())
	require.NoError(t, c2.Put([]byte("k"), 1, 0))
	require.Equal(t, c1.Bytes()+c2.Bytes(), b.Used(), "the budget counts every cache made with it")
	c1.Discard()
	require.Equal(t, c2.Bytes(), b.Used())
	require.NoError(t, c2.Flush())
	require.Zero(t, b.Used())
}

func TestCacheSharedBudget(t *testing.T) {
	entry := int64(1 + 8 + statestore.CacheEntryOverhead)
	b := budget(t, 2*entry)
	c1, out1 := newTestCache(t, b)
	c2, out2 := newTestCache(t, b)
	require.NoError(t, c1.Put([]byte("a"), 1, 8))
	require.NoError(t, c1.Put([]byte("b"), 2, 8))
	// The budget is full: c2's Put evicts from c2 itself, its only entry.
	require.NoError(t, c2.Put([]byte("x"), 9, 8))
	require.Empty(t, *out1)
	require.Equal(t, []evicted{{"x", 9}}, *out2)
	require.LessOrEqual(t, b.Used(), b.Max())
}

func TestCacheEntryLargerThanBudgetIsEvictedAtOnce(t *testing.T) {
	c, out := newTestCache(t, budget(t, 10))
	require.NoError(t, c.Put([]byte("big"), 7, 100))
	require.Equal(t, []evicted{{"big", 7}}, *out)
	require.Zero(t, c.Len())
}

func TestCacheDiscardDropsWithoutEvicting(t *testing.T) {
	c, out := newTestCache(t, budget(t, 1<<20))
	require.NoError(t, c.Put([]byte("a"), 1, 8))
	c.Discard()
	require.NoError(t, c.Flush())
	require.Empty(t, *out)
	require.Zero(t, c.Len())
}

func TestCacheFlushErrorKeepsTheRest(t *testing.T) {
	boom := errors.New("boom")
	var seen []string
	c, err := statestore.NewCache(budget(t, 1<<20), func(k []byte, _ int) error {
		seen = append(seen, string(k))
		if string(k) == "a" {
			return boom
		}
		return nil
	})
	require.NoError(t, err)
	require.NoError(t, c.Put([]byte("a"), 1, 0))
	require.NoError(t, c.Put([]byte("b"), 2, 0))
	require.ErrorIs(t, c.Flush(), boom)
	require.Equal(t, 1, c.Len(), "b is still cached")
	require.NoError(t, c.Flush())
	require.Equal(t, []string{"a", "b"}, seen)
}

func TestCacheBadArguments(t *testing.T) {
	_, err := statestore.NewCacheBudget(0)
	require.ErrorContains(t, err, "statestore: cache budget of 0 bytes: must be positive")
	_, err = statestore.NewCache[int](nil, func([]byte, int) error { return nil })
	require.ErrorContains(t, err, "statestore: cache needs a budget")
	_, err = statestore.NewCache[int](budget(t, 1), nil)
	require.ErrorContains(t, err, "statestore: cache needs an evict function")
}
