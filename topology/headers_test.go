package topology_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
)

func hdr(kv ...string) []processor.Header {
	var out []processor.Header
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, processor.Header{Key: kv[i], Value: []byte(kv[i+1])})
	}
	return out
}

func TestMapValuesWithHeaders(t *testing.T) {
	b := topology.NewBuilder()
	in := topology.NewStream(b, "in", serde.String(), serde.String())
	in.To("untouched") // a branch forked before the change
	traced := topology.MapValuesWithHeaders(in, func(k, v string, h *topology.Headers) string {
		trace, _ := h.Get("trace")
		h.Set("seen-by", []byte("weir"))
		h.Remove("drop-me")
		return v + "/" + string(trace)
	})
	traced.To("out")
	d := newDriver(t, b)
	require.NoError(t, d.PipeRaw("in", []byte("k"), []byte("v"), ms(1), hdr("trace", "t1", "drop-me", "x", "trace", "t2")...))
	out := d.Topic("out")
	require.Len(t, out, 1)
	require.Equal(t, "v/t2", string(out[0].Value), "Get returns the last header of a key")
	require.Equal(t, hdr("trace", "t1", "trace", "t2", "seen-by", "weir"), out[0].Headers)
	untouched := d.Topic("untouched")
	require.Len(t, untouched, 1)
	require.Equal(t, hdr("trace", "t1", "drop-me", "x", "trace", "t2"), untouched[0].Headers)
}

func TestFilterWithHeaders(t *testing.T) {
	b := topology.NewBuilder()
	in := topology.NewStream(b, "in", serde.String(), serde.String())
	in.FilterWithHeaders(func(_, _ string, h topology.Headers) bool {
		v, ok := h.Get("tenant")
		h.Add("ignored", nil) // pred's copy only
		return ok && string(v) == "acme"
	}).To("out")
	d := newDriver(t, b)
	require.NoError(t, d.PipeRaw("in", []byte("1"), []byte("a"), ms(1), hdr("tenant", "acme")...))
	require.NoError(t, d.PipeRaw("in", []byte("2"), []byte("b"), ms(2), hdr("tenant", "other")...))
	require.NoError(t, d.PipeRaw("in", []byte("3"), []byte("c"), ms(3)))
	out := d.Topic("out")
	require.Len(t, out, 1)
	require.Equal(t, "1", string(out[0].Key))
	require.Equal(t, hdr("tenant", "acme"), out[0].Headers)
}

// Headers travel as in Kafka Streams: through a repartition topic, and
// into an aggregation's output, which carries the headers of the record
// that updated it; a stream-table join's output carries the stream
// record's.
func TestHeadersFlowThroughRepartitionAggregationAndJoin(t *testing.T) {
	b := topology.NewBuilder()
	in := topology.NewStream(b, "in", serde.String(), serde.String())
	stamped := topology.MapValuesWithHeaders(in, func(_, v string, h *topology.Headers) string {
		h.Add("value", []byte(v))
		return v
	})
	topology.GroupBy(stamped, func(_, v string) string { return v[:1] }).Count().ToStream().To("counts")
	table := topology.NewTable(b, "table", serde.String(), serde.String())
	topology.Join(stamped, table, func(_, v, tv string) string { return v + "+" + tv }).To("joined")
	d := newDriver(t, b)
	require.NoError(t, d.PipeRaw("table", []byte("k"), []byte("T"), ms(0), hdr("from", "table")...))
	require.NoError(t, d.PipeRaw("in", []byte("k"), []byte("a1"), ms(1), hdr("from", "in")...))
	require.NoError(t, d.PipeRaw("in", []byte("k"), []byte("a2"), ms(2)))

	var repartition []processor.Output
	for _, topic := range d.Topics() {
		for _, o := range d.Topic(topic) {
			if o.Kind == processor.OutputRepartition {
				repartition = append(repartition, o)
			}
		}
	}
	require.Len(t, repartition, 2)
	require.Equal(t, hdr("from", "in", "value", "a1"), repartition[0].Headers)

	counts := d.Topic("counts")
	require.Len(t, counts, 2)
	require.Equal(t, hdr("from", "in", "value", "a1"), counts[0].Headers)
	require.Equal(t, hdr("value", "a2"), counts[1].Headers)

	joined := d.Topic("joined")
	require.Len(t, joined, 2)
	require.Equal(t, hdr("from", "in", "value", "a1"), joined[0].Headers)
}

func TestHeadersMethods(t *testing.T) {
	b := topology.NewBuilder()
	in := topology.NewStream(b, "in", serde.String(), serde.String())
	var seen [][]string
	topology.MapValuesWithHeaders(in, func(_, v string, h *topology.Headers) string {
		var vals []string
		for _, x := range h.Values("a") {
			vals = append(vals, string(x))
		}
		seen = append(seen, vals)
		value := []byte("mine")
		h.Add("a", value)
		value[0] = 'X' // Add kept its own copy
		_, has := h.Get("missing")
		require.False(t, has)
		require.Equal(t, 3, h.Len())
		all := h.All()
		all[0].Key = "changed" // a copy
		require.Equal(t, "a", h.All()[0].Key)
		return v
	}).To("out")
	d := newDriver(t, b)
	require.NoError(t, d.PipeRaw("in", []byte("k"), []byte("v"), ms(1), hdr("a", "1", "a", "2")...))
	require.Equal(t, [][]string{{"1", "2"}}, seen)
	require.Equal(t, hdr("a", "1", "a", "2", "a", "mine"), d.Topic("out")[0].Headers)
}
