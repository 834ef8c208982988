package txn

import "time"

// Test hooks.

// SetTxnRetry sets sarama's Transaction.Retry.Max and .Backoff.
func SetTxnRetry(cfg *Config, max int, backoff time.Duration) {
	cfg.txnRetryMax, cfg.txnRetryBackoff = max, backoff
}

// DisableReinit stops the session from re-initializing its producer after
// a connection failure (to show what that defends against).
func DisableReinit(cfg *Config) { cfg.noReinit = true }

// Inits returns how many producers the session initialized.
func Inits(s *Session) int64 { return s.inits.Load() }

// ConnFailures returns how many of the session's connections failed in use.
func ConnFailures(s *Session) uint64 { return s.watch.count() }
