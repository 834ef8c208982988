package processor_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/statestore"
)

// globalDef is a global store whose Canon keeps the bytes as they are and
// refuses the value "bad".
func globalDef() processor.GlobalStore {
	return processor.GlobalStore{
		Spec:  statestore.Spec{Name: "g", Kind: statestore.KindKeyValue},
		Topic: "gt", Source: "src", Processor: "proc",
		Canon: func(_ string, k, v []byte) ([]byte, []byte, error) {
			if string(v) == "bad" {
				return nil, nil, errors.New("unreadable")
			}
			return k, v, nil
		},
	}
}

func TestApplyGlobal(t *testing.T) {
	def := globalDef()
	s, err := statestore.NewInMemoryFactory().Open(def.Spec, 0)
	require.NoError(t, err)
	kv := s.(statestore.KeyValueStore)
	rec := func(k, v []byte) processor.RawRecord {
		return processor.RawRecord{Topic: "gt", Partition: 1, Offset: 7, Key: k, Value: v, Timestamp: time.UnixMilli(1)}
	}
	for _, c := range []struct {
		name    string
		r       processor.RawRecord
		want    processor.GlobalUpdate
		wantErr bool
		value   string // of key "a" after; "" when absent
	}{
		{"put", rec([]byte("a"), []byte("1")), processor.GlobalPut, false, "1"},
		{"null key", rec(nil, []byte("2")), processor.GlobalDroppedNull, false, "1"},
		{"bad record", rec([]byte("a"), []byte("bad")), 0, true, "1"},
		{"bad timestamp", processor.RawRecord{Topic: "gt", Key: []byte("a"), Value: []byte("3")}, 0, true, "1"},
		{"update", rec([]byte("a"), []byte("4")), processor.GlobalPut, false, "4"},
		{"tombstone", rec([]byte("a"), nil), processor.GlobalDelete, false, ""},
	} {
		got, err := def.ApplyGlobal(kv, c.r)
		if c.wantErr {
			var re *processor.RecordError
			require.ErrorAs(t, err, &re, c.name)
			require.Equal(t, processor.DeserializationError, re.Kind, c.name)
		} else {
			require.NoError(t, err, c.name)
		}
		require.Equal(t, c.want, got, c.name)
		v, ok, err := kv.Get([]byte("a"))
		require.NoError(t, err)
		require.Equal(t, c.value != "", ok, c.name)
		require.Equal(t, c.value, string(v), c.name)
	}
}

// A task reads a global store it is given and cannot write it; a task
// whose node reads a global store it is not given does not start.
func TestTaskReadsGlobalStoreReadOnly(t *testing.T) {
	def := globalDef()
	var putErr error
	lookup := func() processor.Processor[any, any, any, any] {
		return processor.Adapt[string, string, string, string](processor.Func[string, string, string, string](
			func(ctx processor.Context[string, string], r processor.Record[string, string]) error {
				st, err := ctx.StateStore("g")
				if err != nil {
					return err
				}
				kv := st.(statestore.KeyValueStore)
				v, _, err := kv.Get([]byte(r.Value))
				if err != nil {
					return err
				}
				putErr = kv.Put([]byte("x"), []byte("y"))
				r.Value = string(v)
				return ctx.Forward(r)
			}))
	}
	decode := func(_ string, k, v []byte) (any, any, error) { return string(k), string(v), nil }
	encode := func(_ string, k, v any) ([]byte, []byte, error) { return []byte(k.(string)), []byte(v.(string)), nil }
	g := &processor.Graph{
		Subtopologies: []processor.Subtopology{{Nodes: []processor.Node{
			{Name: "in", Kind: processor.KindSource, Topics: []processor.TopicRef{{Name: "in"}}, Decode: decode, Children: []string{"lookup"}},
			{Name: "lookup", Kind: processor.KindProcessor, New: lookup, Stores: []string{"g"}, Children: []string{"out"}},
			{Name: "out", Kind: processor.KindSink, Topic: processor.TopicRef{Name: "out"}, Encode: encode},
		}}},
		Globals: []processor.GlobalStore{def},
	}
	require.NoError(t, g.Validate())
	s, err := statestore.NewInMemoryFactory().Open(def.Spec, 0)
	require.NoError(t, err)
	kv := s.(statestore.KeyValueStore)
	require.NoError(t, kv.Put([]byte("k"), []byte("V")))

	_, err = processor.NewTask(g, processor.TaskConfig{ApplicationID: "app", Emit: func(processor.Output) error { return nil }})
	require.ErrorContains(t, err, `reads global store "g"`)

	var out []processor.Output
	task, err := processor.NewTask(g, processor.TaskConfig{ApplicationID: "app",
		Emit:    func(o processor.Output) error { out = append(out, o); return nil },
		Globals: map[string]statestore.KeyValueStore{"g": kv}})
	require.NoError(t, err)
	require.NoError(t, task.Process(processor.RawRecord{Topic: "in", Key: []byte("1"), Value: []byte("k"), Timestamp: time.UnixMilli(1)}))
	require.Len(t, out, 1)
	require.Equal(t, "V", string(out[0].Value))
	require.ErrorIs(t, putErr, processor.ErrReadOnly)
	require.NoError(t, task.Close())
	_, ok, err := kv.Get([]byte("k"))
	require.NoError(t, err)
	require.True(t, ok, "closing the task leaves the global store open")
}

func TestValidateGlobals(t *testing.T) {
	def := globalDef()
	def.Canon = nil
	g := &processor.Graph{Globals: []processor.GlobalStore{def}}
	require.ErrorIs(t, g.Validate(), processor.ErrInvalidGraph)
}
