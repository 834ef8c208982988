package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// Script is one conformance case: an operator, its parameters, the input
// records, and Kafka Streams' output for them.
type Script struct {
	Op      string  `json:"op"`
	About   string  `json:"about,omitempty"`
	Size    int64   `json:"size,omitempty"`
	Advance int64   `json:"advance,omitempty"`
	Gap     int64   `json:"gap,omitempty"`
	Grace   int64   `json:"grace,omitempty"`
	Before  int64   `json:"before,omitempty"`
	After   *int64  `json:"after,omitempty"`
	Agg     string  `json:"agg,omitempty"`
	Final   string  `json:"final,omitempty"`
	Filter  *string `json:"filter,omitempty"`
	Rekey   bool    `json:"rekey,omitempty"`
	// Window picks the windows of "cogroup" ("sliding"; by default "size"
	// makes time windows and "gap" session windows).
	Window string `json:"window,omitempty"`
	// Limit, MaxRecords and MaxBytes are the time limit and buffer bounds
	// of "suppress" (0: unbounded).
	Limit      int64 `json:"limit,omitempty"`
	MaxRecords int64 `json:"maxRecords,omitempty"`
	MaxBytes   int64 `json:"maxBytes,omitempty"`
	// Materialize gives a table operator's result a store of its own.
	Materialize bool `json:"materialize,omitempty"`
	// History is a versioned table's history retention (ms); Left makes a
	// stream–table join a left join.
	History int64   `json:"history,omitempty"`
	Left    bool    `json:"left,omitempty"`
	Inputs  []Input `json:"inputs"`
	// Outputs names the output topics read after each input, in this
	// order; nil means ["out"].
	Outputs []string `json:"outputs,omitempty"`
	// Differs names a documented difference (docs/semantics.md): weir's
	// output is then Weir, not Expect.
	Differs string   `json:"differs,omitempty"`
	Weir    []Output `json:"weir,omitempty"`
	// Expect is Kafka Streams' output; nil when not recorded yet.
	Expect []Output `json:"expect"`

	// Path is the file the script was read from.
	Path string `json:"-"`
}

// Input is one input record.
type Input struct {
	Topic string  `json:"topic,omitempty"` // default "in"
	Key   *string `json:"key"`
	Value *string `json:"value"`
	TS    int64   `json:"ts"`
	// Headers are the record's headers, in order; optional.
	Headers []Header `json:"headers,omitempty"`
	// Restart restarts the application before this input is processed:
	// it stops, and starts again with its stores restored (Kafka Streams
	// from its state directory, weir from the changelogs). State kept
	// only in memory starts again.
	Restart bool `json:"restart,omitempty"`
}

// Restarts reports whether any input of the script restarts the
// application.
func (s *Script) Restarts() bool {
	for _, in := range s.Inputs {
		if in.Restart {
			return true
		}
	}
	return false
}

// Output is one output record and the index of the input that caused it.
type Output struct {
	After int     `json:"after"`
	Topic string  `json:"topic"`
	Key   *string `json:"key"`
	Value *string `json:"value"`
	TS    int64   `json:"ts"`
	// Headers are the record's headers, in order; left out when none.
	Headers []Header `json:"headers,omitempty"`
}

func (o Output) String() string {
	s := func(p *string) string {
		if p == nil {
			return "null"
		}
		return fmt.Sprintf("%q", *p)
	}
	text := fmt.Sprintf("after #%d %s key=%s value=%s ts=%d", o.After, o.Topic, s(o.Key), s(o.Value), o.TS)
	if len(o.Headers) > 0 {
		text += fmt.Sprintf(" headers=%q", o.Headers)
	}
	return text
}

// OutputTopics returns the script's output topics: Outputs, or ["out"].
func (s *Script) OutputTopics() []string {
	if len(s.Outputs) == 0 {
		return []string{"out"}
	}
	return s.Outputs
}

func (in Input) topic() string {
	if in.Topic == "" {
		return "in"
	}
	return in.Topic
}

// Load reads a script.
func Load(path string) (*Script, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s Script
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("conformance: %s: %w", path, err)
	}
	s.Path = path
	return &s, nil
}

// Paths returns the scripts under dir (dir/<op>/<name>.json), sorted.
func Paths(dir string) ([]string, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*", "*.json"))
	sort.Strings(paths)
	return paths, err
}

// Record writes outs as the script's expected output, keeping the rest of
// the file as it is.
func Record(path string, outs []Output) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	var buf bytes.Buffer
	buf.WriteString("[")
	for i, o := range outs {
		if i > 0 {
			buf.WriteString(",")
		}
		line, err := json.Marshal(o)
		if err != nil {
			return err
		}
		buf.WriteString("\n    ")
		buf.Write(line)
	}
	if len(outs) > 0 {
		buf.WriteString("\n  ")
	}
	buf.WriteString("]")
	// Keep the hand-written part byte for byte: replace or append "expect".
	var text string
	if i := bytes.Index(b, []byte(`"expect"`)); i >= 0 {
		text = string(bytes.TrimRight(b[:i], " \n,")) + ",\n"
	} else {
		text = string(bytes.TrimRight(b, " \n"))
		text = text[:len(text)-1] // the closing brace
		text = string(bytes.TrimRight([]byte(text), " \n")) + ",\n"
	}
	text += `  "expect": ` + buf.String() + "\n}\n"
	return os.WriteFile(path, []byte(text), 0o644)
}

// Diff returns a description of the differences between want and got, or
// "" when they are identical.
func Diff(want, got []Output) string {
	var out bytes.Buffer
	n := max(len(want), len(got))
	for i := 0; i < n; i++ {
		var w, g string
		if i < len(want) {
			w = want[i].String()
		}
		if i < len(got) {
			g = got[i].String()
		}
		if w != g {
			fmt.Fprintf(&out, "  #%d kafka streams: %s\n  #%d weir:          %s\n", i, orNone(w), i, orNone(g))
		}
	}
	return out.String()
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// WeirWant returns what weir must output, given Kafka Streams' output ks:
// ks itself, or the script's Weir output for a documented difference.
func (s *Script) WeirWant(ks []Output) []Output {
	if s.Differs != "" {
		return s.Weir
	}
	return ks
}
