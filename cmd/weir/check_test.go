package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
)

// wordCount is the word count: sub-topology 0 reads in and writes the
// repartition topic, sub-topology 1 counts into the "counts" store and
// writes out.
func wordCount(t *testing.T, in, out string) *topology.Topology {
	b := topology.NewBuilder()
	lines := topology.NewStream(b, in, serde.String(), serde.String())
	words := topology.FlatMapValues(lines, strings.Fields)
	topology.GroupBy(words, func(_, w string) string { return w }, topology.Named("words")).
		Count(topology.Materialized("counts")).ToStream().To(out)
	topo, err := b.Build()
	require.NoError(t, err)
	return topo
}

// `weir check` reports every problem of an application's topics at once,
// exit status 1; with the topics fixed it prints the plan, exit status 0.
func TestCheck(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		in, out := kafkatest.Topic(t), kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, in, 2)
		appID := kafkatest.GroupID(t)
		changelog := appID + "-counts-changelog"
		admin, err := kafka.NewAdmin(env.Config())
		require.NoError(t, err)
		defer admin.Close()
		require.NoError(t, admin.EnsureTopics(t.Context(), []kafka.TopicSpec{{Name: changelog, Partitions: 3, Config: map[string]string{"cleanup.policy": "delete"}}}))
		kafkatest.DeleteTopicAtEnd(t, env, changelog)

		js, err := weir.TopicRequirements(wordCount(t, in, out), appID)
		require.NoError(t, err)
		file := filepath.Join(t.TempDir(), "topics.json")
		require.NoError(t, os.WriteFile(file, js, 0o644))

		var stdout, stderr bytes.Buffer
		code := run(t.Context(), []string{"check", "--brokers", strings.Join(env.Brokers, ","), "--topology", file, "--exactly-once"}, &stdout, &stderr)
		t.Logf("weir check:\n%s%s", stdout.String(), stderr.String())
		require.Equal(t, 1, code)
		for _, want := range []string{
			"3 problem(s)",
			`sink topic "` + out + `" does not exist (sub-topology 1 writes to it)`,
			`changelog topic "` + changelog + `" has 3 partitions; weir needs 2`,
			`changelog topic "` + changelog + `" has cleanup.policy=delete; a changelog must be compacted`,
		} {
			require.Contains(t, stdout.String(), want)
		}

		// Another application of the same topology, with the sink there.
		kafkatest.CreateTopic(t, env, out, 2)
		js, err = weir.TopicRequirements(wordCount(t, in, out), appID+"-2")
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(file, js, 0o644))
		stdout.Reset()
		code = run(t.Context(), []string{"check", "--brokers", strings.Join(env.Brokers, ","), "--topology", file, "--exactly-once"}, &stdout, &stderr)
		t.Logf("weir check:\n%s", stdout.String())
		require.Equal(t, 0, code, stderr.String())
		require.Contains(t, stdout.String(), "ok: application")
		require.Contains(t, stdout.String(), "sub-topology 1: 2 partitions")
		require.Contains(t, stdout.String(), "Run creates "+appID+"-2-counts-changelog (2 partitions)")
		require.Contains(t, stdout.String(), "transactions: available")

		// Without a file: the topics named on the command line.
		stdout.Reset()
		code = run(t.Context(), []string{"check", "--brokers", strings.Join(env.Brokers, ","), "--application-id", appID,
			"--sources", in + "," + out, "--sinks", "nope-" + out, "--stores", "counts"}, &stdout, &stderr)
		t.Logf("weir check:\n%s", stdout.String())
		require.Equal(t, 1, code)
		require.Contains(t, stdout.String(), `sink topic "nope-`+out+`" does not exist`)
		require.Contains(t, stdout.String(), `has cleanup.policy=delete`)
	})
}

func TestCheckUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	for _, args := range [][]string{
		{"check"},
		{"check", "--brokers", "x:1"},
		{"check", "--brokers", "x:1", "--sources", "a"},
		{"check", "--brokers", "x:1", "--sources", "a", "--topology", "f", "--application-id", "a"},
		{"check", "--brokers", "x:1", "--sources", "a", "--application-id", "a", "--create-sinks", "-1"},
	} {
		require.Equal(t, 2, run(t.Context(), args, &out, &errOut), "%v", args)
	}
}
