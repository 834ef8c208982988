package kafka

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir/embedded"
	"github.com/weirstream/weir/internal/kafkatest/kfakehook"
)

// A broker that drops the metadata request of a starting member (it is
// down, or restarting) delays checkTopics instead of failing it: the next
// attempt, on a new connection, answers. Without the retry a member that
// started while a broker of the cluster was down exited ("metadata of
// [...]: connection refused", found by the reliability suite's broker
// faults on a three-broker cluster).
func TestCheckTopicsRetriesABrokerThatDoesNotAnswer(t *testing.T) {
	b, err := embedded.Start(t.Context(), embedded.Options{Topics: map[string]int32{"in": 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cfg := Config{Brokers: b.Addrs()}
	sc, err := cfg.saramaConfig()
	if err != nil {
		t.Fatal(err)
	}
	client, err := newClient(cfg.Brokers, sc)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()

	var dropped atomic.Int32
	c := kfakehook.Cluster(b)
	c.ControlKey(int16(kmsg.Metadata), func(kmsg.Request) (kmsg.Response, error, bool) {
		if dropped.Add(1) > 2 {
			c.DropControl()
			return nil, nil, false
		}
		c.KeepControl()
		return nil, errors.New("test: connection dropped"), true
	})
	if err := checkTopics(t.Context(), client, []string{"in"}, nil); err != nil {
		t.Fatalf("checkTopics after two dropped metadata requests: %v", err)
	}
	if dropped.Load() < 3 {
		t.Fatalf("%d metadata requests reached the broker, want the two dropped and one more", dropped.Load())
	}
}
