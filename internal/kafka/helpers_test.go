package kafka_test

import (
	"log"
	"os"

	"github.com/IBM/sarama"

	"github.com/weirstream/weir/internal/kafkatest"
)

// embeddedDefaults are the options of kfake-only tests.
var embeddedDefaults = kafkatest.KfakeOptions()

// SARAMA_DEBUG=1 sends sarama's process-global log to stderr while
// debugging a test; weir itself never touches sarama.Logger.
func init() {
	if os.Getenv("SARAMA_DEBUG") != "" {
		sarama.Logger = log.New(os.Stderr, "[sarama] ", log.Lmicroseconds)
	}
}
