package processor_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/statestore"
)

// With CoalesceChangelog a flush emits one record per changed key with its
// latest value, in first-change order; the sink outputs are unchanged, and
// replaying the flushed records rebuilds the store.
func TestTaskCoalescedChangelog(t *testing.T) {
	var out []processor.Output
	failEmit := false
	g := counterGraph()
	require.NoError(t, g.Validate())
	stores := statestore.NewInMemoryFactory()
	task, err := processor.NewTask(g, processor.TaskConfig{
		ApplicationID: "app", ID: processor.TaskID{Partition: 3}, Stores: stores, CoalesceChangelog: true,
		Emit: func(o processor.Output) error {
			if failEmit && o.Kind == processor.OutputChangelog {
				return errors.New("broker gone")
			}
			out = append(out, o)
			return nil
		},
	})
	require.NoError(t, err)
	process := func(off int64, k string) {
		require.NoError(t, task.Process(processor.RawRecord{Topic: "in", Partition: 3, Offset: off, Key: []byte(k), Timestamp: time.UnixMilli(off + 1)}))
	}
	for i, k := range []string{"b", "a", "b", "b", "a"} {
		process(int64(i), k)
	}
	kinds := func() (sinks, changes []string) {
		for _, o := range out {
			switch o.Kind {
			case processor.OutputSink:
				sinks = append(sinks, string(o.Value))
			case processor.OutputChangelog:
				require.Equal(t, "app-counts-changelog", o.Topic)
				require.Equal(t, int32(3), o.Partition)
				changes = append(changes, string(o.Key)+":"+string(o.Value))
			}
		}
		return
	}
	sinks, changes := kinds()
	require.Equal(t, []string{"b=1", "a=1", "b=2", "b=3", "a=2"}, sinks, "every update still goes downstream")
	require.Empty(t, changes, "nothing logged before the flush")

	require.NoError(t, task.FlushChangelog())
	_, changes = kinds()
	require.Equal(t, []string{"b:3", "a:2"}, changes)
	last := out[len(out)-1]
	require.Equal(t, time.UnixMilli(5), last.Timestamp, "a change carries the time of its latest write")

	// A failed flush keeps everything pending; the retry sends it.
	out = nil
	process(5, "c")
	failEmit = true
	require.Error(t, task.FlushChangelog())
	failEmit = false
	require.NoError(t, task.FlushChangelog())
	_, changes = kinds()
	require.Equal(t, []string{"c:1"}, changes)
	require.NoError(t, task.FlushChangelog())
	_, changes = kinds()
	require.Equal(t, []string{"c:1"}, changes, "a second flush has nothing left")

	// Discard drops what an abandoned epoch changed.
	out = nil
	process(6, "d")
	task.DiscardChangelog()
	require.NoError(t, task.FlushChangelog())
	_, changes = kinds()
	require.Empty(t, changes)
}
