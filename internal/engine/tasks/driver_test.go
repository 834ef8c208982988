package tasks_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
)

// scriptedMode is a mode whose loop returns loopErr at once and whose
// Finish returns finishErr; it records the calls.
type scriptedMode struct {
	loopErr, finishErr error
	calls              []string
}

func (m *scriptedMode) Claim(context.Context, kafka.Claim, *tasks.Task) error { return nil }
func (m *scriptedMode) Loop(context.Context) error {
	m.calls = append(m.calls, "loop")
	return m.loopErr
}
func (m *scriptedMode) Finish(context.Context) error {
	m.calls = append(m.calls, "finish")
	return m.finishErr
}

// The driver runs the mode's loop, then its Finish, and names the engine
// in the error it returns: the loop's before Finish's. A claim of a topic
// the topology does not read fails, and what the engine survives goes to
// OnError.
func TestDriverRunsTheMode(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		rt, _ := passThrough(t, env, tasks.Fail)
		drv := tasks.NewDriver(rt, tasks.DriverConfig{Name: "test", LogName: "test"})
		ctx := t.Context()

		loopErr, finishErr := errors.New("loop failed"), errors.New("finish failed")
		m := &scriptedMode{loopErr: loopErr, finishErr: finishErr}
		err := drv.Run(ctx, m)
		require.ErrorIs(t, err, loopErr)
		require.ErrorContains(t, err, "test: loop failed")
		require.Equal(t, []string{"loop", "finish"}, m.calls)

		m = &scriptedMode{finishErr: finishErr}
		require.ErrorIs(t, drv.Run(ctx, m), finishErr)
		require.NoError(t, drv.Run(ctx, &scriptedMode{}), "a loop that is done stops the run")

		// A driver that has not run: the runs above may have taken a
		// claim of the real topic before their loops returned, and that
		// claim's session and errors would be the ones seen below.
		var reported []error
		drv = tasks.NewDriver(rt, tasks.DriverConfig{Name: "test", LogName: "test",
			OnError: func(err error) { reported = append(reported, err) }})
		require.Nil(t, drv.Session())
		err = drv.Claim(ctx, otherClaim{}, &scriptedMode{})
		require.ErrorContains(t, err, `test: claimed topic "other" is not read by the topology`)
		require.NotNil(t, drv.Session(), "the newest claim's session")

		drv.Report(errors.New("survived"))
		require.Len(t, reported, 1)
	})
}

// passThrough returns a runtime of a topology that copies a new topic of
// one partition (returned) to another, closed when the test ends.
func passThrough(t *testing.T, env *kafkatest.Env, policy tasks.BadRecordPolicy) (*tasks.Runtime, string) {
	t.Helper()
	in, out := kafkatest.Topic(t), kafkatest.Topic(t)
	kafkatest.CreateTopic(t, env, in, 1)
	kafkatest.CreateTopic(t, env, out, 1)
	b := topology.NewBuilder()
	topology.NewStream(b, in, serde.String(), serde.String()).To(out)
	topo, err := b.Build()
	require.NoError(t, err)
	rt, err := tasks.New(tasks.Config{
		ApplicationID: kafkatest.GroupID(t), Graph: topo.Graph(), Kafka: env.Config(),
		Logger: slog.New(slog.DiscardHandler), BadRecords: policy, Clock: time.Now, StateDir: t.TempDir(),
	})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rt.Close()) })
	return rt, in
}

// otherClaim is a claim of a topic the topology does not read.
type otherClaim struct{ kafka.Claim }

func (otherClaim) Topic() string { return "other" }
