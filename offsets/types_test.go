package offsets

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRange(t *testing.T) {
	r := rng("clicks", 3, 10, 25)
	require.Equal(t, int64(15), r.Len())
	require.Equal(t, "clicks-3[10,25)", r.String())
	require.Equal(t, "clicks-3", r.TopicPartition.String())
	require.Equal(t, "clicks-3@7", PartitionOffset{TopicPartition{"clicks", 3}, 7}.String())
	require.Zero(t, rng("a", 0, 5, 5).Len())
}

func TestTopicPartitionCompare(t *testing.T) {
	tps := []TopicPartition{{"b", 0}, {"a", 10}, {"a", 2}, {"ab", 0}}
	slices.SortFunc(tps, TopicPartition.Compare)
	require.Equal(t, []TopicPartition{{"a", 2}, {"a", 10}, {"ab", 0}, {"b", 0}}, tps)
	require.Zero(t, TopicPartition{"a", 1}.Compare(TopicPartition{"a", 1}))
}

func TestPlanLookups(t *testing.T) {
	p := plan(3)
	require.Equal(t, int64(10+7+0), p.Records())
	r, ok := p.Range(TopicPartition{"clicks", 1})
	require.True(t, ok)
	require.Equal(t, rng("clicks", 1, 21, 28), r)
	_, ok = p.Range(TopicPartition{"clicks", 2})
	require.False(t, ok)
	_, ok = Plan{}.Range(TopicPartition{"clicks", 0})
	require.False(t, ok)

	e := epoch(2)
	next, ok := e.Offset(TopicPartition{"clicks", 3})
	require.True(t, ok)
	require.Equal(t, int64(100), next)
	_, ok = e.Offset(TopicPartition{"views", 0})
	require.False(t, ok)
}

func TestValidate(t *testing.T) {
	require.NoError(t, plan(0).Validate())
	require.NoError(t, Plan{}.Validate(), "a plan with no ranges is valid")
	require.NoError(t, epoch(0).Validate())
	require.NoError(t, Commit{}.Validate())

	bad := map[string]Plan{
		"negative batch":     {Batch: -1},
		"end before start":   {Ranges: []Range{rng("a", 0, 5, 4)}},
		"negative start":     {Ranges: []Range{rng("a", 0, -1, 4)}},
		"negative partition": {Ranges: []Range{rng("a", -1, 0, 4)}},
		"empty topic":        {Ranges: []Range{rng("", 0, 0, 4)}},
		"unsorted":           {Ranges: []Range{rng("b", 0, 0, 1), rng("a", 0, 0, 1)}},
		"unsorted partition": {Ranges: []Range{rng("a", 2, 0, 1), rng("a", 1, 0, 1)}},
		"duplicate":          {Ranges: []Range{rng("a", 1, 0, 1), rng("a", 1, 1, 2)}},
	}
	for name, p := range bad {
		t.Run(name, func(t *testing.T) {
			err := p.Validate()
			require.ErrorIs(t, err, ErrInvalid)
			_, err = p.MarshalBinary()
			require.ErrorIs(t, err, ErrInvalid)
		})
	}

	require.ErrorIs(t, Commit{Batch: -2}.Validate(), ErrInvalid)
	badEpochs := []Epoch{
		{Epoch: -1},
		{Offsets: []PartitionOffset{{TopicPartition{"a", 0}, -1}}},
		{Offsets: []PartitionOffset{{TopicPartition{"", 0}, 1}}},
		{Offsets: []PartitionOffset{{TopicPartition{"a", 1}, 1}, {TopicPartition{"a", 1}, 2}}},
	}
	for _, e := range badEpochs {
		require.ErrorIs(t, e.Validate(), ErrInvalid, "%+v", e)
	}
}
