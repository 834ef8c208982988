package tasks

import "time"

// markersWaitMaxHeld is the most records held during a commit for which
// the release still waits out the committed transaction's markers
// (markersPause). At 5,000 records a second and commits of 5–10 ms a
// runtime holds tens of records; saturated, at hundreds of thousands a
// second, thousands.
const markersWaitMaxHeld = 500

// markersPause is how long a commit behind waits, once committed, before
// it sends the held records into the next transaction: markersWait while
// few were held (a latency-bound epoch, where a produce refused with
// CONCURRENT_TRANSACTIONS costs the broker's 20 ms retry, twice the
// epoch), none past markersWaitMaxHeld (a saturated epoch, where the
// retry is spread over a large transaction and the tasks go on meanwhile,
// but a fixed wait lengthens every short epoch: 11–24 % of the stateless
// throughput at 10 ms epochs on Kafka 4.4).
func markersPause(held int) time.Duration {
	if held > markersWaitMaxHeld {
		return 0
	}
	return markersWait
}

// count is the number of records held.
func (h *heldSends) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.recs)
}
