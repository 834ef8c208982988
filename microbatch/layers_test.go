package microbatch_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/kafkatest"
)

// A batch's state writes reach Badger behind its commit, while the next
// batch runs on top of them (state_apply_behind is timed), and what
// reaches Badger is right: a second AvailableNow run over more input,
// with the same state directory, starts from the first one's Badger
// state and checkpoints and ends with the reference's table.
func TestBatchStateReachesBadgerBehindItsCommit(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		in, out := kafkatest.Topic(t), kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, in, 2)
		kafkatest.CreateTopic(t, env, out, 2)
		input := lines(600)
		appID, dir := kafkatest.GroupID(t), t.TempDir()
		run := func() *weir.App {
			app := availableNowCount(t, env, in, out, appID, dir, 50)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			require.NoError(t, app.Run(ctx))
			return app
		}

		produce(t, env, in, input[:300])
		app := run()
		require.Positive(t, appliedBehind(t, app), "no batch's state was written behind its commit")
		require.Equal(t, wantCounts(t, in, input[:300]), finalTable(t, env, out))

		produce(t, env, in, input[300:])
		run()
		require.Equal(t, wantCounts(t, in, input), finalTable(t, env, out), "the second run's table")
	})
}

// appliedBehind returns how many layers app wrote into Badger behind a
// commit: weir_epoch_phase_seconds{phase="state_apply_behind"}'s count.
func appliedBehind(t *testing.T, app *weir.App) uint64 {
	t.Helper()
	families, err := app.Metrics().Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != "weir_epoch_phase_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "phase" && l.GetValue() == "state_apply_behind" {
					return m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return 0
}
