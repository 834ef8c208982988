package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
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
		{wait: 0, firstAck: 21 * ms, flush: 22 * ms, endTxn: 3 * ms, visible: 2 * ms, cycle: 25 * ms},
		{wait: 3 * ms, firstAck: 2 * ms, flush: 3 * ms, endTxn: 3 * ms, visible: 2 * ms, cycle: 9 * ms},
		{wait: 0, firstAck: 1 * ms, flush: 2 * ms, hold: 1 * ms, endTxn: 3 * ms, visible: 2 * ms, cycle: 15 * ms},
		{wait: 3 * ms, firstAck: 40 * ms, flush: 41 * ms, endTxn: 3 * ms, visible: 2 * ms, cycle: 41 * ms},
	}
	var b strings.Builder
	printTxnProbe(&b, txns, []time.Duration{0, 3 * ms}, 2)
	out := b.String()
	// wait 0: first acks 1 and 21 ms (p50, p90 and p99, at index p·1
	// rounded down, the lower; max the higher), one of them 15–30 ms (one retry at the default backoff)
	// and 15–150; totals 8 (with the hold) and 27 ms; 2 cycles in 40 ms.
	if !strings.Contains(out, "| 2 | 0s | 2 | 1.0 / 1.0 / 1.0 / 21.0 | 1 (50.0 %) | 1 (50.0 %) |") ||
		!strings.Contains(out, "| 8.0 / 8.0 / 27.0 | 50 |") {
		t.Fatalf("wait 0 row wrong:\n%s", out)
	}
	// wait 3ms: 40 ms is past 30 but within 150; 2 cycles in 50 ms.
	if !strings.Contains(out, "| 2 | 3ms | 2 | 2.0 / 2.0 / 2.0 / 40.0 | 0 (0.0 %) | 1 (50.0 %) |") ||
		!strings.Contains(out, "| 8.0 / 8.0 / 46.0 | 40 |") {
		t.Fatalf("wait 3ms row wrong:\n%s", out)
	}
}

func TestTxnProbeIDs(t *testing.T) {
	for _, ids := range []int{0, 3} {
		err := runTxnProbeIDs(t.Context(), io.Discard, []string{"127.0.0.1:1"}, 10, 50, []time.Duration{0}, ids, "")
		if err == nil || !strings.Contains(err.Error(), "-txn-probe-ids") {
			t.Fatalf("ids %d: %v, want the -txn-probe-ids error", ids, err)
		}
	}
}

// TestTxnProbeKafka runs both modes of the probe, 20 transactions each,
// against the broker in KAFKA_BROKERS (skipped without one): every
// transaction committed in order and read by the read_committed consumer,
// one row per wait.
func TestTxnProbeKafka(t *testing.T) {
	brokers := os.Getenv("KAFKA_BROKERS")
	if brokers == "" {
		t.Skip("KAFKA_BROKERS is not set")
	}
	for _, ids := range []int{1, 2} {
		var b strings.Builder
		csv := filepath.Join(t.TempDir(), "probe.csv")
		err := runTxnProbeIDs(t.Context(), &b, strings.Split(brokers, ","), 20, 10, []time.Duration{0, time.Millisecond}, ids, csv)
		if err != nil {
			t.Fatalf("ids %d: %v", ids, err)
		}
		for _, row := range []string{fmt.Sprintf("| %d | 0s | 10 |", ids), fmt.Sprintf("| %d | 1ms | 10 |", ids)} {
			if !strings.Contains(b.String(), row) {
				t.Fatalf("ids %d: no row %q:\n%s", ids, row, b.String())
			}
		}
		data, err := os.ReadFile(csv)
		if err != nil || strings.Count(string(data), "\n") != 21 {
			t.Fatalf("ids %d: csv: %v\n%s", ids, err, data)
		}
	}
}
