package exactlyonce_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/weirstream/weir/embedded"
	"github.com/weirstream/weir/exactlyonce"
)

// Example runs one epoch against an in-process broker: records and input
// offsets commit together.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	broker, err := embedded.Start(ctx, embedded.Options{Topics: map[string]int32{"in": 1, "out": 1}})
	if err != nil {
		log.Fatal(err)
	}
	defer broker.Close()

	stateDir, err := os.MkdirTemp("", "weir-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(stateDir)
	instance, err := exactlyonce.LoadOrCreateInstanceID(stateDir)
	if err != nil {
		log.Fatal(err)
	}

	s, err := exactlyonce.New(ctx, exactlyonce.Config{
		Brokers:         broker.Addrs(),
		TransactionalID: "wordcount-" + instance,
		SessionTimeout:  45 * time.Second, // the group's; the transaction timeout stays below
	})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	if err := s.Begin(ctx); err != nil {
		log.Fatal(err)
	}
	err = s.Send(ctx, exactlyonce.Record{Topic: "out", Partition: exactlyonce.PartitionByKey, Key: []byte("hello"), Value: []byte("1")})
	if err != nil {
		log.Fatal(err)
	}
	offsets := map[exactlyonce.TopicPartition]int64{{Topic: "in", Partition: 0}: 1}
	// A consumer passes the live metadata of its group member; generation
	// -1 without a member skips the member check.
	gm := exactlyonce.GroupMetadata{GroupID: "wordcount", GenerationID: -1}
	switch err := s.Commit(ctx, offsets, gm); {
	case err == nil:
		fmt.Println("committed")
	case errors.Is(err, exactlyonce.ErrAbortable):
		fmt.Println("abort and redo:", s.Abort(ctx))
	default:
		fmt.Println("reset and recover:", err)
	}
	// Output: committed
}
