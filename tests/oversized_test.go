package tests

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
)

// An output larger than any producer would deliver is a processing error
// of the input record that made it: under DeadLetter the input goes to
// the dead-letter topic, once, with the error named, and every other
// record's output is written — under exactly-once the transaction is not
// failed by it.
func TestOversizedOutputIsDeadLettered(t *testing.T) {
	for _, g := range []weir.Guarantee{weir.AtLeastOnce, weir.ExactlyOnce} {
		t.Run(g.String(), func(t *testing.T) {
			kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
				in, out := kafkatest.Topic(t), kafkatest.Topic(t)
				kafkatest.CreateTopic(t, env, in, 2)
				kafkatest.CreateTopic(t, env, out, 2)
				b := topology.NewBuilder()
				s := topology.NewStream(b, in, serde.String(), serde.String())
				topology.MapValues(s, func(v string) string {
					if v == "big" {
						return strings.Repeat("x", kafka.MaxRecordBytes)
					}
					return v
				}, topology.Named("inflate")).To(out)
				topo, err := b.Build()
				require.NoError(t, err)

				var recs []kafka.Record
				for i := range 20 {
					v := fmt.Sprint("v", i)
					if i == 7 {
						v = "big"
					}
					recs = append(recs, kafka.Record{Topic: in, Partition: int32(i % 2), Key: []byte(fmt.Sprint(i)), Value: []byte(v), Timestamp: time.UnixMilli(int64(1000 + i))})
				}
				kafkatest.Produce(t, env, recs...)
				inst := startInstance(t, topo, env, kafkatest.GroupID(t), weir.WithGuarantee(g), weir.WithBadRecordPolicy(weir.DeadLetter))
				require.Eventually(t, func() bool {
					// The dead-letter topic exists once the instance started.
					return len(kafkatest.ReadCommitted(t, env, out)) == 19 &&
						len(kafkatest.ReadCommitted(t, env, tasks.DeadLetterTopic(in))) > 0
				}, 60*time.Second, 100*time.Millisecond, "19 outputs and a dead letter")
				require.NoError(t, inst.stop(t))

				require.Len(t, kafkatest.ReadCommitted(t, env, out), 19)
				dlq := kafkatest.ReadCommitted(t, env, tasks.DeadLetterTopic(in))
				require.Len(t, dlq, 1)
				require.Equal(t, "7", string(dlq[0].Key))
				require.Equal(t, "big", string(dlq[0].Value))
				h := map[string]string{}
				for _, x := range dlq[0].Headers {
					h[x.Key] = string(x.Value)
				}
				require.Equal(t, "processing", h[tasks.HeaderErrorKind])
				require.Equal(t, "inflate", h[tasks.HeaderErrorNode])
				require.Contains(t, h[tasks.HeaderErrorMessage], kafka.ErrRecordTooLarge.Error())
				require.Equal(t, in, h[tasks.HeaderSourceTopic])
				require.Equal(t, "1", h[tasks.HeaderSourcePartiton])
				require.Equal(t, "3", h[tasks.HeaderSourceOffset])
				require.Equal(t, int64(1), inst.app.Stats().DeadLettered)
			})
		})
	}
}
