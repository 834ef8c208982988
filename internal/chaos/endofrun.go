package chaos

import (
	"strconv"
	"strings"
	"time"

	"github.com/weirstream/weir/internal/kafka"
)

// An extended run ends with one end-of-run record per partition: once
// every input is written, the runner writes, to each partition p, one
// record of a reserved account whose key hashes to p, stamped
// EndOfRunDelay past the last input. It advances the outer join's stream
// time in p's task far enough that every window of an input closes and
// the join's scan emits every input still waiting alone, so the verifier
// can require every good input in some outer-join output; without it the
// last 2 × (JoinWithin + OuterGrace) of event time on each partition —
// 40% of a 20,000-record run — could not be checked, since no later record
// moves stream time there.
//
// The record cannot make an input late: the input topic and the
// repartition topic "by-key" are both partitioned by the key's murmur2 hash
// (the producer's default partitioner and kafka.PartitionForKey), and the
// repartition keeps the key, so partition p of "by-key" is written only by
// the task of input partition p, in that partition's order, and the
// end-of-run record, written after every input was acknowledged, comes
// after every input there. Only a replay's second copy of an input can
// arrive after it, which the outer join then drops as late: a duplicate,
// whose first copy was joined before.
//
// The reserved accounts go through every branch like any account (a copy,
// an aggregate, a window, a session, a region, a foreign-key join result);
// the verifier skips their outputs in every check but the region totals,
// whose expected totals count them (each a fold of one record: region 1,
// sum 0).

// EndOfRunDelay is how far past the last input the end-of-run records are
// stamped: more than 2 × (JoinWithin + OuterGrace), the most an unmatched
// record may still wait behind stream time (see outerExempt).
const EndOfRunDelay = 20 * time.Second

// endOfRunPrefix begins every reserved account's key; no account's key
// (KeyName) begins so.
const endOfRunPrefix = "end-of-run-"

// isEndOfRun reports whether an output key — an account's, or a window's
// or session's "key@[start,end)" — is a reserved account's.
func isEndOfRun(key string) bool { return strings.HasPrefix(key, endOfRunPrefix) }

// endOfRunKeys returns, for each partition p, the first key
// "end-of-run-<i>" (i = 0, 1, ...) that hashes to p.
func endOfRunKeys() [Partitions]string {
	var keys [Partitions]string
	for i, found := 0, 0; found < Partitions; i++ {
		key := endOfRunPrefix + strconv.Itoa(i)
		p, err := kafka.PartitionForKey([]byte(key), Partitions)
		if err != nil {
			panic(err) // Partitions is positive
		}
		if keys[p] == "" {
			keys[p], found = key, found+1
		}
	}
	return keys
}

// EndOfRun returns the end-of-run records after n inputs, by partition:
// partition p's is a good record of its reserved account with id n +
// EndOfRunDelay's milliseconds + p — so that, as for every input, its id
// is its timestamp's offset from the base time in ms (stamp) — K 1 and
// amount 0.
func EndOfRun(n int) []Input {
	keys := endOfRunKeys()
	out := make([]Input, Partitions)
	for p, key := range keys {
		out[p] = Input{Txn: Txn{ID: int64(n) + EndOfRunDelay.Milliseconds() + int64(p), Key: key, K: 1}}
	}
	return out
}
