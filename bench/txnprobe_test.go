package main

import (
	"strings"
	"testing"
	"time"
)

func TestParseWaits(t *testing.T) {
	ws, err := parseWaits("0s, 3ms,1ms")
	if err != nil || len(ws) != 3 || ws[0] != 0 || ws[1] != 3*time.Millisecond || ws[2] != time.Millisecond {
		t.Fatalf("parseWaits: %v, %v", ws, err)
	}
	for _, bad := range []string{"", "3", "-1ms", "1ms,,2ms"} {
		if _, err := parseWaits(bad); err == nil {
			t.Fatalf("parseWaits(%q): no error", bad)
		}
	}
}

func TestPrintTxnProbeRowPerWait(t *testing.T) {
	ms := time.Millisecond
	txns := []probeTxn{
		{wait: 0, firstAck: 21 * ms, flush: 22 * ms, endTxn: 3 * ms, visible: 2 * ms},
		{wait: 3 * ms, firstAck: 2 * ms, flush: 3 * ms, endTxn: 3 * ms, visible: 2 * ms},
		{wait: 0, firstAck: 1 * ms, flush: 2 * ms, endTxn: 3 * ms, visible: 2 * ms},
		{wait: 3 * ms, firstAck: 2 * ms, flush: 3 * ms, endTxn: 3 * ms, visible: 2 * ms},
	}
	var b strings.Builder
	printTxnProbe(&b, txns, []time.Duration{0, 3 * ms})
	out := b.String()
	// wait 0: first acks 1 and 21 ms (p50 the lower, p99 and max the
	// higher), one of them 15–150 ms (the broker's CONCURRENT_TRANSACTIONS retries, the 100 ms bound and one request); totals 7 and 27 ms.
	if !strings.Contains(out, "| 0s | 2 | 1.0 / 1.0 / 21.0 | 1 |") || !strings.Contains(out, "| 7.0 / 7.0 / 27.0 |") {
		t.Fatalf("wait 0 row wrong:\n%s", out)
	}
	if !strings.Contains(out, "| 3ms | 2 | 2.0 / 2.0 / 2.0 | 0 |") {
		t.Fatalf("wait 3ms row wrong:\n%s", out)
	}
}
