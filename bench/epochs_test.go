package main

import (
	"testing"
	"time"
)

func TestSplitEpoch(t *testing.T) {
	for _, tc := range []struct {
		sys, base string
		epoch     time.Duration
		bad       bool
	}{
		{"weir-cont-eos", "weir-cont-eos", defaultEpoch, false},
		{"weir-cont-eos-10ms", "weir-cont-eos", 10 * time.Millisecond, false},
		{"weir-cont-eos-franz-25ms", "weir-cont-eos-franz", 25 * time.Millisecond, false},
		{"weir-cont-eos-cache-10ms", "weir-cont-eos-cache", 10 * time.Millisecond, false},
		{"kstreams-eos-10ms", "kstreams-eos", 10 * time.Millisecond, false},
		{"franz-eos-10ms", "franz-eos", 10 * time.Millisecond, false},
		{"franz-alo-10ms", "franz-alo-10ms", defaultEpoch, false},
		{"weir-cont-eos-0ms", "weir-cont-eos-0ms", 0, true},
		{"weir-cont-eos-xms", "weir-cont-eos-xms", defaultEpoch, false},
	} {
		base, epoch, err := splitEpoch(tc.sys)
		if (err != nil) != tc.bad || base != tc.base || (!tc.bad && epoch != tc.epoch) {
			t.Errorf("splitEpoch(%q) = %q, %v, %v; want %q, %v (error %v)", tc.sys, base, epoch, err, tc.base, tc.epoch, tc.bad)
		}
	}
}
