package tests

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
)

// deadLetterACLs are the ACLs WithBadRecordPolicy(DeadLetter) adds to
// requiredACLs (docs/security.md): Create and Write on each input's
// dead-letter topic "<input>-dlq". The dead-letter topics of the
// repartition topics are under the "<app>-" prefix, already granted.
func deadLetterACLs(inputs ...string) []aclEntry {
	var out []aclEntry
	for _, in := range inputs {
		for _, op := range []kmsg.ACLOperation{kmsg.ACLOperationCreate, kmsg.ACLOperationWrite} {
			out = append(out, aclEntry{kmsg.ACLResourceTypeTopic, tasks.DeadLetterTopic(in), false, op})
		}
	}
	return out
}

// poisonLines reads lines as strings, but refuses one containing "poison"
// (a deserialization error: a bad record).
type poisonLines struct{}

func (poisonLines) Serialize(_ string, v string) ([]byte, error) { return []byte(v), nil }

func (poisonLines) Deserialize(_ string, b []byte) (string, error) {
	if bytes.Contains(b, []byte("poison")) {
		return "", fmt.Errorf("%w: a poison line", serde.ErrDeserialize)
	}
	return string(b), nil
}

// poisonWordCount is word count whose input has bad records.
func poisonWordCount(t *testing.T, in, out string) *topology.Topology {
	t.Helper()
	b := topology.NewBuilder()
	lines := topology.NewStream(b, in, serde.String(), serde.Serde[string](poisonLines{}))
	topology.GroupBy(topology.FlatMapValues(lines, strings.Fields), func(_, w string) string { return w }, topology.Named("words")).
		Count(topology.Materialized("counts")).
		ToStream().To(out)
	topo, err := b.Build()
	require.NoError(t, err)
	return topo
}

// TestSecuredDeadLetter: under exactly the documented ACLs — the minimal
// set plus Create and Write on the input's dead-letter topic — the bad
// records of an exactly-once word count arrive on "<input>-dlq" and the
// good ones are counted; without Write, or without Create while the topic
// does not exist, Run stops at start naming the topic and the ACL.
func TestSecuredDeadLetter(t *testing.T) {
	s := secured(t)
	admin := s.admin()
	in, out := kafkatest.Topic(t), kafkatest.Topic(t)
	kafkatest.CreateTopic(t, admin, in, 4)
	kafkatest.CreateTopic(t, admin, out, 4)
	dlq := tasks.DeadLetterTopic(in)
	kafkatest.DeleteTopicAtEnd(t, admin, dlq)
	topo := poisonWordCount(t, in, out)
	secure := func(t *testing.T, acls []aclEntry) []weir.Option {
		user, pw := s.newSCRAMUser(t, true)
		s.grant(t, "User:"+user, acls)
		return []weir.Option{
			weir.WithTLS(s.tlsConfig()), weir.WithSASL("SCRAM-SHA-512", user, pw),
			weir.WithGuarantee(weir.ExactlyOnce), weir.WithBadRecordPolicy(weir.DeadLetter),
		}
	}
	const limit = 60 * time.Second

	t.Run("missing Create on the dead-letter topic", func(t *testing.T) {
		appID := "secured-" + randomSuffix()
		acls := append(requiredACLs(appID, true, []string{in}, []string{out}),
			aclEntry{kmsg.ACLResourceTypeTopic, dlq, false, kmsg.ACLOperationWrite})
		err := runUntilError(t, topo, s.saslBrokers, appID, limit, secure(t, acls)...)
		t.Logf("Run: %v", err)
		require.ErrorContains(t, err, "not authorized")
		require.ErrorContains(t, err, fmt.Sprintf("%q", dlq), "the error names the topic")
		require.ErrorContains(t, err, "an ACL granting Create", "the error names the operation")
	})
	t.Run("missing Write on the dead-letter topic", func(t *testing.T) {
		appID := "secured-" + randomSuffix()
		acls := append(requiredACLs(appID, true, []string{in}, []string{out}),
			aclEntry{kmsg.ACLResourceTypeTopic, dlq, false, kmsg.ACLOperationCreate})
		err := runUntilError(t, topo, s.saslBrokers, appID, limit, secure(t, acls)...)
		t.Logf("Run: %v", err)
		require.ErrorContains(t, err, "not authorized")
		require.ErrorContains(t, err, fmt.Sprintf("%q", dlq), "the error names the topic")
		require.ErrorContains(t, err, "an ACL granting Write", "the error names the operation")
	})
	t.Run("documented ACLs", func(t *testing.T) {
		appID := "secured-" + randomSuffix()
		acls := append(requiredACLs(appID, true, []string{in}, []string{out}), deadLetterACLs(in)...)
		want := map[string]int64{}
		produceLines(t, admin, in, 0, 100, []string{"alpha", "beta", "gamma"}, want)
		var poison []kafka.Record
		for i := range 5 {
			poison = append(poison, kafka.Record{
				Topic: in, Partition: int32(i % 4), Key: []byte(fmt.Sprint("p", i)),
				Value: []byte("alpha poison " + fmt.Sprint(i)), Timestamp: time.UnixMilli(int64(2_000_000 + i)),
			})
		}
		kafkatest.Produce(t, admin, poison...)
		inst := startInstance(t, topo, &kafkatest.Env{Name: "secured", Brokers: s.saslBrokers}, appID, secure(t, acls)...)
		seen := waitForCounts(t, admin, out, want)
		var got []kafka.Record
		require.Eventually(t, func() bool {
			got = kafkatest.ReadCommitted(t, admin, dlq)
			return len(got) >= len(poison)
		}, 60*time.Second, 200*time.Millisecond, "the poison lines reach %s", dlq)
		require.NoError(t, inst.stop(t))
		require.Len(t, got, len(poison))
		for _, r := range got {
			h := map[string]string{}
			for _, x := range r.Headers {
				h[x.Key] = string(x.Value)
			}
			require.Contains(t, string(r.Value), "poison")
			require.Equal(t, in, h[tasks.HeaderSourceTopic])
			require.Equal(t, "deserialization", h[tasks.HeaderErrorKind])
		}
		requireExact(t, want, seen)
	})
}
