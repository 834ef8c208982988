package badgerstore_test

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/weirstream/weir/statestore"
	"github.com/weirstream/weir/statestore/badgerstore"
)

// BenchmarkRestoreWrite writes a restore of 500,000 keys of 100-byte
// values, in changelog batches of 4,096, into an empty store partition:
// with Apply (the path of a restore from a checkpoint) and with
// ApplyFresh (from empty), the keys in order or shuffled (a changelog's
// keys come in the order they were written). Besides records/s (wall
// time, which a shared machine's load moves a lot) it reports the
// process's CPU per record, Badger's memtable flushes and compactions
// during the run included:
//
//	go test -run '^$' -bench RestoreWrite ./statestore/badgerstore/
func BenchmarkRestoreWrite(b *testing.B) {
	const n, batch = 500_000, 4096
	value := make([]byte, 100)
	for _, order := range []string{"sorted", "shuffled"} {
		keys := make([][]byte, n)
		for i := range n {
			keys[i] = fmt.Appendf(nil, "key-%07d", i)
		}
		if order == "shuffled" {
			rand.New(rand.NewPCG(1, 2)).Shuffle(n, func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		}
		for _, path := range []string{"Apply", "ApplyFresh"} {
			b.Run(order+"/"+path, func(b *testing.B) {
				var cpu time.Duration
				for range b.N {
					b.StopTimer()
					db, err := badgerstore.Open(b.TempDir(), badgerstore.Options{})
					if err != nil {
						b.Fatal(err)
					}
					part := badgerstore.StorePartition{Store: "s"}
					changes := make([]badgerstore.Change, 0, batch)
					b.StartTimer()
					before := processCPU()
					for i, k := range keys {
						changes = append(changes, badgerstore.Change{Store: "s", Kind: statestore.KindKeyValue, Key: k, Value: value})
						if len(changes) < batch && i < n-1 {
							continue
						}
						to := badgerstore.Position{Offset: int64(i + 1)}
						if path == "Apply" {
							err = db.Apply(changes, map[badgerstore.StorePartition]badgerstore.Position{part: to})
						} else {
							err = db.ApplyFresh(changes, part, to)
						}
						if err != nil {
							b.Fatal(err)
						}
						changes = changes[:0]
					}
					cpu += processCPU() - before
					b.StopTimer()
					if err := db.Close(); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "records/s")
				b.ReportMetric(float64(cpu.Nanoseconds())/1e3/float64(n*b.N), "cpu-µs/record")
			})
		}
	}
}

// processCPU is the process's user and system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(syscall.TimevalToNsec(ru.Utime) + syscall.TimevalToNsec(ru.Stime))
}
