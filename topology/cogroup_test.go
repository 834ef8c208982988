package topology_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
	"github.com/weirstream/weir/topologytest"
)

// activity cogroups clicks (string values) and purchases (int64 amounts)
// per user into one summary string; windowed by w when w is not nil.
func activity(t *testing.T, w *topology.Windows) *topology.Topology {
	t.Helper()
	b := topology.NewBuilder()
	clicks := topology.NewStream(b, "clicks", serde.String(), serde.String())
	purchases := topology.NewStream(b, "purchases", serde.String(), serde.Int64())
	c := topology.Cogroup(clicks.GroupByKey(), func(_, page string, agg string) string {
		return agg + "click:" + page + " "
	})
	c = topology.CogroupWith(c, purchases.GroupByKey(), func(_ string, amount int64, agg string) string {
		return agg + fmt.Sprintf("buy:%d ", amount)
	})
	init := func() string { return "" }
	if w == nil {
		c.Aggregate(init, serde.String(), topology.Materialized("activity")).ToStream().To("out")
	} else {
		t := c.WindowedBy(*w).Aggregate(init, serde.String(), topology.Materialized("activity"))
		topology.SelectKey(t.ToStream(), func(k topology.Windowed[string], _ string) string { return k.String() }).To("out")
	}
	topo, err := b.Build()
	require.NoError(t, err)
	return topo
}

func TestCogroupFoldsValuesOfDifferentTypesIntoOneAggregate(t *testing.T) {
	d, err := topologytest.New(activity(t, nil), topologytest.Config{})
	require.NoError(t, err)
	defer d.Close()
	clicks := topologytest.Input(d, "clicks", serde.String(), serde.String())
	purchases := topologytest.Input(d, "purchases", serde.String(), serde.Int64())
	require.NoError(t, clicks.Pipe("ann", "home", ms(10)))
	require.NoError(t, purchases.Pipe("ann", 5, ms(12)))
	require.NoError(t, purchases.Pipe("bob", 7, ms(11)))
	require.NoError(t, clicks.Pipe("ann", "cart", ms(9)))
	got, err := topologytest.Output(d, "out", serde.String(), serde.String()).ReadRecords()
	require.NoError(t, err)
	want := []struct {
		key, value string
		ts         int64
	}{
		{"ann", "click:home ", 10}, {"ann", "click:home buy:5 ", 12},
		{"bob", "buy:7 ", 11}, {"ann", "click:home buy:5 click:cart ", 12},
	}
	require.Len(t, got, len(want))
	for i, w := range want {
		require.Equal(t, w.key, got[i].Key)
		require.Equal(t, w.value, got[i].Value)
		require.Equal(t, w.ts, got[i].Timestamp.UnixMilli(), "record %d is stamped with the key's largest timestamp", i)
	}
}

func TestCogroupBuildReportsEveryMistake(t *testing.T) {
	b := topology.NewBuilder()
	in := topology.NewStream(b, "in", serde.String(), serde.String())
	c := topology.Cogroup(in.GroupByKey(), func(_, v, agg string) string { return agg + v })
	c = topology.CogroupWith[string, string, string](c, in.GroupByKey(), nil)
	c.WindowedBy(topology.Windows{}).Aggregate(nil, nil, topology.EmitFinal())
	_, err := b.Build()
	require.ErrorIs(t, err, topology.ErrInvalidTopology)
	for _, msg := range []string{"nil adder", "nil initializer", "no serde for the aggregate", "EmitFinal is not supported", "windows not set"} {
		require.ErrorContains(t, err, msg)
	}
}

func TestCogroupWindowedResumesFromItsChangelog(t *testing.T) {
	w := topology.TumblingWindows(10 * time.Millisecond).WithGrace(100 * time.Millisecond)
	topo := activity(t, &w)
	d, err := topologytest.New(topo, topologytest.Config{ApplicationID: "app"})
	require.NoError(t, err)
	require.NoError(t, topologytest.Input(d, "clicks", serde.String(), serde.String()).Pipe("ann", "home", ms(1)))
	require.NoError(t, topologytest.Input(d, "purchases", serde.String(), serde.Int64()).Pipe("ann", 3, ms(2)))

	// A new task on stores rebuilt from the changelogs continues the window.
	d, err = d.Restart()
	require.NoError(t, err)
	defer d.Close()
	before := len(d.Topic("out"))
	require.NoError(t, topologytest.Input(d, "clicks", serde.String(), serde.String()).Pipe("ann", "away", ms(5)))
	require.Equal(t, []string{"ann@[0,10) click:home buy:3 click:away "}, sinkRecords(d.Topic("out")[before:]))
}

// sinkRecords returns the records written to "out" as "key value".
func sinkRecords(outs []processor.Output) []string {
	var got []string
	for _, o := range outs {
		if o.Kind == processor.OutputSink && o.Topic == "out" {
			got = append(got, string(o.Key)+" "+string(o.Value))
		}
	}
	return got
}
