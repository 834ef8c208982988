package topology_test

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/statestore"
	"github.com/weirstream/weir/topology"
)

// lastAgg is a session aggregate that folds each input once, by offset, as
// the reliability suite's does: an input at or below Last is a replay and
// changes nothing.
type lastAgg struct {
	Count int64 `json:"count"`
	Last  int64 `json:"last"`
}

// prefixSessions builds in → GroupByKey → AggregateSessions (gap 1 s) and
// returns the topology, with inputs' values their offsets.
func prefixSessions(t *testing.T) *topology.Topology {
	t.Helper()
	b := topology.NewBuilder()
	grouped := topology.NewStream(b, "in", serde.String(), serde.Int64()).GroupByKey()
	topology.AggregateSessions(topology.SessionWindowedBy(grouped, topology.SessionWindowsWithGap(time.Second).WithGrace(time.Hour)),
		func() lastAgg { return lastAgg{} },
		func(_ string, off int64, a lastAgg) lastAgg {
			if off <= a.Last && a.Count > 0 {
				return a // a replay
			}
			return lastAgg{Count: a.Count + 1, Last: off}
		},
		func(_ string, a, b lastAgg) lastAgg {
			if b.Count == 0 || b.Last <= a.Last {
				return a
			}
			return lastAgg{Count: a.Count + b.Count, Last: b.Last}
		},
		serde.JSON[lastAgg](), topology.Materialized("sessions")).ToStream().To("out")
	topo, err := b.Build()
	require.NoError(t, err)
	return topo
}

// prefixInput is one input: key, offset (its value too), timestamp in ms.
type prefixInput struct {
	key string
	off int64
	ts  int64
}

// A restore may find any prefix of an epoch's changelog records in a
// store partition's changelog: at-least-once, an owner stopped (a crash,
// a process stalled past its session timeout) in the middle of sending
// them, and its next owner restores what landed, then processes the
// epoch's inputs again from the committed offsets. Whatever the prefix,
// the session aggregates must come out as without the stop: a merge's
// tombstones of the old sessions landed without the merged session's put
// lost the key's aggregate, and the replay folded into an empty session
// (the reliability suite on kfake: "session output acct-0780@[…] is no
// session of good inputs", count 1).
//
// It failed before session stores' changelogs sent an epoch's puts before
// its deletes and the aggregation dropped a session another found one
// contains (a merged session's leftover, its tombstone not restored).
func TestSessionAggregateReplayOnAnyChangelogPrefix(t *testing.T) {
	topo := prefixSessions(t)
	specs := topo.Graph().Subtopologies[0].Stores
	epoch1 := []prefixInput{{"k", 0, 1000}, {"j", 1, 1100}, {"k", 2, 1500}}
	epoch2 := []prefixInput{{"k", 3, 2000}, {"j", 4, 2050}, {"k", 5, 2500}, {"j", 6, 9000}, {"k", 7, 2600}}

	// run processes inputs on a task over stores, then flushes its
	// changelog; it returns the changelog records by topic, in order.
	run := func(stores statestore.Factory, inputs []prefixInput) map[string][]processor.Output {
		changes := map[string][]processor.Output{}
		task, err := processor.NewTask(topo.Graph(), processor.TaskConfig{
			ApplicationID: "app", Stores: stores, CoalesceChangelog: true,
			Emit: func(o processor.Output) error {
				if o.Kind == processor.OutputChangelog {
					changes[o.Topic] = append(changes[o.Topic], o)
				}
				return nil
			},
		})
		require.NoError(t, err)
		for _, in := range inputs {
			require.NoError(t, task.Process(processor.RawRecord{Topic: "in", Offset: in.off, Key: []byte(in.key),
				Value: binary.BigEndian.AppendUint64(nil, uint64(in.off)), Timestamp: time.UnixMilli(in.ts)}))
		}
		require.NoError(t, task.FlushChangelog())
		require.NoError(t, task.Close())
		return changes
	}
	// sessions lists the sessions of key in the store.
	sessions := func(stores statestore.Factory, key string) []string {
		s, err := stores.Open(statestore.Spec{Name: "sessions", Kind: statestore.KindSession}, 0)
		require.NoError(t, err)
		it, err := s.(statestore.SessionStore).FindSessions([]byte(key), time.UnixMilli(0), time.UnixMilli(1<<40))
		require.NoError(t, err)
		defer it.Close()
		var out []string
		for it.Next() {
			out = append(out, fmt.Sprintf("[%d,%d]=%s", it.Start().UnixMilli(), it.End().UnixMilli(), it.Value()))
		}
		require.NoError(t, it.Err())
		return out
	}
	// restore applies the records to fresh stores.
	restore := func(records map[string][]processor.Output) statestore.Factory {
		stores := statestore.NewInMemoryFactory()
		for _, spec := range specs {
			s, err := stores.Open(spec, 0)
			require.NoError(t, err)
			for _, o := range records[processor.ChangelogTopic(spec.Name).Resolve("app")] {
				require.NoError(t, processor.Restore(s, o.Key, o.Value))
			}
		}
		return stores
	}

	whole := statestore.NewInMemoryFactory()
	first := run(whole, epoch1)
	second := run(whole, epoch2)
	want := map[string][]string{"k": sessions(whole, "k"), "j": sessions(whole, "j")}
	require.Equal(t, []string{`[1000,2600]={"count":5,"last":7}`}, want["k"])

	sessionsTopic := processor.ChangelogTopic("sessions").Resolve("app")
	for n := range len(second[sessionsTopic]) + 1 {
		for _, others := range []bool{false, true} { // the other stores' records of the epoch landed too, or not
			t.Run(fmt.Sprintf("prefix=%d/others=%v", n, others), func(t *testing.T) {
				landed := map[string][]processor.Output{}
				for topic, recs := range first {
					landed[topic] = append(landed[topic], recs...)
				}
				for topic, recs := range second {
					switch {
					case topic == sessionsTopic:
						landed[topic] = append(landed[topic], recs[:n]...)
					case others:
						landed[topic] = append(landed[topic], recs...)
					}
				}
				stores := restore(landed)
				run(stores, epoch2) // the replay from the committed offsets
				for key, w := range want {
					require.Equal(t, w, sessions(stores, key), "key %s", key)
				}
			})
		}
	}
}
