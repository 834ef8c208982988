package kfake_test

import (
	"fmt"
	"log"

	"github.com/weirstream/weir/internal/third_party/kfake"
)

// ExampleNewCluster starts an in-memory cluster of three brokers with one
// topic; weir's own code reaches kfake through package embedded.
func ExampleNewCluster() {
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(2, "events"))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	// Point any Kafka client at c.ListenAddrs().
	fmt.Println(len(c.ListenAddrs()), "brokers")
	// Output: 3 brokers
}
