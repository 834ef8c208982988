package chaos

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// The database restarted mid-run: with the PostgreSQL branches on
// (pgsink.go) and Config.DBRestarts > 0, each such event takes the
// database down (`bash DBScript down`, scripts/postgres/outage.sh: a fast
// shutdown that cuts every open connection), keeps it down for one to
// three gaps, and brings it back (`bash DBScript up`) with its data. The
// sink's writes fail meanwhile and are retried with back-off (the tasks'
// epochs and batches wait, their Kafka commits too); the verifier then
// finds every input in the tables exactly once, as after any other event.

// dbRestart is the event: the database down for a while, then up again.
func (s *scenario) dbRestart(ctx context.Context) error {
	down := s.cfg.Gap + time.Duration(s.rng.Int64N(int64(2*s.cfg.Gap)))
	if err := s.dbScript(ctx, "down"); err != nil {
		return err
	}
	s.res.DBRestarts++
	s.logf("database down (%s down) for %v", s.cfg.DBScript, down.Round(time.Millisecond))
	// The database comes back even when the scenario is cancelled: the
	// next scenario, and the verifier, need it.
	err := s.sleep(ctx, down)
	if uerr := s.dbScript(context.WithoutCancel(ctx), "up"); uerr != nil {
		return uerr
	}
	s.logf("database up again")
	return err
}

// dbScript runs `bash DBScript verb`.
func (s *scenario) dbScript(ctx context.Context, verb string) error {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(cctx, "bash", s.cfg.DBScript, verb).CombinedOutput()
	if err != nil {
		return fmt.Errorf("chaos: %s %s: %w: %s", s.cfg.DBScript, verb, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// dbRestarts returns how many database restarts the scenario plans: none
// without the PostgreSQL branches or without a script.
func (s *scenario) dbRestarts() int {
	if s.topics.pgPrefix() == "" || s.cfg.DBScript == "" {
		return 0
	}
	return s.cfg.DBRestarts
}

// postgres is the scenario line's part about the PostgreSQL branches:
// " postgres=on db_restarts=N" when the scenario had them, "" otherwise.
func (r Result) postgres() string {
	if !r.PG {
		return ""
	}
	return fmt.Sprintf(" postgres=on db_restarts=%d", r.DBRestarts)
}
