package tests

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/kafkatest"
	"github.com/weirstream/weir/statestore"
)

// An epoch whose state writes do not fit in the staging limit is not bad
// input: it stops the application with an error naming the limit, and no
// record goes to the dead-letter topic.
func TestStagingLimitStopsTheApplication(t *testing.T) {
	env := kafkatest.Kfake(t, kafkatest.KfakeOptions())
	in, out := kafkatest.Topic(t), kafkatest.Topic(t)
	kafkatest.CreateTopic(t, env, in, 1)
	kafkatest.CreateTopic(t, env, out, 1)
	vocab := []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"}
	produceLines(t, env, in, 0, 200, vocab, map[string]int64{})

	app, err := weir.New(wordCountTopology(t, in, out), append(baseOptions(t, env, kafkatest.GroupID(t)),
		weir.WithStagingLimit(64), weir.WithEpochInterval(time.Hour),
		weir.WithBadRecordPolicy(weir.DeadLetter))...)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = app.Run(ctx)
	require.ErrorIs(t, err, statestore.ErrStagingFull)
	require.Zero(t, app.Stats().DeadLettered)
}
