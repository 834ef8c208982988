package main

import (
	"context"
	"flag"
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
//
// With -txn-probe-ids 2 two producers of two transactional ids ("-a",
// "-b") take the transactions in turn, as an engine could that hides the
// markers behind the other id: transaction i+1's first produce follows
// i's EndTxn at once (after the wait) and its EndTxn waits for i's to
// return (exactly-once with consumer offsets: i+1's offsets include i's
// range). The coordinator's CONCURRENT_TRANSACTIONS concerns one
// transactional id, so i+1 does not wait for i's markers; it can still
// meet its own id's last ones (i-1's) when that EndTxn returned just
// before (the id gap, in the CSV).

// txnProbeIDs is -txn-probe-ids, registered here rather than in main.go
// with the probe's other flags so that the probe's two modes stay in this
// file; flag.Parse in main reads it like the others.
var txnProbeIDs = flag.Int("txn-probe-ids", 1, "transactional ids -txn-probe alternates (2: epoch N on <id>-a, N+1 on <id>-b, N+1's records produced while N commits)")

// probeTxn is one transaction's times; seen is set by the consumer.
type probeTxn struct {
	// hold is the flush's end until EndTxn is sent: with two ids, the wait
	// for the previous transaction's EndTxn to return; about 0 with one.
	wait, firstAck, flush, hold, endTxn, visible time.Duration
	// cycle is the previous transaction's EndTxn return until this one's:
	// the probe's epoch. idGap is the last EndTxn return of this
	// transaction's own transactional id until its first produce: how long
	// that id's markers had to be written before it produced again.
	cycle, idGap           time.Duration
	start, committed, seen time.Time
}

// runTxnProbe runs the probe against brokers with -txn-probe-ids
// transactional ids and prints its table to w. With csv set it also writes
// every transaction's times there.
func runTxnProbe(ctx context.Context, w io.Writer, brokers []string, n, records int, waits []time.Duration, csv string) error {
	return runTxnProbeIDs(ctx, w, brokers, n, records, waits, *txnProbeIDs, csv)
}

// runTxnProbeIDs is runTxnProbe with ids transactional ids (1 or 2).
func runTxnProbeIDs(ctx context.Context, w io.Writer, brokers []string, n, records int, waits []time.Duration, ids int, csv string) error {
	if n < 1 || records < 1 || len(waits) == 0 {
		return fmt.Errorf("bench: txn probe: %d transactions of %d records, %d waits: each must be at least 1", n, records, len(waits))
	}
	if ids != 1 && ids != 2 {
		return fmt.Errorf("bench: txn probe: -txn-probe-ids %d: 1 or 2", ids)
	}
	topic := fmt.Sprintf("bench-txnprobe-%d", time.Now().UnixNano())
	txnIDs := []string{topic + "-txn"}
	if ids == 2 {
		txnIDs = []string{topic + "-txn-a", topic + "-txn-b"}
	}
	prods := make([]*kgo.Client, len(txnIDs))
	opened := make([]time.Time, len(txnIDs)) // each id's opening commit
	for i, id := range txnIDs {
		prod, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ClientID("weir-bench-txnprobe"),
			kgo.TransactionalID(id), kgo.AllowAutoTopicCreation(),
			kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err != nil {
			return fmt.Errorf("bench: txn probe: %w", err)
		}
		defer prod.Close()
		prods[i] = prod
		// One committed transaction per id first: the first creates the
		// topic (auto-created by the broker, one partition); each opens its
		// producer id.
		var t probeTxn
		if err := probeOne(ctx, prod, topic, -1, records, &t); err != nil {
			return err
		}
		opened[i] = t.committed
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
					return // the opening transactions, or not a first record
				}
				mu.Lock()
				txns[i].seen = now
				mu.Unlock()
				seen++
			})
		}
	}()

	if ids == 1 {
		err = probeSerial(ctx, prods[0], topic, records, waits, txns, &mu, opened[0])
	} else {
		err = probeOverlapped(ctx, prods, topic, records, waits, txns, &mu, opened)
	}
	if err != nil {
		return err
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
	printTxnProbe(w, txns, waits, ids)
	if csv != "" {
		return writeTxnProbeCSV(csv, txns)
	}
	return nil
}

// storeTxn records t as transaction i, keeping the consumer's seen time
// (zero: not read yet).
func storeTxn(txns []probeTxn, mu *sync.Mutex, i int, t probeTxn) {
	mu.Lock()
	t.seen = txns[i].seen
	txns[i] = t
	mu.Unlock()
}

// probeSerial runs len(txns) transactions back to back on one producer:
// wait, produce, flush, commit, the next.
func probeSerial(ctx context.Context, prod *kgo.Client, topic string, records int, waits []time.Duration, txns []probeTxn, mu *sync.Mutex, last time.Time) error {
	for i := range txns {
		t := probeTxn{wait: waits[i%len(waits)]}
		time.Sleep(t.wait)
		if err := probeOne(ctx, prod, topic, i, records, &t); err != nil {
			return err
		}
		t.cycle = t.committed.Sub(last)
		t.idGap = t.start.Sub(last)
		last = t.committed
		storeTxn(txns, mu, i, t)
	}
	return nil
}

// probeOverlapped runs len(txns) transactions on two producers in turn
// (transaction i on prods[i%2]), as an exactly-once engine with consumer
// offsets could: transaction i+1 produces and flushes while i commits (its
// first produce right after i's EndTxn is sent, after the wait), and sends
// its own EndTxn only once i's has returned, since its offsets would
// include i's range. If i's commit fails, i+1 is aborted and the probe
// stops. Transaction i+2 begins on i's producer only after i's EndTxn has
// returned (i+1 waited for it), as kgo requires.
func probeOverlapped(ctx context.Context, prods []*kgo.Client, topic string, records int, waits []time.Duration, txns []probeTxn, mu *sync.Mutex, opened []time.Time) error {
	last := opened[1]
	own := [2]time.Time{opened[0], opened[1]} // each id's last EndTxn return
	type ended struct {
		t   probeTxn
		err error
	}
	var prev chan ended // the previous transaction's EndTxn; nil before the first
	// collect waits for the previous EndTxn and stores its transaction.
	collect := func(i int) error {
		e := <-prev
		if e.err != nil {
			return e.err
		}
		e.t.cycle = e.t.committed.Sub(last)
		last = e.t.committed
		own[i%2] = e.t.committed
		storeTxn(txns, mu, i, e.t)
		return nil
	}
	for i := range txns {
		prod := prods[i%2]
		t := probeTxn{wait: waits[i%len(waits)]}
		time.Sleep(t.wait)
		// i-2's EndTxn has returned: i-1 waited for it before its own.
		idLast := own[i%2]
		if err := probeProduce(ctx, prod, topic, i, records, &t); err != nil {
			if prev != nil {
				<-prev
			}
			return err
		}
		if prev != nil {
			if err := collect(i - 1); err != nil {
				// Its offsets would include the failed range: abort.
				_ = prod.EndTransaction(ctx, kgo.TryAbort)
				return err
			}
		}
		next := make(chan ended, 1)
		e0 := time.Now()
		t.hold = e0.Sub(t.start) - t.flush
		t.idGap = t.start.Sub(idLast)
		go func(t probeTxn) {
			err := prod.EndTransaction(ctx, kgo.TryCommit)
			t.committed = time.Now()
			t.endTxn = t.committed.Sub(e0)
			if err != nil {
				err = fmt.Errorf("bench: txn probe: commit: %w", err)
			}
			next <- ended{t, err}
		}(t)
		prev = next
	}
	return collect(len(txns) - 1)
}

// probeOne runs one transaction of records records keyed i and valued by
// their index, filling t's times and t.committed.
func probeOne(ctx context.Context, cl *kgo.Client, topic string, i, records int, t *probeTxn) error {
	if err := probeProduce(ctx, cl, topic, i, records, t); err != nil {
		return err
	}
	e0 := time.Now()
	t.hold = e0.Sub(t.start) - t.flush
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return fmt.Errorf("bench: txn probe: commit: %w", err)
	}
	t.committed = time.Now()
	t.endTxn = t.committed.Sub(e0)
	return nil
}

// probeProduce begins a transaction on cl and produces records records
// keyed i and valued by their index, filling t.start, t.firstAck and
// t.flush; the transaction is left open.
func probeProduce(ctx context.Context, cl *kgo.Client, topic string, i, records int, t *probeTxn) error {
	if err := cl.BeginTransaction(); err != nil {
		return fmt.Errorf("bench: txn probe: begin: %w", err)
	}
	key := []byte(strconv.Itoa(i))
	start := time.Now()
	t.start = start
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
	return nil
}

// writeTxnProbeCSV writes every transaction's times in ms, one a line,
// for histograms (-txn-probe-csv). total is the first produce until
// visible.
func writeTxnProbeCSV(path string, txns []probeTxn) error {
	var b strings.Builder
	b.WriteString("txn,wait_ms,first_ack_ms,flush_ms,endtxn_ms,visible_ms,hold_ms,total_ms,cycle_ms,id_gap_ms\n")
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	for i, t := range txns {
		fmt.Fprintf(&b, "%d,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f\n", i, ms(t.wait), ms(t.firstAck), ms(t.flush),
			ms(t.endTxn), ms(t.visible), ms(t.hold), ms(t.total()), ms(t.cycle), ms(t.idGap))
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("bench: -txn-probe-csv: %w", err)
	}
	return nil
}

// total is the first produce until the consumer read the transaction: a
// record's latency at best.
func (t probeTxn) total() time.Duration { return t.flush + t.hold + t.endTxn + t.visible }

// printTxnProbe prints the probe's quantiles, one row per wait; ids is
// the number of transactional ids, for the first column. The cycle rate
// is a row's transactions over the sum of their cycles.
func printTxnProbe(w io.Writer, txns []probeTxn, waits []time.Duration, ids int) {
	fmt.Fprintln(w, "| ids | wait | txns | first ack ms p50 / p90 / p99 / max | first acks 15–30 ms | first acks 15–150 ms | EndTxn ms p50 / p99 | visible after EndTxn ms p50 / p99 | produce→visible ms p50 / p99 / max | cycles/s |")
	fmt.Fprintln(w, "|---:|---|---:|---|---:|---:|---|---|---|---:|")
	for _, wait := range slices.Compact(slices.Sorted(slices.Values(waits))) {
		var first, end, vis, total []time.Duration
		var cycles time.Duration
		retry, slow := 0, 0
		for _, t := range txns {
			if t.wait != wait {
				continue
			}
			first = append(first, t.firstAck)
			end = append(end, t.endTxn)
			vis = append(vis, t.visible)
			total = append(total, t.total())
			cycles += t.cycle
			if t.firstAck >= 15*time.Millisecond && t.firstAck < 150*time.Millisecond {
				slow++
				if t.firstAck < 30*time.Millisecond {
					retry++
				}
			}
		}
		rate := 0.0
		if cycles > 0 {
			rate = float64(len(first)) / cycles.Seconds()
		}
		share := func(k int) string { return fmt.Sprintf("%d (%.1f %%)", k, 100*float64(k)/float64(len(first))) }
		fmt.Fprintf(w, "| %d | %v | %d | %s | %s | %s | %s | %s | %s | %.0f |\n", ids, wait, len(first),
			probeQuantiles(first, 0.5, 0.9, 0.99, 1), share(retry), share(slow), probeQuantiles(end, 0.5, 0.99),
			probeQuantiles(vis, 0.5, 0.99), probeQuantiles(total, 0.5, 0.99, 1), rate)
	}
}

// probeQuantiles formats the quantiles ps of ds in milliseconds: the
// element at index p·(len−1) of the sorted durations.
func probeQuantiles(ds []time.Duration, ps ...float64) string {
	if len(ds) == 0 {
		return ""
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = fmt.Sprintf("%.1f", float64(s[int(p*float64(len(s)-1))])/float64(time.Millisecond))
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
