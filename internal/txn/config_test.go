package txn_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/weirstream/weir/internal/kafka"
	"github.com/weirstream/weir/internal/txn"
)

func TestConfigValidate(t *testing.T) {
	ok := txn.Config{
		Kafka:           kafka.Config{Brokers: []string{"127.0.0.1:1"}},
		TransactionalID: "app-1",
	}
	require.NoError(t, ok.Validate())

	for name, tc := range map[string]struct {
		mod  func(*txn.Config)
		want string
	}{
		"empty id":             {func(c *txn.Config) { c.TransactionalID = "" }, "empty transactional id"},
		"no brokers":           {func(c *txn.Config) { c.Kafka.Brokers = nil }, "no brokers"},
		"timeout = session":    {func(c *txn.Config) { c.TransactionTimeout, c.SessionTimeout = 10*time.Second, 10*time.Second }, "not below"},
		"timeout > session":    {func(c *txn.Config) { c.TransactionTimeout = time.Minute }, "not below"}, // default session 45 s
		"negative timeout":     {func(c *txn.Config) { c.RequestTimeout = -time.Second }, "negative"},
		"tiny timeout":         {func(c *txn.Config) { c.TransactionTimeout = time.Microsecond }, "out of range"},
		"tiny request timeout": {func(c *txn.Config) { c.RequestTimeout = time.Millisecond }, "request timeout"},
		"unknown sasl": {func(c *txn.Config) {
			c.Kafka.SASL = &kafka.SASL{Mechanism: "GSSAPI", User: "u", Password: "p"}
		}, "unsupported SASL mechanism"},
		"bad sasl": {func(c *txn.Config) { c.Kafka.SASL = &kafka.SASL{Mechanism: kafka.SASLPlain} }, "user"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := ok
			tc.mod(&cfg)
			err := cfg.Validate()
			require.ErrorIs(t, err, txn.ErrConfig)
			require.ErrorContains(t, err, tc.want)
			_, err = txn.New(t.Context(), cfg)
			require.ErrorIs(t, err, txn.ErrConfig)
		})
	}

	// The default transaction timeout fits a short session timeout.
	short := ok
	short.SessionTimeout = 6 * time.Second
	require.NoError(t, short.Validate())
	plain := ok
	plain.Kafka.SASL = &kafka.SASL{Mechanism: kafka.SASLPlain, User: "u", Password: "p"}
	require.NoError(t, plain.Validate())
}

// TestConfigSCRAM: the transactional producer authenticates with SCRAM
// through internal/kafka's client, as every other client of weir: a
// producer that accepted PLAIN alone could not run exactly-once on a SCRAM
// cluster.
func TestConfigSCRAM(t *testing.T) {
	for _, mech := range []string{kafka.SASLScramSHA256, kafka.SASLScramSHA512} {
		t.Run(mech, func(t *testing.T) {
			cfg := txn.Config{
				Kafka:           kafka.Config{Brokers: []string{"127.0.0.1:1"}, SASL: &kafka.SASL{Mechanism: mech, User: "u", Password: "p"}},
				TransactionalID: "app-1",
			}
			require.NoError(t, cfg.Validate())
			got, first, err := txn.SASLOf(cfg)
			require.NoError(t, err)
			require.Equal(t, mech, got)
			require.Regexp(t, `^n,,n=u,r=[A-Za-z0-9+/]{32}$`, first, "client-first-message of internal/kafka's SCRAM client")
		})
	}
}

// TestTxnBackoffStartsShort: sarama retries a transactional request after
// 10 ms, doubling to 100 ms, not after a flat 100 ms. A transaction begun
// right after the last one's EndTxn (the next epoch's held records, a
// transaction of offsets alone) is refused with CONCURRENT_TRANSACTIONS
// until the last one's markers are written, a few ms later; each waited
// 100 ms.
func TestTxnBackoffStartsShort(t *testing.T) {
	cfg := txn.Config{Kafka: kafka.Config{Brokers: []string{"127.0.0.1:1"}}, TransactionalID: "app-1"}
	backoff, err := txn.TxnBackoffOf(cfg)
	require.NoError(t, err)
	require.NotNil(t, backoff, "sarama's flat Transaction.Retry.Backoff")
	var got []time.Duration
	for r := range 10 {
		got = append(got, backoff(r, 10))
	}
	ms := time.Millisecond
	require.Equal(t, []time.Duration{10 * ms, 20 * ms, 40 * ms, 80 * ms, 100 * ms, 100 * ms, 100 * ms, 100 * ms, 100 * ms, 100 * ms}, got)

	// A test's shorter backoff (SetTxnRetry) caps every retry.
	txn.SetTxnRetry(&cfg, 3, 5*ms)
	backoff, err = txn.TxnBackoffOf(cfg)
	require.NoError(t, err)
	require.Equal(t, 5*ms, backoff(0, 3))
}
