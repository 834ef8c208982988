package conformance

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/weirstream/weir/processor"
	"github.com/weirstream/weir/serde"
	"github.com/weirstream/weir/topology"
	"github.com/weirstream/weir/topologytest"
)

// Decoder turns a script's output record into its text form.
type Decoder func(key, value []byte) (k, v *string, err error)

// Topology builds weir's topology for the script, and the decoder of its
// output records.
func Topology(s *Script) (*topology.Topology, Decoder, error) {
	b := topology.NewBuilder()
	decode, err := Build(b, s, "")
	if err != nil {
		return nil, nil, err
	}
	topo, err := b.Build()
	if err != nil {
		return nil, nil, err
	}
	return topo, decode, nil
}

// Build adds the script's topology to b, with prefix before every topic
// ("in", "left", "right", "out") and store name, so that several scripts
// can run in one application.
func Build(b *topology.Builder, s *Script, prefix string) (Decoder, error) {
	str := serde.String()
	input := func(topic string) topology.Stream[string, string] {
		in := topology.NewStream(b, prefix+topic, str, str)
		if s.Filter != nil {
			drop := *s.Filter
			in = in.Filter(func(_, v string) bool { return v != drop })
		}
		return in
	}
	grouped := func(in topology.Stream[string, string]) topology.Grouped[string, string] {
		if s.Rekey {
			return topology.GroupBy(in, firstChar)
		}
		return in.GroupByKey()
	}
	// Kafka Streams hands a time-windowed or session reducer a null value,
	// which Java's string concatenation prints as "null"; weir hands it V's
	// zero value. No script has an empty value, so "" stands for null.
	concat := func(a, v string) string {
		if v == "" {
			v = "null"
		}
		return a + "," + v
	}
	var opts []topology.Option
	if s.Final != "" {
		opts = append(opts, topology.EmitFinal())
	}
	windowed := false
	valueIsCount := s.Agg == "" || s.Agg == "count"
	switch s.Op {
	case "aggregate":
		g := grouped(input("in"))
		if valueIsCount {
			g.Count(topology.Materialized(prefix + "agg")).ToStream().To(prefix + "out")
		} else {
			g.Reduce(concat, topology.Materialized(prefix+"agg")).ToStream().To(prefix + "out")
		}
	case "tumbling", "hopping", "sliding":
		windowed = true
		var w topology.Windows
		switch s.Op {
		case "tumbling":
			w = topology.TumblingWindows(ms(s.Size))
		case "hopping":
			w = topology.HoppingWindows(ms(s.Size), ms(s.Advance))
		default:
			w = topology.SlidingWindows(ms(s.Size))
		}
		wg := topology.WindowedBy(grouped(input("in")), w.WithGrace(ms(s.Grace)))
		opts = append(opts, topology.Materialized(prefix+"win"))
		if valueIsCount {
			wg.Count(opts...).ToStream().To(prefix + "out")
		} else {
			wg.Reduce(concat, opts...).ToStream().To(prefix + "out")
		}
	case "session":
		windowed = true
		sg := topology.SessionWindowedBy(grouped(input("in")), topology.SessionWindowsWithGap(ms(s.Gap)).WithGrace(ms(s.Grace)))
		if valueIsCount {
			sg.Count(topology.Materialized(prefix + "sess")).ToStream().To(prefix + "out")
		} else {
			sg.Reduce(concat, topology.Materialized(prefix+"sess")).ToStream().To(prefix + "out")
		}
	case "stream-table", "stream-table-left":
		valueIsCount = false
		left := input("left")
		if s.Rekey {
			left = topology.SelectKey(left, firstChar)
		}
		right := topology.NewTable(b, prefix+"right", str, str, topology.Materialized(prefix+"right-store"))
		if s.Op == "stream-table" {
			topology.Join(left, right, func(_, v, vt string) string { return v + "+" + vt }).To(prefix + "out")
		} else {
			topology.LeftJoin(left, right, func(_, v, vt string, found bool) string {
				if !found {
					vt = "null"
				}
				return v + "+" + vt
			}).To(prefix + "out")
		}
	case "table-table":
		valueIsCount = false
		left := topology.NewTable(b, prefix+"left", str, str, topology.Materialized(prefix+"left-store"))
		right := topology.NewTable(b, prefix+"right", str, str, topology.Materialized(prefix+"right-store"))
		topology.JoinTables(left, right, func(_, v1, v2 string) string { return v1 + "+" + v2 }).ToStream().To(prefix + "out")
	case "stream-stream":
		valueIsCount = false
		jw := topology.JoinTimeDifference(ms(s.Before)).WithGrace(ms(s.Grace))
		if s.After != nil {
			jw = jw.WithAfter(ms(*s.After))
		}
		topology.JoinStreams(input("left"), input("right"), func(_, v1, v2 string) string { return v1 + "+" + v2 }, jw).To(prefix + "out")
	case "stateless":
		valueIsCount = false
		words := topology.FlatMapValues(input("in"), func(v string) []string { return strings.Split(v, ",") })
		topology.MapValues(words, strings.ToUpper).To(prefix + "out")
	case "merge":
		valueIsCount = false
		input("left").Merge(input("right")).To(prefix + "out")
	case "table-filter", "table-mapvalues":
		valueIsCount = false
		t := topology.NewTable(b, prefix+"in", str, str, topology.Materialized(prefix+"in-store"))
		if s.Op == "table-filter" {
			drop := ""
			if s.Filter != nil {
				drop = *s.Filter
			}
			var fopts []topology.Option
			if s.Materialize {
				fopts = append(fopts, topology.Materialized(prefix+"filtered"))
			}
			t = t.Filter(func(_, v string) bool { return v != drop }, fopts...)
		} else {
			t = topology.MapTableValues(t, func(_, v string) string { return v + "!" })
		}
		t.ToStream().To(prefix + "out")
	default:
		return nil, fmt.Errorf("conformance: %s: unknown op %q", s.Path, s.Op)
	}
	ws := topology.WindowedSerde(str)
	decode := func(key, value []byte) (k, v *string, err error) {
		if key != nil {
			var text string
			if windowed {
				w, err := ws.Deserialize("out", key)
				if err != nil {
					return nil, nil, err
				}
				text = fmt.Sprintf("%s@%d/%d", w.Key, w.Start.UnixMilli(), w.End.UnixMilli())
			} else {
				text = string(key)
			}
			k = &text
		}
		if value != nil {
			text := string(value)
			if valueIsCount {
				n, err := serde.Int64().Deserialize("out", value)
				if err != nil {
					return nil, nil, err
				}
				text = strconv.FormatInt(n, 10)
			}
			v = &text
		}
		return k, v, nil
	}
	return decode, nil
}

// firstChar is the new key of "rekey": the value's first character.
func firstChar(_, v string) string {
	if v == "" {
		return ""
	}
	return v[:1]
}

func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

// Bytes returns the input's key and value as Kafka would carry them.
func (in Input) Bytes() (key, value []byte) {
	if in.Key != nil {
		key = []byte(*in.Key)
	}
	if in.Value != nil {
		value = []byte(*in.Value)
	}
	return key, value
}

// RunWeir runs the script through weir's topologytest and returns its
// output records. A record the topology cannot handle is skipped, as Kafka
// Streams' default handlers would log and skip it.
func RunWeir(s *Script) ([]Output, error) {
	topo, decode, err := Topology(s)
	if err != nil {
		return nil, err
	}
	d, err := topologytest.New(topo, topologytest.Config{
		OnError: func(*processor.RecordError) error { return nil },
	})
	if err != nil {
		return nil, err
	}
	defer d.Close()
	var outs []Output
	read := 0
	for i, in := range s.Inputs {
		k, v := in.Bytes()
		if err := d.PipeRaw(in.topic(), k, v, time.UnixMilli(in.TS)); err != nil {
			return nil, fmt.Errorf("input #%d: %w", i, err)
		}
		all := d.Topic("out")
		for _, o := range all[read:] {
			k, v, err := decode(o.Key, o.Value)
			if err != nil {
				return nil, errors.Join(fmt.Errorf("input #%d: output", i), err)
			}
			outs = append(outs, Output{After: i, Topic: "out", Key: k, Value: v, TS: o.Timestamp.UnixMilli()})
		}
		read = len(all)
	}
	return outs, nil
}
