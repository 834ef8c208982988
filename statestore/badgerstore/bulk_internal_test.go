package badgerstore

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// lastByKey keeps, of each key, the op that came last, in key order:
// against a map of the last op per key, for batches in order (the
// one-pass path), in order with a key repeated next to itself, and
// shuffled with repeats.
func TestLastByKey(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 45))
	for round := range 300 {
		n := 1 + rng.IntN(200)
		ops := make([]op, n)
		for i := range ops {
			k := i
			switch round % 3 {
			case 1: // in order, some keys twice in a row
				k = i - rng.IntN(2)
			case 2:
				k = rng.IntN(n/2 + 1)
			}
			ops[i] = op{key: fmt.Appendf(nil, "k%05d", k), value: fmt.Appendf(nil, "v%d", i), del: rng.IntN(6) == 0}
		}
		want := map[string]op{}
		for _, o := range ops {
			want[string(o.key)] = o
		}
		got := lastByKey(slices.Clone(ops))
		require.Len(t, got, len(want), "round %d", round)
		require.True(t, slices.IsSortedFunc(got, func(a, b op) int { return slices.Compare(a.key, b.key) }), "round %d", round)
		for _, o := range got {
			require.Equal(t, want[string(o.key)], o, "round %d key %s", round, o.key)
		}
	}
}
