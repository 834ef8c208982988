package kafkatest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A test of the rotation runs when the seed's turn is its own, and
// always when no seed is set; a test outside it runs whatever the seed.
func TestSkipOutOfTurn(t *testing.T) {
	for _, c := range []struct {
		seed string
		runs []string
	}{
		{seed: "", runs: []string{"a", "b", "c", "other"}},
		{seed: "6", runs: []string{"a", "other"}},           // turn 0
		{seed: "7", runs: []string{"b", "other"}},           // turn 1
		{seed: "20000000000", runs: []string{"c", "other"}}, // turn 2
	} {
		t.Run("seed="+c.seed, func(t *testing.T) {
			t.Setenv(EnvRotation, c.seed)
			var ran []string
			for _, name := range []string{"a", "b", "c", "other"} {
				t.Run(name, func(t *testing.T) {
					skipOutOfTurn(t, map[string]int{
						"TestSkipOutOfTurn/seed=" + c.seed + "/a": 0,
						"TestSkipOutOfTurn/seed=" + c.seed + "/b": 1,
						"TestSkipOutOfTurn/seed=" + c.seed + "/c": 2,
					})
					ran = append(ran, name)
				})
			}
			require.Equal(t, c.runs, ran)
		})
	}
}

// The rotation's turns are 0 to Turns-1, each with a test.
func TestRotationTurns(t *testing.T) {
	count := make([]int, Turns)
	for name, turn := range rotation {
		require.True(t, turn >= 0 && turn < Turns, "%s: turn %d", name, turn)
		count[turn]++
	}
	for turn, n := range count {
		require.Positive(t, n, "turn %d has no test", turn)
	}
}
