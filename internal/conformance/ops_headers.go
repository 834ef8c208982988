package conformance

import (
	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
)

// The DSL functions that see record headers.
func init() {
	register(buildHeaders, "headers")
}

// Header is one record header in a script: its key and its value, as text.
type Header [2]string

// header is the underlying type of processor.Header and of the Kafka
// client's header: the engine tests produce and read the latter.
type header interface {
	~struct {
		Key   string
		Value []byte
	}
}

// InputHeaders returns the input's headers as H.
func InputHeaders[H header](in Input) []H {
	var out []H
	for _, h := range in.Headers {
		out = append(out, H{Key: h[0], Value: []byte(h[1])})
	}
	return out
}

// OutputHeaders returns a record's headers in a script's form; nil when
// there are none.
func OutputHeaders[H header](hs []H) []Header {
	var out []Header
	for _, h := range hs {
		p := processor.Header(h)
		out = append(out, Header{p.Key, string(p.Value)})
	}
	return out
}

// buildHeaders: with "filter": f, FilterWithHeaders drops the records that
// have a header f; then MapValuesWithHeaders appends to the value the last
// "trace" header ("-" without one) and sets the header "seen" to the old
// value; then To, or with "agg": "count", a Count by key (by the value's
// first character with "rekey").
func buildHeaders(c *opBuild) {
	s := c.s
	str := serde.String()
	in := topology.NewStream(c.b, c.name("in"), str, str)
	if s.Filter != nil {
		name := *s.Filter
		in = in.FilterWithHeaders(func(_, _ string, h topology.Headers) bool {
			_, has := h.Get(name)
			return !has
		})
	}
	traced := topology.MapValuesWithHeaders(in, func(_, v string, h *topology.Headers) string {
		trace := "-"
		if t, ok := h.Get("trace"); ok {
			trace = string(t)
		}
		h.Set("seen", []byte(v))
		return v + "|" + trace
	})
	if s.Agg != "count" {
		c.count = false
		traced.To(c.name("out"))
		return
	}
	c.grouped(traced).Count(topology.Materialized(c.name("agg"))).ToStream().To(c.name("out"))
}
