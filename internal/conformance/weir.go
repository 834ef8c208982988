package conformance

import (
	"errors"
	"fmt"
	"strconv"
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
// ("in", "left", "right", "out", or the script's Outputs) and store name,
// so that several scripts can run in one application.
func Build(b *topology.Builder, s *Script, prefix string) (Decoder, error) {
	build, ok := ops[s.Op]
	if !ok {
		return nil, fmt.Errorf("conformance: %s: unknown op %q", s.Path, s.Op)
	}
	c := &opBuild{b: b, s: s, prefix: prefix, count: s.Agg == "" || s.Agg == "count"}
	build(c)
	if c.decode != nil {
		return c.decode, nil
	}
	return c.decoder(), nil
}

// opBuild is what an operator's builder works with: the script, the
// builder, the prefix of topic and store names, and how the output reads.
type opBuild struct {
	b      *topology.Builder
	s      *Script
	prefix string
	// windowed: the output key is a windowed string key.
	windowed bool
	// count: the output value is an int64 count (the default for
	// aggregations); builders of other ops set it false.
	count bool
	// decode, when set, replaces the decoder windowed and count describe.
	decode Decoder
}

// ops holds each operator's builder, by the script's "op". Each family of
// operators registers its own in an init function of its file (ops_*.go).
var ops = map[string]func(*opBuild){}

// register adds the builder of the ops named.
func register(build func(*opBuild), names ...string) {
	for _, n := range names {
		ops[n] = build
	}
}

// name returns a topic's or store's name with the script's prefix.
func (c *opBuild) name(s string) string { return c.prefix + s }

// input returns the string stream of topic, filtered as the script says.
func (c *opBuild) input(topic string) topology.Stream[string, string] {
	str := serde.String()
	in := topology.NewStream(c.b, c.name(topic), str, str)
	if c.s.Filter != nil {
		drop := *c.s.Filter
		in = in.Filter(func(_, v string) bool { return v != drop })
	}
	return in
}

// table returns the string table of topic, materialized in store.
func (c *opBuild) table(topic, store string) topology.Table[string, string] {
	str := serde.String()
	return topology.NewTable(c.b, c.name(topic), str, str, topology.Materialized(c.name(store)))
}

// grouped groups in by key, or by the value's first character ("rekey").
func (c *opBuild) grouped(in topology.Stream[string, string]) topology.Grouped[string, string] {
	if c.s.Rekey {
		return topology.GroupBy(in, firstChar)
	}
	return in.GroupByKey()
}

// concat is the scripts' reducer. Kafka Streams hands a time-windowed or
// session reducer a null value, which Java's string concatenation prints as
// "null"; weir hands it V's zero value. No script has an empty value, so ""
// stands for null.
func concat(a, v string) string {
	if v == "" {
		v = "null"
	}
	return a + "," + v
}

// decoder returns the decoder of the output as windowed and count say.
func (c *opBuild) decoder() Decoder {
	windowed, count := c.windowed, c.count
	ws := topology.WindowedSerde(serde.String())
	return func(key, value []byte) (k, v *string, err error) {
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
			if count {
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
// output records: after each input, the new records of each output topic
// (OutputTopics), topic after topic. A record the topology cannot handle
// is skipped, as Kafka Streams' default handlers would log and skip it.
// Before an input marked "restart" the driver restarts
// (topologytest.Driver.Restart).
func RunWeir(s *Script) ([]Output, error) {
	return runWeir(s, func(i int) bool { return s.Inputs[i].Restart })
}

// runWeir is RunWeir restarting the driver before each input i for which
// restart(i) holds.
func runWeir(s *Script, restart func(i int) bool) ([]Output, error) {
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
	defer func() { _ = d.Close() }()
	var outs []Output
	read := map[string]int{}
	for i, in := range s.Inputs {
		if restart(i) {
			next, err := d.Restart()
			if err != nil {
				return nil, fmt.Errorf("input #%d: %w", i, err)
			}
			d = next
		}
		k, v := in.Bytes()
		if err := d.PipeRaw(in.topic(), k, v, time.UnixMilli(in.TS), InputHeaders[processor.Header](in)...); err != nil {
			return nil, fmt.Errorf("input #%d: %w", i, err)
		}
		for _, topic := range s.OutputTopics() {
			all := d.Topic(topic)
			for _, o := range all[read[topic]:] {
				k, v, err := decode(o.Key, o.Value)
				if err != nil {
					return nil, errors.Join(fmt.Errorf("input #%d: output", i), err)
				}
				outs = append(outs, Output{After: i, Topic: topic, Key: k, Value: v, TS: o.Timestamp.UnixMilli(), Headers: OutputHeaders(o.Headers)})
			}
			read[topic] = len(all)
		}
	}
	return outs, nil
}
