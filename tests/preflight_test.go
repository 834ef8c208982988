package tests

import (
	"context"
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

// A misconfigured topology stops Run at start, before it joins the group,
// within seconds, under both guarantees and in both modes, with an error
// naming the topic and what is wrong. Without the preflight a missing
// sink topic makes exactly-once abort every epoch forever and
// at-least-once fail after ~15 s with "circuit breaker is open".
func TestMisconfiguredTopologyFailsAtStart(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		for _, tc := range []struct {
			name  string
			setup func(t *testing.T, appID, in, out string)
			is    error
			want  func(appID, out string) string
		}{
			{
				name:  "missing sink",
				setup: func(t *testing.T, appID, in, out string) {},
				is:    tasks.ErrMissingTopic,
				want: func(_, out string) string {
					return `sink topic "` + out + `" does not exist (sub-topology 1 writes to it)`
				},
			},
			{
				name: "changelog with the wrong partition count",
				setup: func(t *testing.T, appID, in, out string) {
					createTopic(t, env, kafka.TopicSpec{Name: appID + "-counts-changelog", Partitions: 3, Config: map[string]string{"cleanup.policy": "compact"}})
				},
				is: tasks.ErrInternalTopic,
				want: func(appID, _ string) string {
					return `changelog topic "` + appID + `-counts-changelog" has 3 partitions; weir needs 2`
				},
			},
			{
				name: "changelog not compacted",
				setup: func(t *testing.T, appID, in, out string) {
					createTopic(t, env, kafka.TopicSpec{Name: appID + "-counts-changelog", Partitions: 2, Config: map[string]string{"cleanup.policy": "delete"}})
				},
				is: tasks.ErrInternalTopic,
				want: func(appID, _ string) string {
					return `changelog topic "` + appID + `-counts-changelog" has cleanup.policy=delete; a changelog must be compacted`
				},
			},
		} {
			t.Run(tc.name, func(t *testing.T) {
				for _, g := range []weir.Guarantee{weir.AtLeastOnce, weir.ExactlyOnce} {
					for _, mode := range []weir.Mode{weir.Continuous, weir.MicroBatch} {
						in, out := kafkatest.Topic(t), kafkatest.Topic(t)
						kafkatest.CreateTopic(t, env, in, 2)
						if tc.name != "missing sink" {
							kafkatest.CreateTopic(t, env, out, 2)
						}
						appID := kafkatest.GroupID(t)
						tc.setup(t, appID, in, out)
						app, err := weir.New(wordCountTopology(t, in, out), append(baseOptions(t, env, appID),
							weir.WithGuarantee(g), weir.WithMode(mode))...)
						require.NoError(t, err)
						ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
						start := time.Now()
						err = app.Run(ctx)
						cancel()
						took := time.Since(start)
						require.Error(t, err, "%s %s", mode, g)
						require.ErrorIs(t, err, tc.is, "%s %s", mode, g)
						require.True(t, strings.Contains(err.Error(), tc.want(appID, out)), "%s %s: %v", mode, g, err)
						require.Less(t, took, 10*time.Second, "%s %s", mode, g)
						require.Equal(t, weir.Failed, app.State().State, "%s %s", mode, g)
						require.ErrorIs(t, app.State().Err, tc.is, "%s %s", mode, g)
						t.Logf("%s %s: Run returned after %v: %v", mode, g, took.Round(time.Millisecond), err)
					}
				}
			})
		}
	})
}

// createTopic creates a topic with the given settings.
func createTopic(t *testing.T, env *kafkatest.Env, spec kafka.TopicSpec) {
	t.Helper()
	a, err := kafka.NewAdmin(env.Config())
	require.NoError(t, err)
	defer a.Close()
	require.NoError(t, a.EnsureTopics(t.Context(), []kafka.TopicSpec{spec}))
}

// App.Check runs the same preflight without running: every problem at
// once, nothing created.
func TestAppCheck(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		in, out := kafkatest.Topic(t), kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, in, 2)
		appID := kafkatest.GroupID(t)
		createTopic(t, env, kafka.TopicSpec{Name: appID + "-counts-changelog", Partitions: 2, Config: map[string]string{"cleanup.policy": "delete"}})
		app, err := weir.New(wordCountTopology(t, in, out), append(baseOptions(t, env, appID), weir.WithGuarantee(weir.ExactlyOnce))...)
		require.NoError(t, err)
		err = app.Check(t.Context())
		require.ErrorIs(t, err, weir.ErrMissingTopic)
		require.ErrorIs(t, err, weir.ErrInternalTopic)
		require.Len(t, strings.Split(err.Error(), "\n"), 2, err.Error())

		app, err = weir.New(wordCountTopology(t, in, out), append(baseOptions(t, env, appID+"-2"), weir.WithCreateSinkTopics(2, nil))...)
		require.NoError(t, err)
		require.NoError(t, app.Check(t.Context()))
		a, err := kafka.NewAdmin(env.Config())
		require.NoError(t, err)
		defer a.Close()
		facts, err := a.TopicFacts(t.Context(), []string{out, appID + "-2-counts-changelog"}, nil)
		require.NoError(t, err)
		require.False(t, facts[out].Exists(), "Check creates no topic")
		require.False(t, facts[appID+"-2-counts-changelog"].Exists(), "Check creates no topic")
	})
}

// WithCreateSinkTopics makes Run create a missing sink topic with the
// given partition count; New rejects a count below 1.
func TestCreateSinkTopics(t *testing.T) {
	_, err := weir.New(wordCountTopology(t, "in", "out"), weir.WithBrokers("localhost:9092"), weir.WithApplicationID("a"), weir.WithCreateSinkTopics(0, nil))
	require.ErrorIs(t, err, weir.ErrConfig)
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		in, out := kafkatest.Topic(t), kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, in, 2)
		kafkatest.DeleteTopicAtEnd(t, env, out)
		inst := startInstance(t, wordCountTopology(t, in, out), env, kafkatest.GroupID(t), weir.WithCreateSinkTopics(3, map[string]string{"retention.ms": "3600000"}))
		defer func() { require.NoError(t, inst.stop(t)) }()
		a, err := kafka.NewAdmin(env.Config())
		require.NoError(t, err)
		defer a.Close()
		require.Eventually(t, func() bool {
			facts, err := a.TopicFacts(t.Context(), []string{out}, nil)
			require.NoError(t, err)
			return facts[out].Partitions == 3
		}, 10*time.Second, 20*time.Millisecond, "%s never created with 3 partitions", out)
		want := map[string]int64{}
		produceLines(t, env, in, 0, 10, []string{"a", "b"}, want)
		waitForCounts(t, env, out, want)
	})
}

// A join whose sides have different partition counts stops Run at start
// under both guarantees, naming both topics and their counts.
func TestJoinNotCoPartitionedFailsAtStart(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		for _, g := range []weir.Guarantee{weir.AtLeastOnce, weir.ExactlyOnce} {
			orders, users, out := kafkatest.Topic(t), kafkatest.Topic(t), kafkatest.Topic(t)
			kafkatest.CreateTopic(t, env, orders, 2)
			kafkatest.CreateTopic(t, env, users, 3)
			kafkatest.CreateTopic(t, env, out, 2)
			b := topology.NewBuilder()
			o := topology.NewStream(b, orders, serde.String(), serde.String())
			u := topology.NewTable(b, users, serde.String(), serde.String(), topology.Materialized("users"))
			topology.Join(o, u, func(_, ov, uv string) string { return ov + uv }).To(out)
			topo, err := b.Build()
			require.NoError(t, err)
			app, err := weir.New(topo, append(baseOptions(t, env, kafkatest.GroupID(t)), weir.WithGuarantee(g))...)
			require.NoError(t, err)
			start := time.Now()
			err = app.Run(t.Context())
			require.ErrorIs(t, err, weir.ErrCoPartitioning, "%s", g)
			require.Less(t, time.Since(start), 10*time.Second)
			require.True(t, strings.Contains(err.Error(), `reads "`+orders+`" (2 partitions) and "`+users+`" (3 partitions)`), err.Error())
			t.Logf("%s: %v", g, err)
		}
	})
}
