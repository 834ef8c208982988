package microbatch_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/kafkatest"
)

// Several instances of one AvailableNow application end together with
// the word count's table complete: an instance that is done with its own
// partitions does not leave behind repartition records that another
// instance's last batch wrote to them.
func TestAvailableNowInstancesEndWithTheWholeTable(t *testing.T) {
	kafkatest.Run(t, func(t *testing.T, env *kafkatest.Env) {
		in, out := kafkatest.Topic(t), kafkatest.Topic(t)
		kafkatest.CreateTopic(t, env, in, 4)
		kafkatest.CreateTopic(t, env, out, 4)
		input := lines(2000)
		produce(t, env, in, input)
		appID := kafkatest.GroupID(t)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		done := make(chan error, 3)
		for range 3 {
			app := availableNowCount(t, env, in, out, appID, t.TempDir(), 100)
			go func() { done <- app.Run(ctx) }()
		}
		for range 3 {
			require.NoError(t, <-done)
		}
		require.Equal(t, wantCounts(t, in, input), finalTable(t, env, out))
	})
}
