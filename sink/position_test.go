package sink

import "testing"

func TestPositionCoversIncludesMerge(t *testing.T) {
	a := TopicPartition{"in", 0}
	b := TopicPartition{"in-2", 0}
	p := Position{a: 10}
	for _, tc := range []struct {
		tp     TopicPartition
		offset int64
		want   bool
	}{
		{a, 9, true}, {a, 10, false}, {a, -1, false}, {b, 0, false},
	} {
		if got := p.Covers(tc.tp, tc.offset); got != tc.want {
			t.Errorf("Covers(%v, %d) = %v, want %v", tc.tp, tc.offset, got, tc.want)
		}
	}
	if !p.Includes(Position{a: 10}) || p.Includes(Position{a: 11}) || p.Includes(Position{b: 1}) || !p.Includes(nil) {
		t.Error("Includes is wrong")
	}
	m := p.Merge(Position{a: 5, b: 3})
	if m[a] != 10 || m[b] != 3 || len(p) != 1 {
		t.Errorf("Merge = %v (p %v)", m, p)
	}
}

func TestPositionText(t *testing.T) {
	p := Position{{"b.t", 2}: 7, {"a-x_y", 10}: 0, {"a-x_y", 9}: 123}
	s := p.String()
	if s != "a-x_y:9=123,a-x_y:10=0,b.t:2=7" {
		t.Fatalf("String = %q", s)
	}
	q, err := ParsePosition(s)
	if err != nil || q.String() != s {
		t.Fatalf("ParsePosition(%q) = %v, %v", s, q, err)
	}
	if q, err := ParsePosition(""); err != nil || len(q) != 0 {
		t.Fatalf("empty: %v %v", q, err)
	}
	for _, bad := range []string{"x", "t:1", "t:x=1", "t:1=-1", ":1=2", "t:-1=2"} {
		if _, err := ParsePosition(bad); err == nil {
			t.Errorf("ParsePosition(%q) accepted", bad)
		}
	}
}
