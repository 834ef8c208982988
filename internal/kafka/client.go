package kafka

import (
	"fmt"
	"os"
)

// Client names the Kafka client library that carries a [Config]'s
// connections. Every type of this package and of internal/txn keeps its
// API whichever client is under it: the engines never see a client's
// types.
type Client string

// The clients weir runs on.
const (
	// ClientSarama is github.com/IBM/sarama.
	ClientSarama Client = "sarama"
	// ClientFranz is github.com/twmb/franz-go (kgo).
	ClientFranz Client = "franz-go"
)

// ClientEnv is the environment variable that picks the client when
// [Config.Client] is empty, so that one test suite runs on either client
// unchanged ("sarama" or "franz-go").
const ClientEnv = "WEIR_KAFKA_CLIENT"

// DefaultClient is the client used when neither [Config.Client] nor
// [ClientEnv] names one: franz-go, which moves more records per CPU
// second, overlaps a transaction's offsets with its records and speaks
// Kafka 4's transactions (docs/kafka.md has the figures). sarama stays
// supported, by name.
const DefaultClient = ClientFranz

// ResolveClient returns the client c names, or the one [ClientEnv] names
// when c is empty, or [DefaultClient]. Errors wrap [ErrConfig].
func ResolveClient(c Client) (Client, error) {
	src := "client"
	if c == "" {
		c, src = Client(os.Getenv(ClientEnv)), ClientEnv
	}
	switch c {
	case "":
		return DefaultClient, nil
	case ClientSarama, ClientFranz:
		return c, nil
	}
	return "", fmt.Errorf("%w: %s %q is not a Kafka client weir runs on (want %q or %q)",
		ErrConfig, src, string(c), ClientSarama, ClientFranz)
}
