package kafka

import (
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/require"
)

// A JoinGroup may wait the whole rebalance timeout on the coordinator, so
// the group's client must not give up on the response before that (the
// Java consumer's rule: rebalance timeout + 5 s).
func TestGroupReadTimeoutOutlastsTheRebalanceTimeout(t *testing.T) {
	for _, rebalance := range []time.Duration{0, 10 * time.Second, 90 * time.Second} {
		g, err := NewGroup(GroupConfig{Config: Config{Brokers: []string{"x:1"}}, GroupID: "g", Topics: []string{"a"}, RebalanceTimeout: rebalance})
		require.NoError(t, err)
		sc, err := g.saramaConfig(sarama.NewBalanceStrategyRange())
		require.NoError(t, err)
		require.GreaterOrEqual(t, sc.Net.ReadTimeout, g.cfg.RebalanceTimeout+5*time.Second, "rebalance timeout %s", g.cfg.RebalanceTimeout)
		require.GreaterOrEqual(t, sc.Net.ReadTimeout, 30*time.Second, "never below sarama's default")
		// The group's requests go through the split client's
		// coordinator client: it must wait as long (it did not, and
		// JoinGroups still timed out after 30 s).
		csc, err := coordConfig(g.cfg.Config, sc)
		require.NoError(t, err)
		require.Equal(t, sc.Net.ReadTimeout, csc.Net.ReadTimeout, "rebalance timeout %s", g.cfg.RebalanceTimeout)
		require.Equal(t, sc.Consumer.Group.Rebalance.Timeout, csc.Consumer.Group.Rebalance.Timeout)
	}
}
