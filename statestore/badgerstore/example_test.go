package badgerstore_test

import (
	"fmt"
	"os"
	"time"

	"github.com/weirstream/weir/statestore"
	"github.com/weirstream/weir/statestore/badgerstore"
)

// Example runs one task's epochs the way an engine does: processors write a
// staging overlay, a committed epoch goes to Badger in one Apply with its
// changelog checkpoint, an aborted one is dropped.
func Example() {
	dir, err := os.MkdirTemp("", "weir-stores")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	db, err := badgerstore.Open(dir, badgerstore.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()

	const partition = 0
	store, err := db.Factory().Open(statestore.Spec{Name: "counts", Kind: statestore.KindKeyValue}, partition)
	if err != nil {
		fmt.Println(err)
		return
	}
	overlay, err := statestore.NewStagedKeyValue(store.(statestore.KeyValueStore), 1<<20)
	if err != nil {
		fmt.Println(err)
		return
	}

	// Epoch 1: the processor counts a word; the epoch commits.
	_ = overlay.Put([]byte("hello"), []byte("1"))
	staged, _ := overlay.Changes()
	var changes []badgerstore.Change
	for _, c := range staged {
		changes = append(changes, badgerstore.Change{Store: "counts", Partition: partition,
			Kind: statestore.KindKeyValue, Key: c.Key, Value: c.Value})
	}
	checkpoint := map[badgerstore.StorePartition]badgerstore.Position{{Store: "counts", Partition: partition}: {Offset: 1}}
	if err := db.Apply(changes, checkpoint); err != nil {
		fmt.Println(err)
		return
	}
	overlay.Reset()

	// Epoch 2: the processor reads its own write, then the epoch aborts.
	_ = overlay.Put([]byte("hello"), []byte("2"))
	v, _, _ := overlay.Get([]byte("hello"))
	committed, _, _ := overlay.Base().Get([]byte("hello"))
	fmt.Printf("epoch 2 sees %s, queries see %s\n", v, committed)
	overlay.Reset()

	v, _, _ = overlay.Get([]byte("hello"))
	pos, _, _ := db.Checkpoint("counts", partition)
	fmt.Printf("after the abort: %s, restore from changelog offset %d\n", v, pos.Offset)
	stats, _ := db.Stats()
	fmt.Printf("%s/%d: %d rows\n", stats[0].Store, stats[0].Partition, stats[0].Rows)
	// Output:
	// epoch 2 sees 2, queries see 1
	// after the abort: 1, restore from changelog offset 1
	// counts/0: 1 rows
}

// ExampleDB_Factory opens a window store and reads the windows of a key.
func ExampleDB_Factory() {
	dir, err := os.MkdirTemp("", "weir-stores")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	db, err := badgerstore.Open(dir, badgerstore.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()

	s, err := db.Factory().Open(statestore.Spec{Name: "clicks-per-minute", Kind: statestore.KindWindow}, 3)
	if err != nil {
		fmt.Println(err)
		return
	}
	w := s.(statestore.WindowStore)
	for _, minute := range []int64{2, 0, 1} {
		_ = w.Put([]byte("page-a"), time.UnixMilli(minute*60_000), fmt.Appendf(nil, "%d clicks", 10+minute))
	}
	it, err := w.Fetch([]byte("page-a"), time.UnixMilli(0), time.UnixMilli(60_000))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer it.Close()
	for it.Next() {
		fmt.Printf("%s at minute %d: %s\n", it.Key(), it.Window().UnixMilli()/60_000, it.Value())
	}
	// Output:
	// page-a at minute 0: 10 clicks
	// page-a at minute 1: 11 clicks
}
