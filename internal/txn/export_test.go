package txn

import (
	"fmt"
	"time"
)

// Test hooks.

// SetTxnRetry sets sarama's Transaction.Retry.Max and the cap of its
// backoff (txnBackoff).
func SetTxnRetry(cfg *Config, max int, backoff time.Duration) {
	cfg.txnRetryMax, cfg.txnRetryBackoff = max, backoff
}

// TxnBackoffOf returns the backoff function of the sarama configuration
// cfg builds for its transactional requests.
func TxnBackoffOf(cfg Config) (func(retries, maxRetries int) time.Duration, error) {
	sc, err := cfg.withDefaults().saramaConfig(newConnWatch())
	if err != nil {
		return nil, err
	}
	return sc.Producer.Transaction.Retry.BackoffFunc, nil
}

// DisableReinit stops the session from re-initializing its producer after
// a connection failure (to show what that defends against).
func DisableReinit(cfg *Config) { cfg.noReinit = true }

// Inits returns how many producers the session initialized.
func Inits(s *Session) int64 {
	n, _ := s.impl.stats()
	return n
}

// ConnFailures returns how many of the session's connections failed in use.
func ConnFailures(s *Session) uint64 {
	_, n := s.impl.stats()
	return n
}

// Franz reports whether s runs on franz-go, and if so whether its
// producer runs transactions v2 (KIP-890 part 2).
func Franz(s *Session) (franz, v2 bool) {
	f, ok := s.impl.(*franzSession)
	if !ok {
		return false, false
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	return true, f.p != nil && f.p.v2
}

// SASLOf returns the SASL mechanism of the sarama configuration cfg builds
// and, for SCRAM, the client-first-message of its SCRAM client.
func SASLOf(cfg Config) (mechanism, first string, err error) {
	sc, err := cfg.withDefaults().saramaConfig(newConnWatch())
	if err != nil {
		return "", "", err
	}
	if !sc.Net.SASL.Enable {
		return "", "", fmt.Errorf("SASL not enabled")
	}
	if f := sc.Net.SASL.SCRAMClientGeneratorFunc; f != nil {
		c := f()
		if err := c.Begin(sc.Net.SASL.User, sc.Net.SASL.Password, ""); err != nil {
			return "", "", err
		}
		if first, err = c.Step(""); err != nil {
			return "", "", err
		}
	}
	return string(sc.Net.SASL.Mechanism), first, nil
}

// LingerState reports whether s's adaptive linger is holding records and how
// many it holds.
func LingerState(s *Session) (on bool, held int) {
	ss, ok := s.impl.(*saramaSession)
	if !ok || ss.linger == nil {
		return false, 0
	}
	return ss.linger.State()
}

// SerialOffsets makes a franz-go session send the offsets only once every
// record of the transaction has its outcome, as sarama does (to measure
// what overlapping them saves).
func SerialOffsets(cfg *Config) { cfg.serialOffsets = true }
