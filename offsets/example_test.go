package offsets_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/weirstream/weir/offsets"
)

// A micro-batch run that crashes after planning batch 1, and the recovery
// that finds the pending plan after reopening the log.
func ExampleLog() {
	dir, err := os.MkdirTemp("", "weir-offsets-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	at := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

	wlog, err := offsets.Open(dir, offsets.Options{Retain: 10})
	if err != nil {
		panic(err)
	}
	wal, err := wlog.Namespace("wordcount")
	if err != nil {
		panic(err)
	}
	for batch := int64(0); batch < 2; batch++ {
		plan := offsets.Plan{
			Batch: batch,
			Ranges: []offsets.Range{
				{TopicPartition: offsets.TopicPartition{Topic: "text", Partition: 0}, Start: batch * 100, End: batch*100 + 100},
				{TopicPartition: offsets.TopicPartition{Topic: "text", Partition: 1}, Start: batch * 80, End: batch*80 + 80},
			},
			Timestamp: at.Add(time.Duration(batch) * time.Second),
			Trigger:   "ProcessingTime(1s)",
		}
		// 1. The plan is on disk before the batch runs.
		if err := wal.WritePlan(ctx, plan); err != nil {
			panic(err)
		}
		if batch == 1 {
			break // crash: batch 1 ran, or not, but never wrote its commit
		}
		// 2. Run the ranges, commit output and offsets to Kafka. 3. Then:
		if err := wal.WriteCommit(ctx, offsets.Commit{Batch: batch, Timestamp: plan.Timestamp.Add(300 * time.Millisecond)}); err != nil {
			panic(err)
		}
	}
	if err := wlog.Close(); err != nil {
		panic(err)
	}

	// Restart.
	wlog, err = offsets.Open(dir, offsets.Options{Retain: 10})
	if err != nil {
		panic(err)
	}
	defer wlog.Close()
	wal, err = wlog.Namespace("wordcount")
	if err != nil {
		panic(err)
	}
	if p, ok, err := wal.Pending(); err == nil && ok {
		fmt.Printf("pending batch %d at %s, %d offsets:\n", p.Batch, p.Timestamp.Format(time.TimeOnly), p.Records())
		for _, r := range p.Ranges {
			fmt.Println(" ", r)
		}
	}
	err = wal.Batches(ctx, func(p offsets.Plan, c *offsets.Commit) error {
		state := "pending"
		if c != nil {
			state = "committed in " + c.Timestamp.Sub(p.Timestamp).String()
		}
		fmt.Printf("batch %d: %s\n", p.Batch, state)
		return nil
	})
	if err != nil {
		panic(err)
	}
	// Output:
	// pending batch 1 at 12:00:01, 180 offsets:
	//   text-0[100,200)
	//   text-1[80,160)
	// batch 0: committed in 300ms
	// batch 1: pending
}
