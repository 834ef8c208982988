package topology_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/statestore"
	"github.com/weirstream/weir/topology"
	"github.com/weirstream/weir/topologytest"
)

func TestVersionedBuildErrors(t *testing.T) {
	str := serde.String()
	type point struct{ X int }
	join := func(_, v, vt string) string { return v + vt }
	cases := []struct {
		name  string
		build func(b *topology.Builder)
		want  string // "" for no error
	}{
		{"versioned join", func(b *topology.Builder) {
			s := topology.NewStream(b, "s", str, str)
			t := topology.NewTable(b, "t", str, str, topology.Versioned(time.Second))
			topology.Join(s, t, join, topology.WithGrace(time.Second)).To("out")
		}, ""},
		{"grace on a table that is not versioned", func(b *topology.Builder) {
			s := topology.NewStream(b, "s", str, str)
			t := topology.NewTable(b, "t", str, str)
			topology.Join(s, t, join, topology.WithGrace(time.Second)).To("out")
		}, "a grace period needs a versioned table"},
		{"grace longer than the history", func(b *topology.Builder) {
			s := topology.NewStream(b, "s", str, str)
			t := topology.NewTable(b, "t", str, str, topology.Versioned(time.Second))
			topology.Join(s, t, join, topology.WithGrace(2*time.Second)).To("out")
		}, "longer than the history retention"},
		{"negative grace", func(b *topology.Builder) {
			s := topology.NewStream(b, "s", str, str)
			t := topology.NewTable(b, "t", str, str, topology.Versioned(time.Second))
			topology.Join(s, t, join, topology.WithGrace(-time.Second)).To("out")
		}, "negative grace period"},
		{"negative history", func(b *topology.Builder) {
			topology.NewTable(b, "t", str, str, topology.Versioned(-time.Second)).ToStream().To("out")
		}, "negative history retention"},
		{"grace without a value serde", func(b *topology.Builder) {
			s := topology.MapValues(topology.NewStream(b, "s", str, str), func(string) point { return point{} })
			t := topology.NewTable(b, "t", str, str, topology.Versioned(time.Second))
			topology.Join(s, t, func(_ string, p point, vt string) string { return vt }, topology.WithGrace(0)).To("out")
		}, "the grace buffer needs serdes"},
		{"table-table join of a versioned table and one that is not", func(b *topology.Builder) {
			l := topology.NewTable(b, "l", str, str, topology.Versioned(time.Second))
			r := topology.NewTable(b, "r", str, str)
			topology.JoinTables(l, r, func(_, a, c string) string { return a + c }).ToStream().To("out")
		}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := topology.NewBuilder()
			c.build(b)
			_, err := b.Build()
			if c.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, topology.ErrInvalidTopology)
			require.ErrorContains(t, err, c.want)
		})
	}
}

func TestVersionedTableJoinAsOf(t *testing.T) {
	b := topology.NewBuilder()
	str := serde.String()
	prices := topology.NewTable(b, "prices", str, str, topology.Materialized("prices"), topology.Versioned(time.Hour))
	orders := topology.NewStream(b, "orders", str, str)
	topology.Join(orders, prices, func(_, qty, price string) string { return qty + "@" + price }).To("priced")
	topology.Join(orders, prices, func(_, qty, price string) string { return qty + "@" + price },
		topology.WithGrace(10*time.Millisecond)).To("priced-grace")
	d := newDriver(t, b)

	pricesIn := topologytest.Input(d, "prices", str, str)
	ordersIn := topologytest.Input(d, "orders", str, str)
	require.NoError(t, pricesIn.Pipe("apple", "1", ms(100)))
	require.NoError(t, pricesIn.Pipe("apple", "2", ms(200)))
	require.NoError(t, ordersIn.Pipe("apple", "5", ms(150)))  // as of 150: price 1
	require.NoError(t, pricesIn.Pipe("apple", "3", ms(205)))  // after the order below
	require.NoError(t, ordersIn.Pipe("apple", "7", ms(210)))  // held until 220
	require.NoError(t, pricesIn.Pipe("apple", "4", ms(209)))  // late, within the grace
	require.NoError(t, ordersIn.Pipe("banana", "1", ms(220))) // releases 210, and 150 went at once

	require.Equal(t, []pair{{Key: "apple", Value: "5@1"}, {Key: "apple", Value: "7@3"}}, readPairs(t, d, "priced"))
	require.Equal(t, []pair{{Key: "apple", Value: "5@1"}, {Key: "apple", Value: "7@4"}}, readPairs(t, d, "priced-grace"))

	store, err := topologytest.VersionedStore(d, "prices", str, str)
	require.NoError(t, err)
	v, ok, err := store.GetAsOf("apple", ms(206))
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, statestore.Version[string]{Value: "3", ValidFrom: ms(205), ValidTo: ms(209)}, v)
	v, ok, err = store.Get("apple")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, statestore.Version[string]{Value: "4", ValidFrom: ms(209), Latest: true}, v)
	_, err = topologytest.VersionedStore(d, "missing", str, str)
	require.Error(t, err)
}

// A left join forwards a null-key stream record at once, with no table
// value, with or without a grace period; an inner join drops and counts it.
func TestVersionedJoinNullKey(t *testing.T) {
	b := topology.NewBuilder()
	str := serde.String()
	table := topology.NewTable(b, "t", str, str, topology.Materialized("t"), topology.Versioned(time.Second))
	s := topology.NewStream(b, "s", str, str)
	left := func(_, v, vt string, found bool) string { return v + "+" + vt }
	topology.LeftJoin(s, table, left).To("left")
	topology.LeftJoin(s, table, left, topology.WithGrace(time.Second)).To("left-grace")
	topology.Join(s, table, func(_, v, vt string) string { return v }).To("inner")
	d := newDriver(t, b)

	require.NoError(t, d.PipeRaw("s", nil, []byte("v"), ms(10)))
	for _, topic := range []string{"left", "left-grace"} {
		got := d.Topic(topic)
		require.Len(t, got, 1, topic)
		require.Nil(t, got[0].Key, topic)
		require.Equal(t, "v+", string(got[0].Value), topic)
	}
	require.Empty(t, d.Topic("inner"))
	require.Equal(t, int64(1), d.Counters()["dropped-records-null"])
}

// A left join of a versioned table with a plain one skips the versioned
// side's out-of-order updates and stamps results with the plain side's
// timestamps, which it keeps beside its store.
func TestLeftJoinVersionedWithPlainTable(t *testing.T) {
	b := topology.NewBuilder()
	str := serde.String()
	left := topology.NewTable(b, "left", str, str, topology.Materialized("l"), topology.Versioned(time.Minute))
	right := topology.NewTable(b, "right", str, str, topology.Materialized("r"))
	topology.LeftJoinTables(left, right, func(_, v1, v2 string, found bool) string {
		if !found {
			v2 = "null"
		}
		return v1 + "+" + v2
	}).ToStream().To("out")
	d := newDriver(t, b)
	l := topologytest.Input(d, "left", str, str)
	r := topologytest.Input(d, "right", str, str)
	require.NoError(t, l.Pipe("a", "1", ms(10)))
	require.NoError(t, r.Pipe("a", "A", ms(20)))
	require.NoError(t, l.Pipe("a", "0", ms(5))) // out of order: skipped
	require.NoError(t, l.Pipe("a", "2", ms(15)))
	require.NoError(t, r.PipeTombstone("a", ms(30)))
	require.NoError(t, l.PipeTombstone("a", ms(40)))
	require.NoError(t, l.PipeTombstone("a", ms(35))) // out of order: skipped
	got, err := topologytest.Output(d, "out", str, str).ReadRecords()
	require.NoError(t, err)
	var lines []string
	for _, rec := range got {
		v := rec.Value
		if rec.Tombstone {
			v = "<delete>"
		}
		lines = append(lines, fmt.Sprintf("%s=%s@%d", rec.Key, v, rec.Timestamp.UnixMilli()))
	}
	require.Equal(t, []string{"a=1+null@10", "a=1+A@20", "a=2+A@20", "a=2+null@30", "a=<delete>@40"}, lines)
}
