// Package kafkatest runs integration tests against Kafka: always on an
// in-process kfake broker (package embedded), and again on a real cluster
// when the KAFKA_BROKERS environment variable names one (comma-separated
// host:port list), so that `go test ./...` needs no broker and CI checks
// both.
//
// Its helpers talk to Kafka through franz-go's kgo, not through weir's
// sarama adapter, so that a verifier does not share the bugs of the code
// it verifies. What programs share with them (the broker's options, reads,
// end offsets) is in internal/kafkaverify, which does not import testing:
// this package is for tests only.
//
// # Usage
//
//	func TestSomething(t *testing.T) {
//		kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
//			topic := kafkatest.Topic(t)
//			kafkatest.CreateTopic(t, env, topic, 4)
//			kafkatest.Produce(t, env, kafka.Record{Topic: topic, Partition: kafka.PartitionByKey, Key: k, Value: v})
//			got := kafkatest.ReadCommitted(t, env, topic)
//			...
//		})
//	}
//
// Faults are for kfake only: env.Cluster() is nil on a real cluster, and
// env.RequireKfake(t) skips a subtest there.
//
// The real cluster is shared by every test and every run: use [Topic] and
// [GroupID] for names.
package kafkatest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/embedded"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest/kfakehook"
	"github.com/weirstream/weir/internal/kafkaverify"
	"github.com/weirstream/weir/internal/third_party/kfake"
)

// EnvBrokers is the environment variable naming a real cluster.
const EnvBrokers = "KAFKA_BROKERS"

// EnvLong is the environment variable that runs the long tests (see
// [Long]) when set to anything but "" or "0". CI (.ci/run) sets it.
const EnvLong = "WEIR_LONG_TESTS"

// Timeout bounds every helper's work with the broker.
const Timeout = 30 * time.Second

// Env is the broker a subtest runs against.
type Env struct {
	// Name is "kfake" or "kafka", the subtest's name.
	Name string
	// Brokers are the bootstrap addresses.
	Brokers []string
	// ClientOpts are added to every client of the helpers that take an
	// Env: TLS and SASL for a secured cluster (kgo.DialTLSConfig,
	// kgo.SASL). None by default.
	ClientOpts []kgo.Opt

	broker *embedded.Broker // nil on a real cluster
}

// Config returns a weir client configuration for the environment.
func (e *Env) Config() kafka.Config {
	return kafka.Config{Brokers: e.Brokers, ClientID: "weir-test"}
}

// Cluster returns the kfake cluster for fault injection (Fault,
// ControlKey, SleepControl), or nil on a real cluster.
func (e *Env) Cluster() *kfake.Cluster {
	if e.broker == nil {
		return nil
	}
	return kfakehook.Cluster(e.broker)
}

// Close stops the in-process broker now rather than when the test ends
// (to restart one on the same DataDir, say). It does nothing on a real
// cluster and is idempotent.
func (e *Env) Close() {
	if e.broker != nil {
		_ = e.broker.Close()
	}
}

// IsKfake reports whether the environment is the in-process broker.
func (e *Env) IsKfake() bool { return e.broker != nil }

// RequireKfake skips the test on a real cluster.
func (e *Env) RequireKfake(t testing.TB) {
	t.Helper()
	if !e.IsKfake() {
		t.Skip("needs kfake fault injection")
	}
}

// KfakeOptions returns the options of the broker Run starts:
// kafkaverify.BrokerOptions, which the chaos suite's broker shares.
func KfakeOptions() embedded.Options { return kafkaverify.BrokerOptions() }

// Run runs fn as subtest "kfake" on a fresh in-process broker, and as
// subtest "kafka" on the cluster named by KAFKA_BROKERS when it is set.
func Run(t *testing.T, fn func(t *testing.T, env *Env)) {
	t.Helper()
	t.Run("kfake", func(t *testing.T) {
		fn(t, Kfake(t, KfakeOptions()))
	})
	if brokers := RealBrokers(); len(brokers) > 0 {
		t.Run("kafka", func(t *testing.T) {
			fn(t, &Env{Name: "kafka", Brokers: brokers})
		})
	}
}

// Kfake starts an in-process broker with opts for the test and closes it
// when the test ends.
func Kfake(t testing.TB, opts embedded.Options) *Env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	b, err := embedded.Start(ctx, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	return &Env{Name: "kfake", Brokers: b.Addrs(), broker: b}
}

// EnvSeed names the variable that replays a test's seeded choices: a test
// that draws which cases of a matrix it runs (Seed) logs its seed, and
// WEIR_TEST_SEED=<seed> draws the same ones again.
const EnvSeed = "WEIR_TEST_SEED"

// Seed returns the seed of t's random choices, WEIR_TEST_SEED or a new
// one each run, and logs it. Suites that grow past what CI's time allows
// draw their cases with it, so that every run covers every class of
// fault and, over runs, every combination.
func Seed(t testing.TB) uint64 {
	t.Helper()
	if v := os.Getenv(EnvSeed); v != "" {
		seed, err := strconv.ParseUint(v, 10, 64)
		require.NoError(t, err, "%s", EnvSeed)
		t.Logf("seed %d (from %s)", seed, EnvSeed)
		return seed
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d (%s=%d replays it)", seed, EnvSeed, seed)
	return seed
}

// Long skips t unless WEIR_LONG_TESTS is set. A long test waits out real
// time on purpose — an outage, a session or transaction timeout, a
// stalled member, minutes of churn — and takes ten seconds or more
// however fast the machine; behind Long, `go test ./...` stays a few
// minutes on a laptop. With WEIR_LONG_ROTATION set as well (CI sets it
// to its run's seed), a test of the [Rotation] runs only in its turn.
func Long(t testing.TB) {
	t.Helper()
	if v := os.Getenv(EnvLong); v == "" || v == "0" {
		t.Skipf("a long test: %s=1 runs it (CI does)", EnvLong)
	}
	skipOutOfTurn(t, rotation)
}

// RealBrokers returns the addresses in KAFKA_BROKERS, nil if unset.
func RealBrokers() []string {
	var out []string
	for b := range strings.SplitSeq(os.Getenv(EnvBrokers), ",") {
		if b = strings.TrimSpace(b); b != "" {
			out = append(out, b)
		}
	}
	return out
}

var unsafeName = regexp.MustCompile(`[^a-zA-Z0-9._-]+`)

// Topic returns a topic name unique to this test and run:
// "weir-<test name>-<random>", at most 200 characters.
func Topic(t testing.TB) string { return uniqueName(t, "weir") }

// GroupID returns a consumer group id unique to this test and run.
func GroupID(t testing.TB) string { return uniqueName(t, "weir-group") }

func uniqueName(t testing.TB, prefix string) string {
	name := strings.Trim(unsafeName.ReplaceAllString(t.Name(), "_"), "_")
	if len(name) > 150 {
		name = name[len(name)-150:]
	}
	suffix := make([]byte, 6)
	_, _ = rand.Read(suffix)
	return prefix + "-" + name + "-" + hex.EncodeToString(suffix)
}

// client returns a kgo client for env; the caller closes it (at once, not
// at the test's end: closing a client whose broker is gone takes a while).
func client(t testing.TB, env *Env, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kafkaverify.NewClient(env.Brokers, append(append([]kgo.Opt(nil), env.ClientOpts...), opts...)...)
	require.NoError(t, err)
	return cl
}

// ctx returns a context bounded by Timeout and by the test's end.
func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(t.Context(), Timeout)
	t.Cleanup(cancel)
	return c
}
