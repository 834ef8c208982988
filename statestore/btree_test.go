package statestore

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// checkTree verifies the B-tree invariants: sorted items, node sizes, one
// leaf depth, and the item count.
func checkTree[T any](t *testing.T, tr *btree[T]) {
	t.Helper()
	if tr.root == nil {
		require.Zero(t, tr.Len())
		return
	}
	leafDepth := -1
	count := 0
	var walk func(n *btreeNode[T], depth int, lo, hi *T)
	walk = func(n *btreeNode[T], depth int, lo, hi *T) {
		if n != tr.root {
			require.GreaterOrEqual(t, len(n.items), btreeMinItems, "underfull node")
		}
		require.LessOrEqual(t, len(n.items), btreeMaxItems, "overfull node")
		require.NotEmpty(t, n.items)
		for i := range n.items {
			if i > 0 {
				require.Negative(t, tr.cmp(n.items[i-1], n.items[i]), "unsorted node")
			}
			if lo != nil {
				require.Negative(t, tr.cmp(*lo, n.items[i]))
			}
			if hi != nil {
				require.Negative(t, tr.cmp(n.items[i], *hi))
			}
		}
		count += len(n.items)
		if n.leaf() {
			if leafDepth < 0 {
				leafDepth = depth
			}
			require.Equal(t, leafDepth, depth, "leaves at different depths")
			return
		}
		require.Len(t, n.children, len(n.items)+1)
		for i, c := range n.children {
			clo, chi := lo, hi
			if i > 0 {
				clo = &n.items[i-1]
			}
			if i < len(n.items) {
				chi = &n.items[i]
			}
			walk(c, depth+1, clo, chi)
		}
	}
	walk(tr.root, 0, nil, nil)
	require.Equal(t, tr.Len(), count)
}

func collect[T any](cmpf func(a, b T) int, root *btreeNode[T]) []T {
	var out []T
	c := newBtreeCursor(cmpf, root)
	for {
		item, ok := c.Next()
		if !ok {
			return out
		}
		out = append(out, item)
	}
}

// pair is a test item: ordered by k, carrying v.
type pair struct{ k, v int }

func comparePair(a, b pair) int { return cmp.Compare(a.k, b.k) }

func TestBtreeAgainstMap(t *testing.T) {
	for _, keySpace := range []int{10, 300, 5000} {
		r := rand.New(rand.NewPCG(1, uint64(keySpace)))
		tr := newBtree(comparePair)
		model := map[int]int{}
		for op := range 20000 {
			k := r.IntN(keySpace)
			switch r.IntN(3) {
			case 0, 1:
				old, replaced := tr.Set(pair{k, op})
				prev, had := model[k]
				require.Equal(t, had, replaced)
				if had {
					require.Equal(t, prev, old.v)
				}
				model[k] = op
			case 2:
				old, ok := tr.Delete(pair{k: k})
				prev, had := model[k]
				require.Equal(t, had, ok)
				if had {
					require.Equal(t, prev, old.v)
				}
				delete(model, k)
			}
			if op%1000 == 0 {
				checkTree(t, tr)
			}
		}
		checkTree(t, tr)
		want := make([]pair, 0, len(model))
		for k, v := range model {
			want = append(want, pair{k, v})
		}
		slices.SortFunc(want, comparePair)
		require.Equal(t, want, collect(comparePair, tr.root))
		for k := range keySpace {
			got, ok := tr.Get(pair{k: k})
			v, had := model[k]
			require.Equal(t, had, ok)
			if had {
				require.Equal(t, v, got.v)
			}
		}
		// Delete everything: the tree shrinks back to nothing.
		for _, p := range want {
			_, ok := tr.Delete(p)
			require.True(t, ok)
		}
		checkTree(t, tr)
		require.Nil(t, tr.root)
	}
}

func TestBtreeSnapshotsAreImmutable(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	tr := newBtree(comparePair)
	type snap struct {
		root *btreeNode[pair]
		want []pair
	}
	var snaps []snap
	for op := range 30000 {
		k := r.IntN(2000)
		if r.IntN(3) == 0 {
			tr.Delete(pair{k: k})
		} else {
			tr.Set(pair{k, op})
		}
		if op%997 == 0 {
			root := tr.snapshot()
			snaps = append(snaps, snap{root, collect(comparePair, root)})
		}
	}
	checkTree(t, tr)
	for _, s := range snaps {
		require.Equal(t, s.want, collect(comparePair, s.root))
	}
}

func TestBtreeCursorSeek(t *testing.T) {
	tr := newBtree(comparePair)
	for k := 0; k < 3000; k += 3 {
		tr.Set(pair{k: k})
	}
	c := newBtreeCursor(comparePair, tr.root)
	for _, pivot := range []int{-5, 0, 1, 2, 3, 100, 1499, 1500, 2995, 2997, 2998, 5000} {
		c.Seek(pair{k: pivot})
		want := (max(pivot, 0) + 2) / 3 * 3
		for range 5 {
			got, ok := c.Next()
			if want >= 3000 {
				require.False(t, ok, "pivot %d", pivot)
				break
			}
			require.True(t, ok, "pivot %d", pivot)
			require.Equal(t, want, got.k, "pivot %d", pivot)
			want += 3
		}
	}
	var empty btreeCursor[pair]
	empty.cmp = comparePair
	empty.Seek(pair{k: 1})
	_, ok := empty.Next()
	require.False(t, ok)
}

func TestBtreeMin(t *testing.T) {
	tr := newBtree(comparePair)
	_, ok := tr.Min()
	require.False(t, ok)
	for _, k := range []int{5, 3, 9, 1, 7} {
		tr.Set(pair{k: k})
	}
	m, ok := tr.Min()
	require.True(t, ok)
	require.Equal(t, 1, m.k)
}
