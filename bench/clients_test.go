package main

import (
	"testing"

	"github.com/weirstream/weir"
)

func TestSplitClient(t *testing.T) {
	for _, tc := range []struct {
		sys, base string
		client    weir.KafkaClient
	}{
		{"weir-cont-alo", "weir-cont-alo", ""},
		{"weir-cont-alo-franz", "weir-cont-alo", weir.KafkaClientFranzGo},
		{"weir-cont-alo-sarama", "weir-cont-alo", weir.KafkaClientSarama},
		{"weir-cont-eos-franz-cache", "weir-cont-eos-cache", weir.KafkaClientFranzGo},
		{"weir-cont-alo-franz-lz4", "weir-cont-alo-lz4", weir.KafkaClientFranzGo},
		{"weir-mb-eos-sarama", "weir-mb-eos", weir.KafkaClientSarama},
		{"franz-alo", "franz-alo", ""},
		{"franz-eos-lz4", "franz-eos-lz4", ""},
		{"weir-cont-alo-franzy", "weir-cont-alo-franzy", ""},
	} {
		base, client := splitClient(tc.sys)
		if base != tc.base || client != tc.client {
			t.Errorf("splitClient(%q) = %q, %q; want %q, %q", tc.sys, base, client, tc.base, tc.client)
		}
	}
}
