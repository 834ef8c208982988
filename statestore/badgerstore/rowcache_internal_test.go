package badgerstore

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A read that missed and raced with a write does not put the value it read
// (perhaps the one the write replaced) into the cache.
func TestRowCacheFillAfterWriteIsDropped(t *testing.T) {
	c := newRowCache(1 << 20)
	k := []byte("k")
	_, _, hit, gen := c.get(k)
	require.False(t, hit)
	c.written([]op{{key: k, value: []byte("new")}}, true) // commits while the read runs
	c.fill(k, []byte("old"), true, gen)
	_, _, hit, gen = c.get(k)
	require.False(t, hit, "the stale read was cached")
	c.fill(k, []byte("new"), true, gen)
	v, found, hit, _ := c.get(k)
	require.True(t, hit)
	require.True(t, found)
	require.Equal(t, "new", string(v))
	c.written([]op{{key: k}}, false)
	_, _, hit, _ = c.get(k)
	require.False(t, hit)
}

// The cache stays within its bytes.
func TestRowCacheBound(t *testing.T) {
	c := newRowCache(10 * (rowCacheOverhead + 10))
	for i := range 100 {
		_, _, _, gen := c.get([]byte{byte(i)})
		c.fill([]byte{byte(i)}, []byte("123456789"), true, gen)
		require.LessOrEqual(t, c.bytes, c.max)
	}
	require.NotEmpty(t, c.rows)
	off := newRowCache(0)
	_, _, _, gen := off.get([]byte("k"))
	off.fill([]byte("k"), []byte("v"), true, gen)
	_, _, hit, _ := off.get([]byte("k"))
	require.False(t, hit)
}
