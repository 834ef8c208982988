package kafka

import (
	"maps"
	"sync"
	"sync/atomic"
)

// AckedOffsets keeps, for each partition of the topics it tracks, the
// offset after the last record a producer had acknowledged there: where
// this producer's own records end, whoever else writes to the partition.
// The runtime checkpoints its stores with it (a checkpoint read as the
// changelog's end could count another member's records). The producers
// note every acknowledged record; one of an untracked topic costs a
// map lookup. The zero value is ready; it is safe for concurrent use.
type AckedOffsets struct {
	// tracked is the set of tracked topics, copied on write.
	tracked atomic.Pointer[map[string]struct{}]
	trackMu sync.Mutex
	mu      sync.Mutex
	next    map[topicPartition]int64
}

// Track makes a keep the acknowledged offsets of topic from now on.
func (a *AckedOffsets) Track(topic string) {
	if a.tracks(topic) {
		return
	}
	a.trackMu.Lock()
	defer a.trackMu.Unlock()
	m := map[string]struct{}{}
	if old := a.tracked.Load(); old != nil {
		maps.Copy(m, *old)
	}
	m[topic] = struct{}{}
	a.tracked.Store(&m)
}

func (a *AckedOffsets) tracks(topic string) bool {
	m := a.tracked.Load()
	if m == nil {
		return false
	}
	_, ok := (*m)[topic]
	return ok
}

// Note records that the producer's record at offset of the partition was
// acknowledged. Offsets below one already noted are kept out: the
// partition's acknowledgements come in order, and a retried record is
// acknowledged where it was written.
func (a *AckedOffsets) Note(topic string, partition int32, offset int64) {
	if offset < 0 || !a.tracks(topic) {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.next == nil {
		a.next = map[topicPartition]int64{}
	}
	k := topicPartition{topic, partition}
	if next, ok := a.next[k]; !ok || offset+1 > next {
		a.next[k] = offset + 1
	}
}

// Next returns the offset after the last record of the partition the
// producer had acknowledged, and false if it had none since the topic was
// tracked.
func (a *AckedOffsets) Next(topic string, partition int32) (int64, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	next, ok := a.next[topicPartition{topic, partition}]
	return next, ok
}
