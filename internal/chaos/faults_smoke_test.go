package chaos_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/chaos"
	"github.com/weirstream/weir/internal/kafkatest"
)

// The network and disk faults in a small scenario on kfake (3,000
// records, exactly-once, micro-batch: its write-ahead log is damaged
// too): two of each, of kinds drawn from the seed; the verifier must find
// everything exact and no instance may exit by itself.
func TestSmokeNetAndDiskFaults(t *testing.T) {
	kafkatest.Long(t)
	env := kafkatest.Kfake(t, kafkatest.KfakeOptions())
	var log strings.Builder
	res := chaos.Run(t.Context(), chaos.Config{
		Name: "smoke-faults", Brokers: env.Brokers, Cluster: env.Cluster(),
		Exe: []string{os.Args[0], "-test.run=^$"}, WorkDir: t.TempDir(),
		Mode: "micro-batch", Guarantee: "exactly-once",
		Records: 3000, NetFaults: 2, DiskFaults: 2, Seed: kafkatest.Seed(t), Log: &log,
	})
	t.Log(log.String())
	require.Empty(t, res.Problems)
	require.True(t, res.Pass(), res.String())
	require.Equal(t, 2, res.NetFaults)
	require.Equal(t, 2, res.DiskFaults)
	require.Contains(t, log.String(), "network fault: ")
	require.Contains(t, log.String(), "disk fault: ")
}
