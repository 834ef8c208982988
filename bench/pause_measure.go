package main

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"
)

// The pause scenario's measurement (pause.go): the output's arrivals per
// partition and each event's pauses computed from them.

// murmur2 is the Java client's murmur2 (org.apache.kafka.common.utils.
// Utils.murmur2), whose positive value mod the partition count is the
// default partitioner's choice for a keyed record.
func murmur2(data []byte) int32 {
	const seed, m, r = uint32(0x9747b28c), uint32(0x5bd1e995), 24
	n := len(data)
	h := seed ^ uint32(n)
	for i := 0; i+4 <= n; i += 4 {
		k := binary.LittleEndian.Uint32(data[i:])
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	tail := data[n&^3:]
	switch len(tail) {
	case 3:
		h ^= uint32(tail[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(tail[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(tail[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h)
}

// keyPartition is the Java client's default partition of key.
func keyPartition(key string, n int32) int32 { return (murmur2([]byte(key)) & 0x7fffffff) % n }

func pauseKey(i int) string { return fmt.Sprintf("w%07d", i) }

// watch reads the output topic (read_committed, from the start) and
// records, once recording starts, each partition's arrival times.
type watch struct {
	total    atomic.Int64
	last     [pausePartitions]atomic.Int64 // unix nanos of each partition's last arrival
	mu       sync.Mutex
	on       bool
	arrivals [pausePartitions][]time.Time
	cons     sarama.Consumer
	client   sarama.Client
	pcs      []sarama.PartitionConsumer
}

func (pr *pauseRunner) newWatch(topic string) (*watch, error) {
	cfg := saramaConfig()
	cfg.Consumer.IsolationLevel = sarama.ReadCommitted
	cfg.Consumer.Fetch.Default = 4 << 20
	cfg.Consumer.MaxWaitTime = 50 * time.Millisecond
	client, err := sarama.NewClient(pr.h.addrs, cfg)
	if err != nil {
		return nil, err
	}
	cons, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		client.Close()
		return nil, err
	}
	w := &watch{cons: cons, client: client}
	for p := range int32(pausePartitions) {
		var pc sarama.PartitionConsumer
		for i := 0; ; i++ { // a leader just elected may still answer NOT_LEADER
			if pc, err = cons.ConsumePartition(topic, p, sarama.OffsetOldest); err == nil {
				break
			} else if i > 50 {
				w.close()
				return nil, err
			}
			_ = client.RefreshMetadata(topic)
			time.Sleep(100 * time.Millisecond)
		}
		w.pcs = append(w.pcs, pc)
		go func() {
			for range pc.Errors() {
			}
		}()
		go func() {
			for range pc.Messages() {
				now := time.Now()
				w.total.Add(1)
				w.last[p].Store(now.UnixNano())
				w.mu.Lock()
				if w.on {
					w.arrivals[p] = append(w.arrivals[p], now)
				}
				w.mu.Unlock()
			}
		}()
	}
	return w, nil
}

func (w *watch) record() { w.mu.Lock(); w.on = true; w.mu.Unlock() }

// allMovedSince reports whether every partition had output after t.
func (w *watch) allMovedSince(t time.Time) bool { return w.moving(t) == pausePartitions }

// moving counts the partitions with output after t.
func (w *watch) moving(t time.Time) int {
	n := 0
	for p := range w.last {
		if w.last[p].Load() >= t.UnixNano() {
			n++
		}
	}
	return n
}

func (w *watch) close() {
	for _, pc := range w.pcs {
		_ = pc.Close()
	}
	_ = w.cons.Close()
	_ = w.client.Close()
}

// snapshot copies the arrivals recorded so far.
func (w *watch) snapshot() [pausePartitions][]time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out [pausePartitions][]time.Time
	for p := range w.arrivals {
		out[p] = append([]time.Time(nil), w.arrivals[p]...)
	}
	return out
}

// eventResult is one event's measurement.
type eventResult struct {
	event   string
	at      time.Time
	window  time.Duration
	pauses  []time.Duration // per partition, sorted
	resumed time.Duration   // event → every partition moving after its longest gap
	stuck   int             // partitions without output in the window's last 2 s
	rate    []float64       // total output rec/s per pauseBin, from at-3s to at+window
	preBins int             // bins of rate before the event
}

// pauseRow is one configuration's results.
type pauseRow struct {
	cfg      pauseConfig
	skip     string
	err      string
	backlog  time.Duration // start → the preloaded keys counted, every partition moving
	rssKiB   []int64       // per instance, after the settle time
	diskB    []int64
	events   []eventResult
	instLogs []string
}

// measure computes an event's pauses from the arrivals.
func measure(arr [pausePartitions][]time.Time, ev string, at time.Time, win time.Duration) eventResult {
	r := eventResult{event: ev, at: at, window: win}
	end := at.Add(win)
	for p := range arr {
		prev, longest, resumedAt := at, time.Duration(0), at
		for _, t := range arr[p] {
			if !t.After(at) {
				continue
			}
			if t.After(end) {
				break
			}
			if g := t.Sub(prev); g > longest {
				longest, resumedAt = g, t
			}
			prev = t
		}
		if g := end.Sub(prev); g > longest { // never moved again in the window
			longest, resumedAt = g, end
		}
		if end.Sub(prev) > 2*time.Second {
			r.stuck++
		}
		r.pauses = append(r.pauses, longest)
		r.resumed = max(r.resumed, resumedAt.Sub(at))
	}
	slices.Sort(r.pauses)
	from := at.Add(-3 * time.Second)
	n := int((win + 3*time.Second) / pauseBin)
	r.preBins = int(3 * time.Second / pauseBin)
	counts := make([]int, n)
	for p := range arr {
		for _, t := range arr[p] {
			if i := int(t.Sub(from) / pauseBin); t.After(from) && i < n {
				counts[i]++
			}
		}
	}
	for _, c := range counts {
		r.rate = append(r.rate, float64(c)/pauseBin.Seconds())
	}
	return r
}

func (r eventResult) p50() time.Duration { return r.pauses[len(r.pauses)/2] }
func (r eventResult) max() time.Duration { return r.pauses[len(r.pauses)-1] }
