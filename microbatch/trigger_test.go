package microbatch_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/microbatch"
)

// The engine tells the triggers apart by comparing them and by Interval.
func TestTriggerIntervalAndComparison(t *testing.T) {
	require.Equal(t, time.Second, microbatch.ProcessingTime(time.Second).Interval())
	for _, tr := range []microbatch.Trigger{microbatch.Continuously(), microbatch.Once(), microbatch.AvailableNow(), {}} {
		require.Zero(t, tr.Interval(), tr.String())
	}
	require.Equal(t, microbatch.Continuously(), microbatch.Trigger{}, "the zero trigger is the default")
	once, again := microbatch.Once(), microbatch.Once()
	require.True(t, once == again, "two Once triggers are equal")
	require.False(t, once == microbatch.AvailableNow())
}
