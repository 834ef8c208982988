package kafka

import (
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A member keeps its assignment while its group coordinator moves.
//
// When the broker that coordinates the group dies, every heartbeat, join
// and sync fails (connection refused, NOT_COORDINATOR, then
// COORDINATOR_LOAD_IN_PROGRESS) until the cluster has moved the group to
// another broker — on Kafka with KRaft the broker's session timeout and an
// election, 10–20 s. The new coordinator loads the group from
// __consumer_offsets with every member's session started afresh, so a
// member that reaches it keeps its membership and its partitions. kgo
// retries those requests for the session timeout only (its default), then
// ends the session: every partition is lost (onLost), every task stops,
// and after the rejoin every task restores — seconds without owners, and
// queries without answers, for a coordinator's move that took none of the
// partitions away. The Java consumer keeps its assignment while it looks
// for the coordinator, and so does a member here: the group requests are
// retried for coordinatorWait, at most every heartbeat interval (kgo's
// backoff grows to 5 s, past a short session), and the session ends only
// when the coordinator answers that the member is gone (UNKNOWN_MEMBER_ID,
// ILLEGAL_GENERATION), or after coordinatorWait.
//
// Keeping the partitions meanwhile is safe: a member the group did drop
// cannot commit (its offsets and transactional offsets carry its
// generation, which the coordinator refuses), so its work is redone by the
// new owner; only its local answers lag, as any owner's do between
// commits.

// coordinatorWait is how long a member retries its group requests while
// the coordinator cannot be reached: the rebalance timeout (the time the
// group gives a member to rejoin), at least the session timeout.
func coordinatorWait(cfg GroupConfig) time.Duration {
	return max(cfg.SessionTimeout, cfg.RebalanceTimeout)
}

// otherRetryTimeout is kgo's retry timeout of every other request.
const otherRetryTimeout = 30 * time.Second

// coordinatorOpts are the kgo options of a group member that keep its
// assignment through a coordinator's move.
func coordinatorOpts(cfg GroupConfig) []kgo.Opt {
	wait := coordinatorWait(cfg)
	backoffMax := max(cfg.HeartbeatInterval, 100*time.Millisecond)
	// Enough tries to retry for wait at backoffMax; RetryTimeoutFn bounds
	// them in time (kgo stops at whichever comes first).
	tries := int(max(wait, otherRetryTimeout)/backoffMax) + 20
	return []kgo.Opt{
		kgo.RetryTimeoutFn(func(key int16) time.Duration {
			switch key {
			case kmsg.Heartbeat.Int16(), kmsg.JoinGroup.Int16(), kmsg.SyncGroup.Int16():
				return wait
			}
			return otherRetryTimeout
		}),
		kgo.RequestRetries(tries),
		kgo.RetryBackoffFn(func(fails int) time.Duration {
			d := 100 * time.Millisecond << min(max(fails-1, 0), 6)
			return min(d, backoffMax)
		}),
	}
}
