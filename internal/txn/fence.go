package txn

import (
	"context"
	"fmt"
)

// Fence ends whatever the producers of cfg.TransactionalID left behind:
// it initializes a producer with that id (InitProducerId, KIP-98), which
// bumps the id's epoch, so that every older producer of the id is fenced
// (its next transactional request fails with ErrFenced), and makes the
// transaction coordinator abort the transaction the id left open at once
// rather than at its transaction timeout. It returns once the coordinator
// has answered with the new epoch: the abort markers are written by then
// (a coordinator still aborting answers CONCURRENT_TRANSACTIONS, which is
// retried until ctx ends, as are the other coordinator errors), so the
// last stable offset of every partition the transaction wrote has moved
// past it. The producer is then closed without beginning anything.
//
// A survivor calls it on the transactional id of an instance that left
// its group (died, or was expelled while stalled), so that neither the
// restore of the changelogs it wrote nor read_committed readers of its
// outputs wait for the dead instance's transaction timeout. Fencing is
// idempotent: an id with no open transaction only gets a new epoch, and
// an instance that comes back with the id initializes its own producer,
// which bumps the epoch again. cfg is a Session's configuration; it runs
// on the client library kafka.ResolveClient(cfg.Kafka.Client) picks, as
// New does.
func Fence(ctx context.Context, cfg Config) error {
	s, err := New(ctx, cfg)
	if err != nil {
		return fmt.Errorf("exactlyonce: fence %q: %w", cfg.TransactionalID, err)
	}
	return s.Close()
}
