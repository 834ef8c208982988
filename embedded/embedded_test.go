package embedded_test

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/embedded"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/internal/kafkatest/kfakehook"
)

func TestStartDefaults(t *testing.T) {
	b, err := embedded.Start(t.Context(), embedded.Options{})
	require.NoError(t, err)
	defer b.Close()
	addrs := b.Addrs()
	require.Len(t, addrs, 1)
	host, port, err := net.SplitHostPort(addrs[0])
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1", host)
	require.NotEqual(t, "0", port)

	addrs[0] = "mutated"
	require.NotEqual(t, "mutated", b.Addrs()[0], "Addrs returns a copy")

	require.NotNil(t, kfakehook.Cluster(b), "tests reach kfake through the hook")
	require.Nil(t, kfakehook.Cluster("not a broker"))

	require.NoError(t, b.Close())
	require.NoError(t, b.Close(), "idempotent")
	_, err = net.DialTimeout("tcp", b.Addrs()[0], time.Second)
	require.Error(t, err, "closed broker refuses connections")
}

func TestSeedTopicsAndDefaultPartitions(t *testing.T) {
	env := kafkatest.Kfake(t, embedded.Options{Partitions: 3, Topics: map[string]int32{"orders": 0, "users": 5}})
	a, err := kafka.NewAdmin(env.Config())
	require.NoError(t, err)
	defer a.Close()
	counts, err := a.PartitionCounts(t.Context(), []string{"orders", "users"})
	require.NoError(t, err)
	require.Equal(t, map[string]int32{"orders": 3, "users": 5}, counts)
}

func TestDataDirSurvivesRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "kfake")
	opts := embedded.Options{DataDir: dir}

	env := kafkatest.Kfake(t, opts)
	kafkatest.CreateTopic(t, env, "kept", 2)
	kafkatest.Produce(t, env,
		kafka.Record{Topic: "kept", Partition: 0, Value: []byte("a")},
		kafka.Record{Topic: "kept", Partition: 1, Value: []byte("b")})
	env.Close() // now rather than when the test ends

	again := kafkatest.Kfake(t, opts)
	got := kafkatest.ReadCommitted(t, again, "kept")
	require.Len(t, got, 2)
	require.Equal(t, "a", string(got[0].Value))
	require.Equal(t, "b", string(got[1].Value))
}

func TestStartRejectsBadOptions(t *testing.T) {
	for name, opts := range map[string]embedded.Options{
		"addr without port":   {Addr: "127.0.0.1"},
		"negative partitions": {Partitions: -1},
		"negative timeout":    {GroupMinSessionTimeout: -time.Second},
		"empty topic":         {Topics: map[string]int32{"": 1}},
	} {
		_, err := embedded.Start(t.Context(), opts)
		require.ErrorIs(t, err, embedded.ErrOptions, name)
	}

	canceled, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := embedded.Start(canceled, embedded.Options{})
	require.ErrorIs(t, err, context.Canceled)

	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	_, err = embedded.Start(t.Context(), embedded.Options{Addr: taken.Addr().String()})
	require.Error(t, err, "address in use")
}

func ExampleStart() {
	b, err := embedded.Start(context.Background(), embedded.Options{
		Topics: map[string]int32{"events": 4},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()
	// Point any Kafka client at b.Addrs().
	fmt.Println(len(b.Addrs()), "broker")
	// Output: 1 broker
}
