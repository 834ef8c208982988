package processor_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/statestore"
)

// counterGraph is a one-sub-topology graph written by hand: source "in" →
// a processor counting records per key in the logged store "counts" and
// forwarding "key=count" → sink "out".
func counterGraph() *processor.Graph {
	decode := func(_ string, k, v []byte) (any, any, error) { return string(k), string(v), nil }
	encode := func(_ string, k, v any) ([]byte, []byte, error) {
		return []byte(k.(string)), []byte(v.(string)), nil
	}
	count := func() processor.Processor[any, any, any, any] {
		return processor.Adapt[string, string, string, string](processor.Func[string, string, string, string](
			func(ctx processor.Context[string, string], r processor.Record[string, string]) error {
				st, err := ctx.StateStore("counts")
				if err != nil {
					return err
				}
				kv := st.(statestore.KeyValueStore)
				old, _, err := kv.Get([]byte(r.Key))
				if err != nil {
					return err
				}
				n, _ := strconv.Atoi(string(old))
				n++
				if err := kv.Put([]byte(r.Key), []byte(strconv.Itoa(n))); err != nil {
					return err
				}
				r.Value = r.Key + "=" + strconv.Itoa(n)
				return ctx.Forward(r)
			}))
	}
	return &processor.Graph{Subtopologies: []processor.Subtopology{{
		Nodes: []processor.Node{
			{Name: "src", Kind: processor.KindSource, Topics: []processor.TopicRef{{Name: "in"}}, Decode: decode, Children: []string{"count"}},
			{Name: "count", Kind: processor.KindProcessor, New: count, Stores: []string{"counts"}, Children: []string{"sink"}},
			{Name: "sink", Kind: processor.KindSink, Topic: processor.TopicRef{Name: "out"}, Encode: encode},
		},
		Stores: []statestore.Spec{{Name: "counts", Kind: statestore.KindKeyValue, Logged: true}},
	}}}
}

func newTask(t *testing.T, g *processor.Graph, stores statestore.Factory, out *[]processor.Output) *processor.Task {
	t.Helper()
	require.NoError(t, g.Validate())
	task, err := processor.NewTask(g, processor.TaskConfig{
		ApplicationID: "app", ID: processor.TaskID{Partition: 3}, Stores: stores,
		Emit: func(o processor.Output) error { *out = append(*out, o); return nil },
	})
	require.NoError(t, err)
	return task
}

func TestTaskChangelogRestoresTheSameState(t *testing.T) {
	var out []processor.Output
	task := newTask(t, counterGraph(), statestore.NewInMemoryFactory(), &out)
	for i, k := range []string{"a", "b", "a", "a"} {
		require.NoError(t, task.Process(processor.RawRecord{Topic: "in", Partition: 3, Offset: int64(i), Key: []byte(k), Timestamp: time.UnixMilli(int64(i + 1))}))
	}
	var sinks, changes []processor.Output
	for _, o := range out {
		switch o.Kind {
		case processor.OutputSink:
			sinks = append(sinks, o)
		case processor.OutputChangelog:
			changes = append(changes, o)
		}
	}
	require.Len(t, sinks, 4)
	require.Equal(t, "a=3", string(sinks[3].Value))
	require.Len(t, changes, 4)
	for _, c := range changes {
		require.Equal(t, "app-counts-changelog", c.Topic)
		require.Equal(t, int32(3), c.Partition, "changelog records go to the task's partition")
	}

	// Replaying the changelog into a fresh store rebuilds the state, and a
	// task on it continues where the first left off.
	fresh := statestore.NewInMemoryFactory()
	st, err := fresh.Open(statestore.Spec{Name: "counts", Kind: statestore.KindKeyValue}, 3)
	require.NoError(t, err)
	for _, c := range changes {
		require.NoError(t, processor.Restore(st, c.Key, c.Value))
	}
	var out2 []processor.Output
	task2 := newTask(t, counterGraph(), fresh, &out2)
	require.NoError(t, task2.Process(processor.RawRecord{Topic: "in", Partition: 3, Offset: 4, Key: []byte("a"), Timestamp: time.UnixMilli(9)}))
	require.Equal(t, "a=4", string(out2[1].Value))
	require.NoError(t, task.Close())
	require.ErrorIs(t, task.Process(processor.RawRecord{Topic: "in", Timestamp: time.UnixMilli(1)}), processor.ErrTaskClosed)
}

func TestTaskRejectsUnknownTopic(t *testing.T) {
	var out []processor.Output
	task := newTask(t, counterGraph(), statestore.NewInMemoryFactory(), &out)
	err := task.Process(processor.RawRecord{Topic: "elsewhere", Timestamp: time.UnixMilli(1)})
	require.ErrorIs(t, err, processor.ErrUnknownTopic)
}

func TestGraphValidate(t *testing.T) {
	g := counterGraph()
	g.Subtopologies[0].Nodes[0].Children = []string{"nowhere"}
	g.Subtopologies[0].Nodes[1].Stores = []string{"missing"}
	err := g.Validate()
	require.ErrorIs(t, err, processor.ErrInvalidGraph)
	require.ErrorContains(t, err, `unknown child "nowhere"`)
	require.ErrorContains(t, err, `unknown store "missing"`)

	g = counterGraph()
	nodes := g.Subtopologies[0].Nodes
	nodes[0], nodes[1] = nodes[1], nodes[0]
	require.ErrorContains(t, g.Validate(), "is not after it")
}

func TestPunctuatorCancelAndCatchUp(t *testing.T) {
	var fired []int64
	var cancel processor.Cancellable
	g := &processor.Graph{Subtopologies: []processor.Subtopology{{Nodes: []processor.Node{
		{Name: "src", Kind: processor.KindSource, Topics: []processor.TopicRef{{Name: "in"}}, Children: []string{"p"},
			Decode: func(string, []byte, []byte) (any, any, error) { return nil, nil, nil }},
		{Name: "p", Kind: processor.KindProcessor, New: func() processor.Processor[any, any, any, any] {
			return processor.Func[any, any, any, any](func(ctx processor.Context[any, any], r processor.Record[any, any]) error {
				if cancel == nil {
					var err error
					cancel, err = ctx.Schedule(10*time.Millisecond, processor.WallClockTime, func(ts time.Time) error {
						fired = append(fired, ts.UnixMilli())
						return nil
					})
					return err
				}
				return nil
			})
		}},
	}}}}
	var out []processor.Output
	task := newTask(t, g, nil, &out)
	require.NoError(t, task.Process(processor.RawRecord{Topic: "in", Timestamp: time.UnixMilli(1)}))
	require.NoError(t, task.PunctuateWallClock(time.UnixMilli(5)))
	require.NoError(t, task.PunctuateWallClock(time.UnixMilli(10))) // due at 0+10
	require.NoError(t, task.PunctuateWallClock(time.UnixMilli(45))) // fell behind: fires once
	require.NoError(t, task.PunctuateWallClock(time.UnixMilli(50))) // next is 55
	require.NoError(t, task.PunctuateWallClock(time.UnixMilli(55)))
	cancel.Cancel()
	require.NoError(t, task.PunctuateWallClock(time.UnixMilli(100)))
	require.Equal(t, []int64{10, 45, 55}, fired)
}
