package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// The transaction probe (-txn-probe N): where the time of a short
// transaction goes on the broker, without weir. One franz-go transactional
// producer runs N transactions back to back on a fresh one-partition topic,
// each of -txn-probe-records records, as a continuous exactly-once epoch
// of 10 ms at 5,000 records a second does; a read_committed consumer reads
// the topic meanwhile. Per transaction it times:
//
//   - first ack: the first record's produce until its acknowledgement. Under
//     transactions v2 (KIP-890) the leader adds the partition to the
//     transaction with the coordinator before it appends; while the last
//     transaction's markers are being written the coordinator answers
//     CONCURRENT_TRANSACTIONS and the leader retries every
//     add.partitions.to.txn.retry.backoff.ms (20 ms by default) — the tail
//     this probe is for;
//   - flush: the first produce until every record is acknowledged;
//   - EndTxn: the commit's round trip (kgo's EndTransaction);
//   - visible: the commit's return until the consumer reads the
//     transaction's first record (the markers written, the last stable
//     offset past it);
//   - total: the first produce until visible, a record's latency at best.
//
// The wait between a commit and the next transaction's first produce
// cycles through -txn-probe-waits (transaction i waits waits[i % len]), so
// one run compares them under the same load. The table counts the first
// acks of 15–150 ms: one or more of the broker's retries at the default
// backoff, within its 100 ms bound and one request's round trip.
// -txn-probe-csv writes every transaction's times, for histograms.

// probeTxn is one transaction's times; seen is set by the consumer.
type probeTxn struct {
	wait, firstAck, flush, endTxn, visible time.Duration
	committed, seen                        time.Time
}

// runTxnProbe runs the probe against brokers and prints its table to w.
// With csv set it also writes every transaction's times there.
func runTxnProbe(ctx context.Context, w io.Writer, brokers []string, n, records int, waits []time.Duration, csv string) error {
	if n < 1 || records < 1 || len(waits) == 0 {
		return fmt.Errorf("bench: txn probe: %d transactions of %d records, %d waits: each must be at least 1", n, records, len(waits))
	}
	topic := fmt.Sprintf("bench-txnprobe-%d", time.Now().UnixNano())
	prod, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ClientID("weir-bench-txnprobe"),
		kgo.TransactionalID(topic+"-txn"), kgo.AllowAutoTopicCreation(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return fmt.Errorf("bench: txn probe: %w", err)
	}
	defer prod.Close()
	// One committed transaction first: it creates the topic (auto-created
	// by the broker, one partition) and opens the producer id.
	if err := probeOne(ctx, prod, topic, -1, records, &probeTxn{}); err != nil {
		return err
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ClientID("weir-bench-txnprobe-reader"),
		kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	if err != nil {
		return fmt.Errorf("bench: txn probe: %w", err)
	}
	defer cons.Close()

	txns := make([]probeTxn, n)
	var mu sync.Mutex // guards txns
	done := make(chan struct{})
	go func() {
		defer close(done)
		seen := 0
		for seen < n && ctx.Err() == nil {
			fs := cons.PollFetches(ctx)
			now := time.Now()
			fs.EachRecord(func(r *kgo.Record) {
				i, err := strconv.Atoi(string(r.Key))
				if err != nil || i < 0 || i >= n || string(r.Value) != "0" {
					return // the opening transaction, or not a first record
				}
				mu.Lock()
				txns[i].seen = now
				mu.Unlock()
				seen++
			})
		}
	}()

	for i := range txns {
		t := probeTxn{wait: waits[i%len(waits)]}
		time.Sleep(t.wait)
		if err := probeOne(ctx, prod, topic, i, records, &t); err != nil {
			return err
		}
		mu.Lock()
		t.seen = txns[i].seen // zero: not read yet
		txns[i] = t
		mu.Unlock()
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		return fmt.Errorf("bench: txn probe: the read_committed consumer did not read every transaction within 10 s")
	case <-ctx.Done():
		return ctx.Err()
	}
	for i := range txns {
		txns[i].visible = txns[i].seen.Sub(txns[i].committed)
	}
	printTxnProbe(w, txns, waits)
	if csv != "" {
		return writeTxnProbeCSV(csv, txns)
	}
	return nil
}

// probeOne runs one transaction of records records keyed i and valued by
// their index, filling t's times and t.committed.
func probeOne(ctx context.Context, cl *kgo.Client, topic string, i, records int, t *probeTxn) error {
	if err := cl.BeginTransaction(); err != nil {
		return fmt.Errorf("bench: txn probe: begin: %w", err)
	}
	key := []byte(strconv.Itoa(i))
	start := time.Now()
	var first sync.Once
	var failed error
	var fmu sync.Mutex
	for j := 0; j < records; j++ {
		rec := &kgo.Record{Topic: topic, Partition: 0, Key: key, Value: []byte(strconv.Itoa(j))}
		cl.Produce(ctx, rec, func(_ *kgo.Record, err error) {
			if err != nil {
				fmu.Lock()
				failed = err
				fmu.Unlock()
				return
			}
			first.Do(func() { t.firstAck = time.Since(start) })
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return fmt.Errorf("bench: txn probe: flush: %w", err)
	}
	t.flush = time.Since(start)
	fmu.Lock()
	err := failed
	fmu.Unlock()
	if err != nil {
		return fmt.Errorf("bench: txn probe: produce: %w", err)
	}
	e0 := time.Now()
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return fmt.Errorf("bench: txn probe: commit: %w", err)
	}
	t.committed = time.Now()
	t.endTxn = t.committed.Sub(e0)
	return nil
}

// writeTxnProbeCSV writes every transaction's times in ms, one a line,
// for histograms (-txn-probe-csv).
func writeTxnProbeCSV(path string, txns []probeTxn) error {
	var b strings.Builder
	b.WriteString("txn,wait_ms,first_ack_ms,flush_ms,endtxn_ms,visible_ms\n")
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	for i, t := range txns {
		fmt.Fprintf(&b, "%d,%.3f,%.3f,%.3f,%.3f,%.3f\n", i, ms(t.wait), ms(t.firstAck), ms(t.flush), ms(t.endTxn), ms(t.visible))
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("bench: -txn-probe-csv: %w", err)
	}
	return nil
}

// printTxnProbe prints p50 / p99 / max of every time, one row per wait.
func printTxnProbe(w io.Writer, txns []probeTxn, waits []time.Duration) {
	fmt.Fprintln(w, "| wait before first produce | txns | first ack ms p50 / p99 / max | first acks 15–150 ms | flush ms p50 / p99 | EndTxn ms p50 / p99 | visible after EndTxn ms p50 / p99 | total ms p50 / p99 / max |")
	fmt.Fprintln(w, "|---|---:|---|---:|---|---|---|---|")
	for _, wait := range slices.Compact(slices.Sorted(slices.Values(waits))) {
		var first, flush, end, vis, total []time.Duration
		slow := 0
		for _, t := range txns {
			if t.wait != wait {
				continue
			}
			first = append(first, t.firstAck)
			flush = append(flush, t.flush)
			end = append(end, t.endTxn)
			vis = append(vis, t.visible)
			total = append(total, t.flush+t.endTxn+t.visible)
			if t.firstAck >= 15*time.Millisecond && t.firstAck < 150*time.Millisecond {
				slow++
			}
		}
		fmt.Fprintf(w, "| %v | %d | %s | %d | %s | %s | %s | %s |\n", wait, len(first),
			probeQuantiles(first, true), slow, probeQuantiles(flush, false), probeQuantiles(end, false),
			probeQuantiles(vis, false), probeQuantiles(total, true))
	}
}

// probeQuantiles formats p50 / p99 (and max) of ds in milliseconds.
func probeQuantiles(ds []time.Duration, withMax bool) string {
	if len(ds) == 0 {
		return ""
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	q := func(p float64) string {
		return fmt.Sprintf("%.1f", float64(s[int(p*float64(len(s)-1))])/float64(time.Millisecond))
	}
	parts := []string{q(0.5), q(0.99)}
	if withMax {
		parts = append(parts, q(1))
	}
	return strings.Join(parts, " / ")
}

// parseWaits parses -txn-probe-waits: durations separated by commas.
func parseWaits(s string) ([]time.Duration, error) {
	var ws []time.Duration
	for _, f := range strings.Split(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil || d < 0 {
			return nil, fmt.Errorf("bench: -txn-probe-waits %q: %q is not a duration ≥ 0", s, f)
		}
		ws = append(ws, d)
	}
	return ws, nil
}
