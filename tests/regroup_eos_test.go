package tests

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/internal/third_party/kfake"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
)

// Users move between regions and leave while two exactly-once instances
// count users per region through GroupTable, and an epoch's transaction
// fails: each move is a subtraction for one region and an addition for
// another, records of the repartition topic that may sit in different
// partitions and tasks. A failed transaction must take back both or
// neither, so a read_committed reader sees each region's count move by
// one step at a time and end at the number of users in it.
func TestExactlyOnceTableRegroupSurvivesFailedTransaction(t *testing.T) {
	env := kafkatest.Kfake(t, kafkatest.KfakeOptions())
	in, out := kafkatest.Topic(t), kafkatest.Topic(t)
	kafkatest.CreateTopic(t, env, in, 4)
	kafkatest.CreateTopic(t, env, out, 4)
	b := topology.NewBuilder()
	users := topology.NewTable(b, in, serde.String(), serde.String())
	topology.GroupTable(users, func(_, region string) (string, string, bool) { return region, region, true }).
		Count(topology.Materialized("users-per-region")).ToStream().To(out)
	topo, err := b.Build()
	require.NoError(t, err)

	appID := kafkatest.GroupID(t)
	var rewinds atomic.Int64
	opts := []weir.Option{
		weir.WithGuarantee(weir.ExactlyOnce),
		weir.WithErrorHandler(func(err error) {
			if errors.Is(err, tasks.ErrRewind) && errors.Is(err, sarama.KError(kerr.UnknownProducerID.Code)) {
				rewinds.Add(1)
			}
		}),
	}
	a := startInstance(t, topo, env, appID, opts...)
	c := startInstance(t, topo, env, appID, opts...)
	defer func() {
		require.NoError(t, a.stop(t))
		require.NoError(t, c.stop(t))
	}()

	where := map[string]string{} // user -> region, as the producer left it
	want := map[string]int64{}
	move := func(first, n int) {
		rng := rand.New(rand.NewPCG(uint64(first), 11))
		recs := make([]kafka.Record, n)
		for i := range recs {
			user := fmt.Sprintf("u%d", rng.IntN(40))
			r := kafka.Record{Topic: in, Partition: kafka.PartitionByKey, Key: []byte(user),
				Timestamp: time.UnixMilli(int64(1_000_000 + first + i))}
			if old, ok := where[user]; ok {
				want[old]--
			}
			if rng.IntN(8) == 0 {
				delete(where, user)
			} else {
				region := fmt.Sprintf("r%d", rng.IntN(5))
				where[user], r.Value = region, []byte(region)
				want[region]++
			}
			recs[i] = r
		}
		kafkatest.Produce(t, env, recs...)
	}

	move(0, 150)
	waitForCounts(t, env, out, want)
	h := env.Cluster().Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.EndTxn}, Err: kerr.UnknownProducerID, Count: 1})
	move(150, 150)
	require.Eventually(t, func() bool { return h.Hits() > 0 }, 30*time.Second, 20*time.Millisecond, "the fault never fired")
	h.Remove()
	move(300, 150)
	seen := waitForCounts(t, env, out, want)
	require.Positive(t, rewinds.Load(), "the failed transaction rewound the tasks")
	for region, counts := range seen {
		prev := int64(0)
		for i, n := range counts {
			require.Truef(t, n >= 0 && n-prev >= -1 && n-prev <= 1,
				"region %s: output %d is %d after %d (outputs %v): an update was lost or applied twice", region, i, n, prev, counts)
			prev = n
		}
	}
}
