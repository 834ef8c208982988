package main

import (
	"encoding/binary"
	"strings"
	"sync"
)

// The rows with record caches on: the word count with
// weir.WithCacheMaxBytes and Kafka Streams' statestore.cache.max.bytes both
// at cacheMaxBytes, Kafka Streams' default. Updates of a word within a
// commit interval are coalesced, so these rows write fewer outputs than one
// per word occurrence: the harness waits for the final count of every word
// instead (finals).
const (
	sysWeirEOSCache     = "weir-cont-eos-cache"
	sysWeirMBCache      = "weir-mb-eos-cache"
	sysKStreamsEOSCache = "kstreams-eos-cache"

	cacheMaxBytes = 10 << 20
)

// cachedSystems are the rows with record caches on.
var cachedSystems = []string{sysWeirEOSCache, sysWeirMBCache, sysKStreamsEOSCache}

// cached reports whether sys runs with record caches on.
func cached(sys string) bool {
	base, _, _ := splitEpoch(sys)
	return strings.HasSuffix(base, "-cache")
}

// finals tracks the latest count read for each word of the word count's
// output and how many words have reached their expected final count.
type finals struct {
	mu      sync.Mutex
	want    map[string]int64
	latest  map[string]int64
	reached int
}

func newFinals(want map[string]int64) *finals {
	return &finals{want: want, latest: make(map[string]int64, len(want))}
}

// see takes one output record: key the word, value its count (8 bytes,
// big-endian, as weir's serde.Int64 and Kafka Streams' Serdes.Long write).
func (f *finals) see(key, value []byte) {
	if len(value) != 8 {
		return
	}
	n := int64(binary.BigEndian.Uint64(value))
	f.mu.Lock()
	defer f.mu.Unlock()
	w := string(key)
	want, ok := f.want[w]
	if !ok {
		return
	}
	old, had := f.latest[w]
	f.latest[w] = n
	switch {
	case n == want && !(had && old == want):
		f.reached++
	case n != want && had && old == want:
		f.reached--
	}
}

// complete reports whether every word's latest count is its final count.
func (f *finals) complete() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reached == len(f.want)
}
