// Package kafkaverify is what a verifier needs from Kafka, without package
// testing, so that programs (cmd/weir-chaos and its suite, internal/chaos)
// share it with the tests (through internal/kafkatest): the options of the
// in-process broker they start, read_committed reads of a whole topic, end
// offsets.
//
// It talks to Kafka through franz-go's kgo, not through weir's sarama
// adapter, so that a verifier does not share the bugs of the code it
// verifies.
package kafkaverify

import (
	"time"

	"github.com/weirstream/weir/embedded"
)

// BrokerOptions returns the options of the in-process broker tests and the
// chaos suite start: defaults, but the 1 s minimum session timeout of the
// CI broker (scripts/kafka), so that one set of timeouts is accepted by
// both.
func BrokerOptions() embedded.Options {
	return embedded.Options{GroupMinSessionTimeout: time.Second}
}
