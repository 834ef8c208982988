package kafka

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir/embedded"
	"github.com/weirstream/weir/internal/kafkatest/kfakehook"
)

// A broker that drops the metadata request of a starting member (it is
// down, or restarting) delays checkTopics instead of failing it: the next
// attempt, on a new connection, answers. Without the retry a member that
// starts while a broker of the cluster is down exits ("metadata of
// [...]: connection refused").
func TestCheckTopicsRetriesABrokerThatDoesNotAnswer(t *testing.T) {
	b, err := embedded.Start(t.Context(), embedded.Options{Topics: map[string]int32{"in": 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	client := checkTopicsClient(t, b.Addrs())

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

// A broker that does not know a topic yet — created a moment ago by this
// member's Prepare or by another member, and not yet in that broker's
// metadata — delays checkTopics instead of failing it. Without the retry
// a member of a three-broker cluster exits at start ("kafka: unknown
// topic: \"…-by-key-repartition\"").
func TestCheckTopicsWaitsForATopicTheBrokerDoesNotKnowYet(t *testing.T) {
	b, err := embedded.Start(t.Context(), embedded.Options{Topics: map[string]int32{"in": 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	client := checkTopicsClient(t, b.Addrs())

	var asked atomic.Int32
	c := kfakehook.Cluster(b)
	c.ControlKey(int16(kmsg.Metadata), func(req kmsg.Request) (kmsg.Response, error, bool) {
		if asked.Add(1) > 3 {
			c.DropControl()
			return nil, nil, false
		}
		c.KeepControl()
		return unknownTopics(req.(*kmsg.MetadataRequest)), nil, true
	})
	if err := checkTopics(t.Context(), client, []string{"in"}, nil); err != nil {
		t.Fatalf("checkTopics after three answers without the topic: %v", err)
	}
	if asked.Load() < 4 {
		t.Fatalf("%d metadata requests reached the broker, want the three without the topic and one more", asked.Load())
	}
}

// A topic no broker knows is still an error, once the wait is over.
func TestCheckTopicsNamesAMissingTopic(t *testing.T) {
	defer func(old time.Duration) { unknownTopicWait = old }(unknownTopicWait)
	unknownTopicWait = time.Second // the wait is the test's time; its length is not what it tests
	b, err := embedded.Start(t.Context(), embedded.Options{Topics: map[string]int32{"in": 2}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	client := checkTopicsClient(t, b.Addrs())
	err = checkTopics(t.Context(), client, []string{"in", "nope"}, nil)
	if !errors.Is(err, ErrUnknownTopic) || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("checkTopics of a missing topic: %v, want ErrUnknownTopic naming it", err)
	}
}

func checkTopicsClient(t *testing.T, brokers []string) sarama.Client {
	t.Helper()
	cfg := Config{Brokers: brokers}
	sc, err := cfg.saramaConfig()
	if err != nil {
		t.Fatal(err)
	}
	client, err := newClient(cfg.Brokers, sc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	return client
}

// unknownTopics answers a metadata request as a broker that knows none of
// its topics.
func unknownTopics(req *kmsg.MetadataRequest) *kmsg.MetadataResponse {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	resp.Version = req.Version
	for _, rt := range req.Topics {
		t := kmsg.NewMetadataResponseTopic()
		t.Topic = rt.Topic
		t.ErrorCode = kerr.UnknownTopicOrPartition.Code
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}
