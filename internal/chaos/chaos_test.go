package chaos_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/chaos"
	"github.com/weirstream/weir/internal/kafkatest"
)

// TestMain makes the test binary a chaos child when the harness
// re-executes it.
func TestMain(m *testing.M) {
	if chaos.IsChild() {
		if err := chaos.RunChild(); err != nil {
			fmt.Fprintln(os.Stderr, "chaos child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The harness itself, small: 3,000 records on kfake under exactly-once in
// the continuous mode, with one kill, one leave and join, and one broker
// fault. The verifier must find everything exact.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	kafkatest.Long(t) // child processes killed and restarted: CI runs it (WEIR_LONG_TESTS=1)
	env := kafkatest.Kfake(t, kafkatest.KfakeOptions())
	var log strings.Builder
	res := chaos.Run(t.Context(), chaos.Config{
		Name: "smoke", Brokers: env.Brokers, Cluster: env.Cluster(),
		Exe: []string{os.Args[0], "-test.run=^$"}, WorkDir: t.TempDir(),
		Mode: "continuous", Guarantee: "exactly-once",
		Records: 3000, Kills: 1, Rebalances: 2, Faults: 1, Seed: 1, Log: &log, Standbys: 1,
	})
	t.Log(log.String())
	require.Empty(t, res.Problems)
	require.True(t, res.Pass(), res.String())
	require.Equal(t, 1, res.Kills)
	require.Equal(t, 2, res.Rebalances)
	require.Positive(t, res.DLQ)
	require.True(t, strings.HasSuffix(res.String(), "result=PASS"), res.String())
}

// The smoke scenario with the PostgreSQL branches (pgsink.go), when
// WEIR_POSTGRES_DSN names a database: in both modes, the verifier checks
// the tables too.
func TestSmokePostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	if os.Getenv("WEIR_POSTGRES_DSN") == "" {
		t.Skip("WEIR_POSTGRES_DSN is not set (scripts/postgres/start.sh starts a server)")
	}
	t.Setenv(chaos.PostgresEnv, "1") // the children inherit it
	env := kafkatest.Kfake(t, kafkatest.KfakeOptions())
	for _, mode := range []string{"continuous", "micro-batch"} {
		t.Run(mode, func(t *testing.T) {
			var log strings.Builder
			res := chaos.Run(t.Context(), chaos.Config{
				Name: "smoke-pg", Brokers: env.Brokers, Cluster: env.Cluster(),
				Exe: []string{os.Args[0], "-test.run=^$"}, WorkDir: t.TempDir(),
				Mode: mode, Guarantee: "exactly-once",
				Records: 3000, Kills: 1, Rebalances: 2, Faults: 1, Seed: 1, Log: &log, Standbys: 1,
			})
			t.Log(log.String())
			require.Empty(t, res.Problems)
			require.True(t, res.Pass(), res.String())
		})
	}
}

// The input has the promised share of bad records, and the per-key
// sequence numbers count every record of the key.
func TestGenerate(t *testing.T) {
	in := chaos.Generate(3, 100_000)
	kinds := map[chaos.Kind]int{}
	seq := map[string]int64{}
	for i, r := range in {
		require.Equal(t, int64(i+1), r.ID)
		kinds[r.Kind]++
		seq[r.Key]++
		require.Equal(t, seq[r.Key], r.K)
		id, err := chaos.IDOf(r.Value())
		require.NoError(t, err)
		require.Equal(t, r.ID, id)
	}
	require.InDelta(t, 1000, kinds[chaos.Undeserializable], 150)
	require.InDelta(t, 100, kinds[chaos.ProcessorError], 40)
	require.InDelta(t, 100, kinds[chaos.Oversized], 40)
	require.Len(t, seq, chaos.Keys)
}

// Fold keeps the running aggregate and counts replays without folding
// them.
func TestFold(t *testing.T) {
	a := chaos.Fold(chaos.Agg{}, chaos.Txn{ID: 1, K: 1, Amount: 5})
	a = chaos.Fold(a, chaos.Txn{ID: 7, K: 3, Amount: -2})
	a = chaos.Fold(a, chaos.Txn{ID: 7, K: 3, Amount: -2})
	require.Equal(t, chaos.Agg{Count: 2, Sum: 3, Min: -2, Max: 5, LastK: 3, LastID: 7, Replays: 1}, a)
}

// Merge joins an earlier session's aggregate with a later one's as one
// fold, and counts a later one holding no newer input as replays.
func TestMerge(t *testing.T) {
	a := chaos.Fold(chaos.Agg{}, chaos.Txn{ID: 1, K: 1, Amount: 5})
	b := chaos.Fold(chaos.Agg{}, chaos.Txn{ID: 9, K: 2, Amount: -2})
	require.Equal(t, chaos.Fold(a, chaos.Txn{ID: 9, K: 2, Amount: -2}), chaos.Merge(a, b))
	require.Equal(t, a, chaos.Merge(chaos.Agg{}, a))
	require.Equal(t, chaos.Agg{Count: 2, Sum: 3, Min: -2, Max: 5, LastK: 2, LastID: 9, Replays: 1}, chaos.Merge(chaos.Merge(a, b), a))
	require.Equal(t, "acct-0001@[1767225600001,1767225600950)", chaos.SessionKey("acct-0001", 1, 950))
}

// WindowKey names the 10 s event-time window an input id falls in: inputs
// are stamped at the base time (a multiple of the window) plus id ms.
func TestWindowKey(t *testing.T) {
	require.Equal(t, "acct-0001@[1767225600000,1767225610000)", chaos.WindowKey("acct-0001", 1))
	require.Equal(t, "acct-0001@[1767225600000,1767225610000)", chaos.WindowKey("acct-0001", 9999))
	require.Equal(t, "acct-0001@[1767225610000,1767225620000)", chaos.WindowKey("acct-0001", 10000))
}

// A query scenario, small: two kills on kfake while the client asks, the
// instances static members as weir-chaos -queries runs them; every answer
// is checked, and both kinds of query are asked and mostly answered.
func TestQuerySmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	kafkatest.Long(t) // child processes killed and restarted: CI runs it (WEIR_LONG_TESTS=1)
	env := kafkatest.Kfake(t, kafkatest.KfakeOptions())
	var log strings.Builder
	res := chaos.Run(t.Context(), chaos.Config{
		Name: "query-smoke", Brokers: env.Brokers, Exe: []string{os.Args[0], "-test.run=^$"}, WorkDir: t.TempDir(),
		Mode: "continuous", Guarantee: "exactly-once", Records: 3000, Kills: 2, Seed: 1, Log: &log, Queries: true, Static: true, Standbys: 2,
	})
	t.Log(log.String())
	require.True(t, res.Pass(), "%s\n%s", res, strings.Join(res.Problems, "\n"))
	require.NotNil(t, res.Queries)
	t.Log(res.Queries)
	for _, q := range []chaos.QueryTally{res.Queries.OwnerOnly, res.Queries.Stale, res.Queries.Waiting} {
		require.Greater(t, q.Asked, 30)
		require.Zero(t, q.Inconsistent)
		require.Zero(t, q.UntrueCauses)
		require.Positive(t, q.Answered)
	}
	require.Positive(t, res.Queries.Stale.Roles["standby"], "maxLag queries are answered by standbys too")
}
