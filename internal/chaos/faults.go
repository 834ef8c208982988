package chaos

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/weirstream/weir/internal/third_party/kfake"
)

// A brokerFault is one kfake fault injection: install returns a function
// that removes what is still installed.
type brokerFault struct {
	name string
	// txn marks faults of transactional requests, injected under
	// exactly-once only (at-least-once sends none).
	txn     bool
	install func(c *kfake.Cluster) (remove func())
}

// brokerFaults are cycled through by the fault events. On kfake's single
// node a coordinator cannot really move: NOT_COORDINATOR answers make the
// clients look the coordinator up again, as after a move.
var brokerFaults = []brokerFault{
	{"EndTxn UNKNOWN_PRODUCER_ID (abortable)", true, errFault(kerr.UnknownProducerID, kmsg.EndTxn)},
	{"EndTxn PRODUCER_FENCED (fenced producer)", true, errFault(kerr.ProducerFenced, kmsg.EndTxn)},
	{"EndTxn delayed 3s", true, delayFault(kmsg.EndTxn, 3*time.Second)},
	{"coordinator moved (NOT_COORDINATOR on group and transaction requests)", false,
		errFault(kerr.NotCoordinator, kmsg.EndTxn, kmsg.TxnOffsetCommit, kmsg.AddOffsetsToTxn, kmsg.OffsetCommit, kmsg.Heartbeat)},
	{"connections dropped (a Fetch and a Produce)", false, dropFault(kmsg.Fetch, kmsg.Produce)},
	{"EndTxn INVALID_TXN_STATE (outcome unknown)", true, errFault(kerr.InvalidTxnState, kmsg.EndTxn)},
	{"TxnOffsetCommit ILLEGAL_GENERATION (fenced member)", true, errFault(kerr.IllegalGeneration, kmsg.TxnOffsetCommit)},
}

// errFault answers the next request of the keys with err.
func errFault(err *kerr.Error, keys ...kmsg.Key) func(*kfake.Cluster) func() {
	return func(c *kfake.Cluster) func() {
		h := c.Fault(kfake.Fault{Keys: keys, Err: err, Count: 1})
		return h.Remove
	}
}

// delayFault holds the next request of key for d before the broker
// handles it.
func delayFault(key kmsg.Key, d time.Duration) func(*kfake.Cluster) func() {
	return func(c *kfake.Cluster) func() {
		var fired atomic.Bool
		c.ControlKey(int16(key), func(kmsg.Request) (kmsg.Response, error, bool) {
			c.DropControl()
			if !fired.Swap(true) {
				c.SleepControl(func() { time.Sleep(d) })
			}
			return nil, nil, false
		})
		return func() {}
	}
}

// dropFault closes the connection of the next request of each key.
func dropFault(keys ...kmsg.Key) func(*kfake.Cluster) func() {
	return func(c *kfake.Cluster) func() {
		for _, k := range keys {
			c.ControlKey(int16(k), func(kmsg.Request) (kmsg.Response, error, bool) {
				return nil, errors.New("chaos: connection dropped"), true
			})
		}
		return func() {}
	}
}
