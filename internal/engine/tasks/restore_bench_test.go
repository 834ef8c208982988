package tasks_test

import (
	"context"
	"fmt"
	"log/slog"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/engine/tasks/taskstest"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/processor"
)

// BenchmarkRestore restores a changelog of 200,000 keys with 100-byte
// values (one partition, on kfake) into a fresh Badger store, the path a
// task takes before it runs. Besides records/s (wall time, which a shared
// machine's load moves a lot) it reports the process's CPU per record,
// kfake's serving of the fetches included:
//
//	go test -run '^$' -bench Restore -cpuprofile cpu.out ./internal/engine/tasks
func BenchmarkRestore(b *testing.B) {
	const n = 200_000
	env := kafkatest.Kfake(b, kafkatest.KfakeOptions())
	in, out := kafkatest.Topic(b), kafkatest.Topic(b)
	kafkatest.CreateTopic(b, env, in, 1)
	kafkatest.CreateTopic(b, env, out, 1)
	topo, err := taskstest.Counting(in, out).Build()
	require.NoError(b, err)
	appID := kafkatest.GroupID(b)
	ctx := context.Background()
	changelog := processor.ChangelogTopic("counts").Resolve(appID)
	kafkatest.CreateTopic(b, env, changelog, 1, map[string]string{"cleanup.policy": "compact"})
	p, err := kafka.NewProducer(env.Config())
	require.NoError(b, err)
	value := make([]byte, 100)
	for i := range n {
		require.NoError(b, p.Send(ctx, kafka.Record{Topic: changelog, Partition: 0, Key: fmt.Appendf(nil, "key-%07d", i), Value: value}))
	}
	require.NoError(b, p.Flush(ctx))
	require.NoError(b, p.Close())

	var cpu time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		rt, err := tasks.New(tasks.Config{
			ApplicationID: appID, Graph: topo.Graph(), Kafka: env.Config(),
			Logger: slog.New(slog.DiscardHandler), Clock: time.Now, StateDir: b.TempDir(),
		})
		require.NoError(b, err)
		require.NoError(b, rt.Prepare(ctx))
		b.StartTimer()
		before := processCPU()
		task, err := rt.Tasks().Acquire(ctx, processor.TaskID{Subtopology: 0, Partition: 0}, 1)
		require.NoError(b, err)
		cpu += processCPU() - before
		b.StopTimer()
		require.GreaterOrEqual(b, rt.Stats().Restored.Load(), int64(n))
		rt.Tasks().Release(task)
		require.NoError(b, rt.Close())
		b.StartTimer()
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/1e3/float64(n*b.N), "cpu-µs/record")
}

// processCPU is the process's user and system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(syscall.TimevalToNsec(ru.Utime) + syscall.TimevalToNsec(ru.Stime))
}
