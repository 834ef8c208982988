package statestore

import "sync/atomic"

// This file holds the ordered structure behind the in-memory stores: a B-tree
// with copy-on-write snapshots.
//
// Each node records the generation that created it. A writer may change a
// node in place only if the node belongs to the tree's current generation;
// otherwise it copies the node first (and, recursively, the path to it).
// Taking a snapshot returns the root and marks the tree shared; the next write
// starts a new generation, so no node reachable from the snapshot is ever
// modified again. Snapshots therefore cost O(1), iterate lazily without a lock,
// and writes after a snapshot copy only the O(log n) nodes on their path, once.

const (
	btreeDegree   = 32
	btreeMaxItems = 2*btreeDegree - 1 // a node splits before growing past this
	btreeMinItems = btreeDegree - 1   // a non-root node never shrinks below this
)

// btreeNode is one node. Leaves have no children; an internal node with n
// items has n+1 children.
type btreeNode[T any] struct {
	items    []T
	children []*btreeNode[T]
	gen      uint64
}

func (n *btreeNode[T]) leaf() bool { return len(n.children) == 0 }

// btree is an ordered set of T under cmp. It is not safe for concurrent
// writes: callers hold a write lock for mutations and a read lock for lookups
// and snapshot. Snapshots may be read without any lock.
type btree[T any] struct {
	cmp    func(a, b T) int
	root   *btreeNode[T]
	length int
	gen    uint64
	// shared is set by snapshot (under a read lock, hence atomic) and cleared
	// by the next mutation, which starts a new generation.
	shared atomic.Bool
}

func newBtree[T any](cmp func(a, b T) int) *btree[T] {
	return &btree[T]{cmp: cmp}
}

// Len returns the number of items.
func (t *btree[T]) Len() int { return t.length }

// snapshot returns a root that no later mutation will modify.
func (t *btree[T]) snapshot() *btreeNode[T] {
	if t.root != nil {
		t.shared.Store(true)
	}
	return t.root
}

// beginWrite starts a new generation if a snapshot shares the current nodes.
func (t *btree[T]) beginWrite() {
	if t.shared.Load() {
		t.gen++
		t.shared.Store(false)
	}
}

func (t *btree[T]) newNode() *btreeNode[T] {
	return &btreeNode[T]{items: make([]T, 0, btreeMaxItems), gen: t.gen}
}

// mutable returns n if the current generation owns it, or a private copy.
func (t *btree[T]) mutable(n *btreeNode[T]) *btreeNode[T] {
	if n.gen == t.gen {
		return n
	}
	c := t.newNode()
	c.items = append(c.items, n.items...)
	if !n.leaf() {
		c.children = make([]*btreeNode[T], len(n.children), btreeMaxItems+1)
		copy(c.children, n.children)
	}
	return c
}

func (t *btree[T]) mutableChild(n *btreeNode[T], i int) *btreeNode[T] {
	c := t.mutable(n.children[i])
	n.children[i] = c
	return c
}

// find returns the index of the first item of n not less than item, and
// whether that item equals it.
func (t *btree[T]) find(n *btreeNode[T], item T) (int, bool) {
	lo, hi := 0, len(n.items)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if t.cmp(n.items[m], item) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < len(n.items) && t.cmp(n.items[lo], item) == 0
}

// Get returns the stored item equal to item.
func (t *btree[T]) Get(item T) (T, bool) {
	n := t.root
	for n != nil {
		i, found := t.find(n, item)
		if found {
			return n.items[i], true
		}
		if n.leaf() {
			break
		}
		n = n.children[i]
	}
	var zero T
	return zero, false
}

// Min returns the smallest item.
func (t *btree[T]) Min() (T, bool) {
	var zero T
	n := t.root
	if n == nil {
		return zero, false
	}
	for !n.leaf() {
		n = n.children[0]
	}
	return n.items[0], true
}

// Set inserts item, or replaces the equal item, and returns the replaced one.
func (t *btree[T]) Set(item T) (old T, replaced bool) {
	t.beginWrite()
	if t.root == nil {
		t.root = t.newNode()
		t.root.items = append(t.root.items, item)
		t.length++
		return old, false
	}
	t.root = t.mutable(t.root)
	if len(t.root.items) >= btreeMaxItems {
		mid, right := t.split(t.root, btreeMaxItems/2)
		root := t.newNode()
		root.items = append(root.items, mid)
		root.children = make([]*btreeNode[T], 0, btreeMaxItems+1)
		root.children = append(root.children, t.root, right)
		t.root = root
	}
	old, replaced = t.insert(t.root, item)
	if !replaced {
		t.length++
	}
	return old, replaced
}

// split moves the items after i (and their children) of the full node n into
// a new node, removes item i from n and returns it with the new node.
func (t *btree[T]) split(n *btreeNode[T], i int) (T, *btreeNode[T]) {
	mid := n.items[i]
	right := t.newNode()
	right.items = append(right.items, n.items[i+1:]...)
	clear(n.items[i:])
	n.items = n.items[:i]
	if !n.leaf() {
		right.children = make([]*btreeNode[T], 0, btreeMaxItems+1)
		right.children = append(right.children, n.children[i+1:]...)
		clear(n.children[i+1:])
		n.children = n.children[:i+1]
	}
	return mid, right
}

// insert adds item below the mutable, non-full node n.
func (t *btree[T]) insert(n *btreeNode[T], item T) (old T, replaced bool) {
	i, found := t.find(n, item)
	if found {
		old, n.items[i] = n.items[i], item
		return old, true
	}
	if n.leaf() {
		n.items = insertAt(n.items, i, item)
		return old, false
	}
	if len(n.children[i].items) >= btreeMaxItems {
		child := t.mutableChild(n, i)
		mid, right := t.split(child, btreeMaxItems/2)
		n.items = insertAt(n.items, i, mid)
		n.children = insertAt(n.children, i+1, right)
		switch c := t.cmp(item, mid); {
		case c > 0:
			i++
		case c == 0:
			old, n.items[i] = n.items[i], item
			return old, true
		}
	}
	return t.insert(t.mutableChild(n, i), item)
}

// Delete removes the item equal to item and returns it.
func (t *btree[T]) Delete(item T) (T, bool) {
	var zero T
	if t.root == nil {
		return zero, false
	}
	if _, ok := t.Get(item); !ok {
		return zero, false // don't copy a shared path for nothing
	}
	t.beginWrite()
	t.root = t.mutable(t.root)
	old, ok := t.remove(t.root, item, false)
	if len(t.root.items) == 0 {
		if t.root.leaf() {
			t.root = nil
		} else {
			t.root = t.root.children[0]
		}
	}
	if ok {
		t.length--
	}
	return old, ok
}

// remove deletes item (or, if max, the largest item) from the subtree of the
// mutable node n. Before descending it makes sure the child has more than the
// minimum number of items, so the removal never underflows it.
func (t *btree[T]) remove(n *btreeNode[T], item T, max bool) (T, bool) {
	var i int
	var found bool
	if max {
		i = len(n.items)
		if n.leaf() {
			last := n.items[i-1]
			n.items = removeAt(n.items, i-1)
			return last, true
		}
	} else {
		i, found = t.find(n, item)
		if n.leaf() {
			if !found {
				var zero T
				return zero, false
			}
			out := n.items[i]
			n.items = removeAt(n.items, i)
			return out, true
		}
	}
	if len(n.children[i].items) <= btreeMinItems {
		t.grow(n, i)
		return t.remove(n, item, max)
	}
	child := t.mutableChild(n, i)
	if found {
		// Replace the item by its predecessor, the largest item of the
		// left child, which has items to spare.
		out := n.items[i]
		n.items[i], _ = t.remove(child, item, true)
		return out, true
	}
	return t.remove(child, item, max)
}

// grow gives child i of n more than the minimum number of items, by stealing
// from a sibling or merging with one.
func (t *btree[T]) grow(n *btreeNode[T], i int) {
	switch {
	case i > 0 && len(n.children[i-1].items) > btreeMinItems:
		child := t.mutableChild(n, i)
		left := t.mutableChild(n, i-1)
		stolen := left.items[len(left.items)-1]
		left.items = removeAt(left.items, len(left.items)-1)
		child.items = insertAt(child.items, 0, n.items[i-1])
		n.items[i-1] = stolen
		if !left.leaf() {
			last := left.children[len(left.children)-1]
			left.children = removeAt(left.children, len(left.children)-1)
			child.children = insertAt(child.children, 0, last)
		}
	case i < len(n.items) && len(n.children[i+1].items) > btreeMinItems:
		child := t.mutableChild(n, i)
		right := t.mutableChild(n, i+1)
		stolen := right.items[0]
		right.items = removeAt(right.items, 0)
		child.items = append(child.items, n.items[i])
		n.items[i] = stolen
		if !right.leaf() {
			first := right.children[0]
			right.children = removeAt(right.children, 0)
			child.children = append(child.children, first)
		}
	default:
		if i >= len(n.items) {
			i--
		}
		child := t.mutableChild(n, i)
		right := n.children[i+1] // read only: it is dropped
		child.items = append(child.items, n.items[i])
		child.items = append(child.items, right.items...)
		child.children = append(child.children, right.children...)
		n.items = removeAt(n.items, i)
		n.children = removeAt(n.children, i+1)
	}
}

// insertAt inserts v at index i of s, in place when s has room.
func insertAt[S ~[]E, E any](s S, i int, v E) S {
	var zero E
	s = append(s, zero)
	copy(s[i+1:], s[i:])
	s[i] = v
	return s
}

// removeAt removes index i of s in place and clears the freed slot.
func removeAt[S ~[]E, E any](s S, i int) S {
	copy(s[i:], s[i+1:])
	var zero E
	s[len(s)-1] = zero
	return s[:len(s)-1]
}

// btreeCursor walks a snapshot root in ascending order. It never writes to
// the nodes it reads, and needs no lock.
type btreeCursor[T any] struct {
	cmp   func(a, b T) int
	root  *btreeNode[T]
	stack []btreeFrame[T]
}

// btreeFrame is a node on the cursor's path and the index of the next item of
// that node to yield (the child before it having been walked or skipped).
type btreeFrame[T any] struct {
	n *btreeNode[T]
	i int
}

func newBtreeCursor[T any](cmp func(a, b T) int, root *btreeNode[T]) *btreeCursor[T] {
	c := &btreeCursor[T]{cmp: cmp, root: root}
	c.first()
	return c
}

// first positions the cursor before the smallest item.
func (c *btreeCursor[T]) first() {
	c.stack = c.stack[:0]
	if c.root != nil {
		c.pushLeft(c.root)
	}
}

func (c *btreeCursor[T]) pushLeft(n *btreeNode[T]) {
	for {
		c.stack = append(c.stack, btreeFrame[T]{n: n})
		if n.leaf() {
			return
		}
		n = n.children[0]
	}
}

// Seek positions the cursor before the first item not less than pivot.
func (c *btreeCursor[T]) Seek(pivot T) {
	c.stack = c.stack[:0]
	n := c.root
	for n != nil {
		lo, hi := 0, len(n.items)
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if c.cmp(n.items[m], pivot) < 0 {
				lo = m + 1
			} else {
				hi = m
			}
		}
		c.stack = append(c.stack, btreeFrame[T]{n: n, i: lo})
		if n.leaf() || (lo < len(n.items) && c.cmp(n.items[lo], pivot) == 0) {
			return
		}
		n = n.children[lo]
	}
}

// Next returns the next item in ascending order.
func (c *btreeCursor[T]) Next() (T, bool) {
	for len(c.stack) > 0 {
		top := &c.stack[len(c.stack)-1]
		if top.i < len(top.n.items) {
			item := top.n.items[top.i]
			top.i++
			if !top.n.leaf() {
				c.pushLeft(top.n.children[top.i])
			}
			return item, true
		}
		c.stack = c.stack[:len(c.stack)-1]
	}
	var zero T
	return zero, false
}

// Close drops the cursor's references to the snapshot.
func (c *btreeCursor[T]) Close() {
	c.root = nil
	c.stack = nil
}

// snapshotIter holds what the in-memory iterators share: a cursor over a
// snapshot, the current item and the end state. An iterator's Next calls
// begin, reads the cursor, and ends with yield.
type snapshotIter[T any] struct {
	closed *atomic.Bool // the store's
	cur    *btreeCursor[T]
	item   T
	valid  bool // positioned on item
	done   bool
	err    error
}

// begin clears the current item and reports whether the iteration may go on.
// It ends the iteration with ErrClosed after Close or once the store is
// closed.
func (it *snapshotIter[T]) begin() bool {
	var zero T
	it.item, it.valid = zero, false
	if it.done {
		return false
	}
	if it.cur == nil || it.closed.Load() {
		it.end(ErrClosed)
		return false
	}
	return true
}

// yield makes item current if ok, and ends the iteration otherwise.
func (it *snapshotIter[T]) yield(item T, ok bool) bool {
	if !ok {
		it.end(nil)
		return false
	}
	it.item, it.valid = item, true
	return true
}

func (it *snapshotIter[T]) end(err error) {
	it.done, it.err = true, err
	if it.cur != nil {
		it.cur.Close()
	}
}

// Err returns the error that ended the iteration, if any.
func (it *snapshotIter[T]) Err() error { return it.err }

// Close releases the snapshot. It is idempotent; Next after Close returns
// false and Err then returns ErrClosed, unless the iteration had ended.
func (it *snapshotIter[T]) Close() error {
	if it.cur != nil {
		it.cur.Close()
		it.cur = nil
	}
	var zero T
	it.item, it.valid = zero, false
	return nil
}
