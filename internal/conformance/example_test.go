package conformance_test

import (
	"fmt"

	"github.com/weirstream/weir/internal/conformance"
)

// A script written in code (the files under scripts/ hold the same JSON
// fields): a count per key, run through weir's topologytest in memory and
// compared with the output Kafka Streams gave for the same input.
func Example() {
	str := func(s string) *string { return &s }
	s := &conformance.Script{
		Op: "aggregate",
		Inputs: []conformance.Input{
			{Key: str("a"), Value: str("x"), TS: 1005},
			{Key: str("b"), Value: str("x"), TS: 1003},
			{Key: nil, Value: str("x"), TS: 1011}, // a null key is dropped
			{Key: str("a"), Value: str("x"), TS: 1007},
		},
		Expect: []conformance.Output{ // as recorded from Kafka Streams 4.4
			{After: 0, Topic: "out", Key: str("a"), Value: str("1"), TS: 1005},
			{After: 1, Topic: "out", Key: str("b"), Value: str("1"), TS: 1003},
			{After: 3, Topic: "out", Key: str("a"), Value: str("2"), TS: 1007},
		},
	}
	got, err := conformance.RunWeir(s)
	if err != nil {
		fmt.Println("run:", err)
		return
	}
	for _, o := range got {
		fmt.Println(o)
	}
	if d := conformance.Diff(s.WeirWant(s.Expect), got); d != "" {
		fmt.Println("differs from Kafka Streams:", d)
		return
	}
	fmt.Println("same as Kafka Streams")
	// Output:
	// after #0 out key="a" value="1" ts=1005
	// after #1 out key="b" value="1" ts=1003
	// after #3 out key="a" value="2" ts=1007
	// same as Kafka Streams
}
