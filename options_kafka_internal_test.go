package weir

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/microbatch"
)

// The clients' linger: none (the producers' adaptive linger) in every
// mode and guarantee, and WithLinger's value wherever it is given.
func TestLingerDefaultsByMode(t *testing.T) {
	linger := func(opts ...Option) time.Duration {
		t.Helper()
		c := newConfig()
		for _, o := range opts {
			o(&c)
		}
		c.ensureDefaults()
		return c.kafkaConfig().Tuning.Linger
	}
	mb := WithMicroBatch(microbatch.Config{Trigger: microbatch.Continuously()})
	require.Zero(t, linger())
	require.Zero(t, linger(WithGuarantee(ExactlyOnce)))
	require.Zero(t, linger(mb))
	require.Zero(t, linger(mb, WithGuarantee(ExactlyOnce)))
	require.Equal(t, 2*time.Millisecond, linger(WithLinger(2*time.Millisecond)))
	require.Equal(t, 2*time.Millisecond, linger(mb, WithLinger(2*time.Millisecond)))
}
