package epochs

import (
	"context"
	"time"

	"github.com/weirstream/weir/internal/engine/tasks"
	"github.com/weirstream/weir/internal/kafka"
)

// Runtime is the part of a *tasks.Runtime the continuous engine uses once
// New has wired it (the driver, state applied behind commits): the tasks
// and the clock, the epoch end's commit (now or behind the claims), the
// rewind after a failure, and what the engine observes. New takes the
// whole runtime; everything after goes through this role, so that the
// engine's dependence on the runtime is these fifteen methods (seven of
// them tasks.EngineRole's).
type Runtime interface {
	tasks.EngineRole
	// Timed runs fn and adds its duration to phase.
	Timed(phase string, d *time.Duration, fn func() error) error
	// ObservePhase adds took to phase.
	ObservePhase(phase string, d *time.Duration, took time.Duration)
	// DiskLow reports a state volume too full to take an epoch.
	DiskLow() error
	// CommitTimed commits an epoch at positions, under the barrier.
	CommitTimed(ctx context.Context, positions tasks.Positions, s kafka.Session, ph *tasks.Phases) error
	// CanCommitBehind reports whether an epoch may commit behind the
	// claims.
	CanCommitBehind() bool
	// CutBehind cuts an epoch to commit behind the claims.
	CutBehind(ctx context.Context, positions tasks.Positions, s kafka.Session, ph *tasks.Phases) (*tasks.EpochCut, error)
	// CommitBehind commits a cut while the claims go on.
	CommitBehind(ctx context.Context, c *tasks.EpochCut, s kafka.Session, ph *tasks.Phases) error
	// RewindBehind drops the state of a cut whose commit failed.
	RewindBehind(cause error)
}

var _ Runtime = (*tasks.Runtime)(nil)
