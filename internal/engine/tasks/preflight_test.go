package tasks_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/kafka"
)

// The join topology with a re-keyed stream side: sub-topology 0 reads
// "orders" and writes the repartition topic, sub-topology 1 joins it with
// "users" (a table, its store logged to a changelog) and writes "out".
func joinRequirements(t *testing.T) tasks.Requirements {
	return tasks.RequirementsOf(joinTopology(t, true).Graph(), "app")
}

func TestRequirementsOfAJoin(t *testing.T) {
	req := joinRequirements(t)
	require.Equal(t, []string{"orders", "users"}, req.ExternalSources())
	sinks, writer := req.ExternalSinks()
	require.Equal(t, []string{"out"}, sinks)
	require.Equal(t, 1, writer["out"])
	var internal []string
	for _, it := range req.Internal {
		internal = append(internal, it.Name)
	}
	require.Len(t, internal, 2)
}

// Every problem of the preflight is reported at once, each naming its
// topic and what is wrong.
func TestCheckTopicsReportsEveryProblem(t *testing.T) {
	req := joinRequirements(t)
	var repartition, changelog string
	for _, it := range req.Internal {
		if it.Compacted {
			changelog = it.Name
		} else {
			repartition = it.Name
		}
	}
	good := func() map[string]kafka.TopicFacts {
		return map[string]kafka.TopicFacts{
			"orders": {Partitions: 4}, "users": {Partitions: 4}, "out": {Partitions: 1},
			repartition: {}, changelog: {},
		}
	}
	t.Run("all well", func(t *testing.T) {
		plan, create, err := tasks.CheckTopics(req, good(), tasks.PreflightOptions{})
		require.NoError(t, err)
		require.Equal(t, []int32{4, 4}, plan.Partitions)
		require.Len(t, create, 2)
		for _, spec := range create {
			require.Equal(t, int32(4), spec.Partitions, spec.Name)
		}
	})
	t.Run("existing internal topics that fit", func(t *testing.T) {
		f := good()
		f[repartition] = kafka.TopicFacts{Partitions: 4, CleanupPolicy: "delete"}
		f[changelog] = kafka.TopicFacts{Partitions: 4, CleanupPolicy: "compact,delete"}
		_, create, err := tasks.CheckTopics(req, f, tasks.PreflightOptions{})
		require.NoError(t, err)
		require.Empty(t, create)
	})
	t.Run("everything wrong", func(t *testing.T) {
		f := good()
		delete(f, "out")
		f["users"] = kafka.TopicFacts{Partitions: 3}
		f[changelog] = kafka.TopicFacts{Partitions: 4, CleanupPolicy: "delete"}
		f[repartition] = kafka.TopicFacts{Partitions: 2, CleanupPolicy: "compact"}
		_, _, err := tasks.CheckTopics(req, f, tasks.PreflightOptions{})
		require.ErrorIs(t, err, tasks.ErrMissingTopic)
		require.ErrorIs(t, err, tasks.ErrCoPartitioning)
		require.ErrorIs(t, err, tasks.ErrInternalTopic)
		for _, want := range []string{
			`sink topic "out" does not exist (sub-topology 1 writes to it)`,
			`sub-topology 1 reads "users" (3 partitions) and "` + repartition + `" (4 partitions)`,
			`changelog topic "` + changelog + `" has cleanup.policy=delete; a changelog must be compacted`,
			`repartition topic "` + repartition + `" has 2 partitions; weir needs 4 (the partition count of sub-topology 0, which writes it)`,
			`repartition topic "` + repartition + `" has cleanup.policy=compact; it must be delete`,
		} {
			require.True(t, strings.Contains(err.Error(), want), "missing %q in:\n%v", want, err)
		}
	})
	t.Run("a changelog with another partition count", func(t *testing.T) {
		f := good()
		f[changelog] = kafka.TopicFacts{Partitions: 2, CleanupPolicy: "compact"}
		_, _, err := tasks.CheckTopics(req, f, tasks.PreflightOptions{})
		require.ErrorIs(t, err, tasks.ErrInternalTopic)
		require.ErrorContains(t, err, `changelog topic "`+changelog+`" has 2 partitions; weir needs 4 (the partition count of sub-topology 1, which owns its store)`)
	})
	t.Run("topics the cluster refuses to describe", func(t *testing.T) {
		f := good()
		f["users"] = kafka.TopicFacts{Unauthorized: true}
		f["out"] = kafka.TopicFacts{Unauthorized: true}
		_, _, err := tasks.CheckTopics(req, f, tasks.PreflightOptions{})
		require.ErrorIs(t, err, tasks.ErrNotAuthorized)
		require.ErrorContains(t, err, `source topic "users": the cluster refuses to describe it (an ACL granting Read on it is needed)`)
		require.ErrorContains(t, err, `sink topic "out": the cluster refuses to describe it (an ACL granting Write on it is needed)`)
		require.NotErrorIs(t, err, tasks.ErrMissingTopic)
	})
	t.Run("missing sources", func(t *testing.T) {
		f := good()
		delete(f, "orders")
		delete(f, "users")
		_, _, err := tasks.CheckTopics(req, f, tasks.PreflightOptions{})
		require.ErrorIs(t, err, tasks.ErrMissingTopic)
		require.Equal(t, "runtime: topic does not exist: source topic \"orders\" does not exist\n"+
			"runtime: topic does not exist: source topic \"users\" does not exist", err.Error())
	})
	t.Run("sinks created on request", func(t *testing.T) {
		f := good()
		delete(f, "out")
		_, create, err := tasks.CheckTopics(req, f, tasks.PreflightOptions{
			CreateSinks: &tasks.SinkTopics{Partitions: 6, Config: map[string]string{"retention.ms": "1000"}},
		})
		require.NoError(t, err)
		require.Contains(t, create, kafka.TopicSpec{Name: "out", Partitions: 6, Config: map[string]string{"retention.ms": "1000"}})
	})
	t.Run("sinks not checked when they do not write to Kafka", func(t *testing.T) {
		f := good()
		delete(f, "out")
		_, _, err := tasks.CheckTopics(req, f, tasks.PreflightOptions{SkipSinks: true})
		require.NoError(t, err)
		all, _ := tasks.PreflightTopics(req, tasks.PreflightOptions{SkipSinks: true})
		require.NotContains(t, all, "out")
	})
	t.Run("dead-letter topics", func(t *testing.T) {
		f := good()
		f["orders-dlq"] = kafka.TopicFacts{Partitions: 1}
		_, create, err := tasks.CheckTopics(req, f, tasks.PreflightOptions{DeadLetter: true})
		require.ErrorIs(t, err, tasks.ErrInternalTopic)
		require.ErrorContains(t, err, `dead-letter topic "orders-dlq" has 1 partitions; weir needs 4`)
		require.Nil(t, create)
	})
}
