package chaos

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/microbatch"
)

// childEnv carries a child's configuration (JSON) to the re-executed
// process.
const childEnv = "WEIR_CHAOS_CHILD"

// SessionTimeout and HeartbeatInterval of the instances: short, so that a
// killed or stalled member's partitions move within seconds.
const (
	SessionTimeout    = 3 * time.Second
	HeartbeatInterval = 300 * time.Millisecond
)

// ChildConfig is what a child instance runs.
type ChildConfig struct {
	Brokers   []string `json:"brokers"`
	App       string   `json:"app"`
	StateDir  string   `json:"stateDir"`
	Mode      string   `json:"mode"`
	Guarantee string   `json:"guarantee"`
	Topics    Topics   `json:"topics"`
	// MaxRecordsPerBatch bounds a micro-batch (microbatch.Config); the
	// scenario draws it from its seed.
	MaxRecordsPerBatch int64 `json:"maxRecordsPerBatch,omitempty"`
	// AvailableNow makes a micro-batch instance run the AvailableNow
	// trigger: it exits by itself once the group has processed what was
	// there when it started (the bounded phase, bounded.go).
	AvailableNow bool `json:"availableNow,omitempty"`
	// HTTP, if set, is the address the instance serves its queries on
	// (WithHTTP; query scenarios).
	HTTP string `json:"http,omitempty"`
	// InstanceID, if set, makes the instance a static group member
	// (WithInstanceID): one id per member slot, kept across restarts.
	InstanceID string `json:"instanceID,omitempty"`
	// MinFreeDisk, if set, is the instance's WithMinFreeDisk (the
	// full-volume disk fault, diskfaults.go).
	MinFreeDisk int64 `json:"minFreeDisk,omitempty"`
	// Standbys is the instance's WithStandbyReplicas.
	Standbys int `json:"standbys,omitempty"`
}

// IsChild reports whether this process is a chaos child instance (started
// by a Runner through its Exe).
func IsChild() bool { return os.Getenv(childEnv) != "" }

// RunChild runs the child instance configured by the environment until
// SIGTERM or SIGINT (a graceful stop) and returns Run's error. Programs
// call it from main (or TestMain) when IsChild.
func RunChild() error {
	// First of all, so that a SIGTERM that comes right after the start is
	// a graceful stop, not the default action (exit by the signal).
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	var cfg ChildConfig
	if err := json.Unmarshal([]byte(os.Getenv(childEnv)), &cfg); err != nil {
		return fmt.Errorf("chaos: child configuration: %w", err)
	}
	topo, err := Build(cfg.Topics)
	if err != nil {
		return err
	}
	opts := []weir.Option{
		weir.WithBrokers(cfg.Brokers...),
		weir.WithApplicationID(cfg.App),
		weir.WithStateDir(cfg.StateDir),
		weir.WithSessionTimeout(SessionTimeout),
		weir.WithHeartbeatInterval(HeartbeatInterval),
		weir.WithEpochInterval(100 * time.Millisecond),
		weir.WithBadRecordPolicy(weir.DeadLetter),
		weir.WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: childLogLevel()}))),
	}
	if cfg.Guarantee == weir.ExactlyOnce.String() {
		opts = append(opts, weir.WithGuarantee(weir.ExactlyOnce))
	}
	if cfg.HTTP != "" {
		opts = append(opts, weir.WithHTTP(cfg.HTTP))
	}
	if cfg.Standbys > 0 {
		opts = append(opts, weir.WithStandbyReplicas(cfg.Standbys))
	}
	if cfg.InstanceID != "" {
		opts = append(opts, weir.WithInstanceID(cfg.InstanceID))
	}
	if cfg.MinFreeDisk != 0 {
		opts = append(opts, weir.WithMinFreeDisk(cfg.MinFreeDisk))
	}
	if cfg.Mode == weir.MicroBatch.String() {
		mb := microbatch.Config{MaxRecordsPerBatch: cmp.Or(cfg.MaxRecordsPerBatch, 2000)}
		if cfg.AvailableNow {
			mb.Trigger = microbatch.AvailableNow()
		}
		opts = append(opts, weir.WithMicroBatch(mb))
	}
	pgOpts, closePG, err := postgresOptions(ctx, cfg.Topics) // with WEIR_POSTGRES_DSN (pgsink.go)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			return nil // stopped while it waited for the database: a graceful stop
		}
		return err
	}
	defer closePG()
	app, err := weir.New(topo, append(opts, pgOpts...)...)
	if err != nil {
		return err
	}
	return app.Run(ctx)
}

// childStartup is how long a child is given to install its signal
// handler before stop signals it.
const childStartup = 500 * time.Millisecond

// proc is one running child process.
type proc struct {
	cmd     *exec.Cmd
	started time.Time
	log     *os.File
	done    chan struct{}
	err     error // Wait's result, set before done closes
	stalled bool
}

// startProc starts a child with cfg; its stderr and stdout go to logPath.
func startProc(exe []string, cfg ChildConfig, logPath string) (*proc, error) {
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe[0], exe[1:]...)
	cmd.Env = append(os.Environ(), childEnv+"="+string(b))
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("chaos: start child: %w", err)
	}
	p := &proc{cmd: cmd, started: time.Now(), log: f, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = f.Close()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill sends SIGKILL and waits for the exit.
func (p *proc) kill() error {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-p.done:
		return nil
	case <-time.After(30 * time.Second):
		return errors.New("chaos: a killed child did not exit within 30s")
	}
}

// stop sends SIGTERM (SIGCONT first if stalled) and waits up to d for a
// clean exit; past d it sends SIGQUIT (a goroutine dump into the child's
// log), then kills the process, and reports it.
func (p *proc) stop(d time.Duration) error {
	if p.stalled {
		p.resume()
	}
	// A child signalled before RunChild installed its handler would die of
	// the signal (seen: a member restarted for the final convergence and
	// stopped a few milliseconds later); Go starts a program and reaches
	// main far faster than this.
	if young := childStartup - time.Since(p.started); young > 0 {
		time.Sleep(young)
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		if p.err != nil {
			return fmt.Errorf("chaos: graceful stop of pid %d: %w (%s)", p.cmd.Process.Pid, p.err, p.lastWords())
		}
		return nil
	case <-time.After(d):
		// SIGQUIT makes the Go runtime write every goroutine's stack to
		// the child's log before it exits: the diagnosis of the hang.
		_ = p.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			_ = p.kill()
		}
		return fmt.Errorf("chaos: pid %d did not stop within %v of SIGTERM; its goroutines are in its log %s", p.cmd.Process.Pid, d, p.log.Name())
	}
}

// lastWords names the child's log and quotes its last line — a child
// that failed ends it with Run's error — so that a failed scenario's
// report (all CI keeps) says why.
func (p *proc) lastWords() string {
	b, err := os.ReadFile(p.log.Name())
	if err != nil {
		return "see its log " + p.log.Name()
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	last := lines[len(lines)-1]
	if len(last) > 600 {
		last = last[:600] + "…"
	}
	return fmt.Sprintf("its log %s ends: %q", p.log.Name(), last)
}

func (p *proc) stall()  { _ = p.cmd.Process.Signal(syscall.SIGSTOP); p.stalled = true }
func (p *proc) resume() { _ = p.cmd.Process.Signal(syscall.SIGCONT); p.stalled = false }

// member is one of the scenario's instance slots: its current process (nil
// after it left) and its state dir.
type member struct {
	name    string
	slot    int // index in the scenario's members
	dir     string
	dirs    int // state dirs used so far
	allDirs []string
	p       *proc
	starts  int
	// proxy is the member's way to the brokers (network faults only).
	proxy *netProxy
	// minFreeDisk is the next start's WithMinFreeDisk (0: the default).
	minFreeDisk int64
}

func (m *member) running() bool { return m.p != nil && !m.p.exited() }

// newDir gives the member a fresh state dir under root.
func (m *member) newDir(root string) {
	m.dirs++
	m.dir = filepath.Join(root, fmt.Sprintf("%s-state%d", m.name, m.dirs))
	m.allDirs = append(m.allDirs, m.dir)
}

// ChildLogEnv names the environment variable that sets the level of the
// children's logs (debug, info, warn, error; warn by default):
// `WEIR_CHAOS_CHILD_LOG=debug go run ./cmd/weir-chaos` keeps, in a failed
// scenario's child logs, what the engine did (tasks claimed, restored,
// external sinks claimed and written), at the cost of much larger logs.
const ChildLogEnv = "WEIR_CHAOS_CHILD_LOG"

// childLogLevel is the level ChildLogEnv names, warn if unset or unknown.
func childLogLevel() slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(os.Getenv(ChildLogEnv))); err != nil {
		return slog.LevelWarn
	}
	return l
}
