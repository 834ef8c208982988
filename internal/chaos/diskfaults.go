package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/weirstream/weir/internal/statedir"
	"github.com/weirstream/weir/internal/statedir/damagetest"
)

// The disk faults (Config.DiskFaults), each event one of them drawn from
// the seed: a member is stopped, its state dir damaged as an operator's
// disk can (damagetest), and it is started again on it, where weir must
// set the damage aside and rebuild; or it is started on a volume that
// fills. Either way it must go on running by itself (checkMembers fails
// the scenario on any exit) and the output stay exact.
var diskFaultKinds = []string{damagetest.RandomBytes, damagetest.Truncate, damagetest.Manifest, diskFull}

// diskFull is the full-volume fault: the member restarts with a minimum
// free space (WithMinFreeDisk) 512 MiB below the volume's, and a 1 GiB
// file reserved next to its state dir (fallocate: nothing written,
// nothing mounted, no root) takes the volume below it for 5 to 10 s; the
// member must pause (its WARN says so) and resume by itself once the file
// goes. A volume with less than 2 GiB free, or without fallocate, gets a
// damage of the other kinds instead.
const diskFull = "full volume"

const (
	fullMargin = 512 << 20
	fullFiller = 1 << 30
	tmpfsMagic = 0x01021994
	// fillerPrefix begins a filler's name, followed by the runner's pid
	// (RemoveLeftovers).
	fillerPrefix = "filler-of-"
)

// RemoveLeftovers removes the volume fillers (the full-volume disk fault)
// that runners which no longer run left under the roots' scenario dirs —
// a runner removes its own when it ends, but not when it is killed — and
// returns their paths. weir-chaos calls it at start with its work dir and
// the temporary directory its default work dirs are made in.
func RemoveLeftovers(roots ...string) []string {
	var removed []string
	for _, root := range roots {
		if root == "" {
			continue
		}
		for _, pattern := range []string{"*", "*/*"} {
			found, _ := filepath.Glob(filepath.Join(root, pattern, fillerPrefix+"*"))
			for _, f := range found {
				pid, _, _ := strings.Cut(strings.TrimPrefix(filepath.Base(f), fillerPrefix), "-")
				if n, err := strconv.Atoi(pid); err == nil && n != os.Getpid() && alive(n) {
					continue // another runner's, in use
				}
				if os.Remove(f) == nil {
					removed = append(removed, f)
				}
			}
		}
	}
	return removed
}

// alive reports whether process pid exists.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// diskFault stops a member, damages its state dir as kind says and starts
// it again.
func (s *scenario) diskFault(ctx context.Context, kind string) error {
	m := s.pick()
	if m == nil {
		return nil
	}
	s.down(m)
	if err := m.p.stop(60 * time.Second); err != nil {
		return err
	}
	s.res.DiskFaults++
	if kind == diskFull {
		return s.fillVolume(ctx, m)
	}
	return s.damage(ctx, m, kind)
}

// damage damages a stopped member's state dir as kind says and starts it
// again on it.
func (s *scenario) damage(ctx context.Context, m *member, kind string) error {
	var changed []string
	for i, sub := range []string{"stores", "offsets"} {
		dir := filepath.Join(m.dir, sub)
		if _, err := os.Stat(dir); err != nil {
			continue // offsets: micro-batch mode only
		}
		files, err := damagetest.Damage(dir, kind, s.cfg.Seed+uint64(s.res.DiskFaults*2+i))
		if err != nil {
			s.logf("disk fault: %s: %v", m.name, err)
			continue
		}
		for _, f := range files {
			changed = append(changed, sub+"/"+f)
		}
	}
	before := setAside(m.dir)
	s.logf("disk fault: %s stopped, its state dir damaged (%s: %d files, e.g. %s); restarting it on it",
		m.name, kind, len(changed), strings.Join(changed[:min(3, len(changed))], ", "))
	if err := s.startMember(m); err != nil {
		return err
	}
	if len(changed) == 0 {
		return nil
	}
	// Until weir has set the damage aside: so that the verifier, which
	// reads every state dir at the end, never meets a damaged one left
	// behind by a kill that came before the instance opened it.
	deadline := time.Now().Add(60 * time.Second)
	for setAside(m.dir) == before {
		if m.p.exited() {
			return fmt.Errorf("chaos: member %s exited on its damaged state dir: %v (%s)", m.name, m.p.err, m.p.lastWords())
		}
		if time.Now().After(deadline) {
			// Damage Badger did not read (random bytes past the blocks
			// it checks at open) is no damage to weir: it goes on.
			s.logf("disk fault: %s runs on its state dir without setting it aside (the damage went unread)", m.name)
			return nil
		}
		if err := s.sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
	s.logf("disk fault: %s set the damage aside and rebuilds: %s", m.name, logLine(m, "damaged; set aside"))
	return nil
}

// setAside counts the set-aside copies in a state dir.
func setAside(dir string) int {
	n := 0
	for _, sub := range []string{"stores", "offsets"} {
		asides, _ := filepath.Glob(filepath.Join(dir, sub+statedirAsideSuffix))
		n += len(asides)
	}
	return n
}

// statedirAsideSuffix matches the names statedir.SetAside gives.
const statedirAsideSuffix = ".damaged-*"

// fillVolume restarts a stopped member with a minimum free space and
// fills its volume for a while (diskFull).
func (s *scenario) fillVolume(ctx context.Context, m *member) error {
	root := filepath.Dir(m.dir)
	free, err := statedir.Free(root)
	if err != nil {
		return err
	}
	kind := diskFaultKinds[s.rng.IntN(len(diskFaultKinds)-1)]
	var st syscall.Statfs_t
	if err := syscall.Statfs(root, &st); err == nil && st.Type == tmpfsMagic {
		// A reserved tmpfs file is memory, not disk.
		s.logf("disk fault: the state volume is a tmpfs, not filled; %s instead", kind)
		return s.damage(ctx, m, kind)
	}
	if free < 2*fullFiller {
		s.logf("disk fault: %d MiB free, too little to fill; %s instead", free>>20, kind)
		return s.damage(ctx, m, kind)
	}
	fill := filepath.Join(root, fmt.Sprintf("%s%d-%s", fillerPrefix, os.Getpid(), m.name))
	f, err := os.Create(fill)
	if err != nil {
		return err
	}
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, fullFiller); err != nil {
		_ = f.Close()
		_ = os.Remove(fill)
		s.logf("disk fault: fallocate: %v; %s instead", err, kind)
		return s.damage(ctx, m, kind)
	}
	_ = f.Close()
	defer os.Remove(fill)
	m.minFreeDisk = int64(free - fullMargin)
	err = s.startMember(m)
	m.minFreeDisk = 0 // its later starts have the default
	if err != nil {
		return err
	}
	d := 5*time.Second + time.Duration(s.rng.Int64N(int64(5*time.Second)))
	s.logf("disk fault: %s restarted with %d MiB minimum free space on a volume filled to %d MiB free, for %v",
		m.name, (free-fullMargin)>>20, (free-fullFiller)>>20, d.Round(100*time.Millisecond))
	if err := s.sleep(ctx, d); err != nil {
		return err
	}
	if line := logLine(m, "state volume nearly full"); line != "" {
		s.logf("disk fault: %s paused: %s", m.name, line)
	} else {
		s.logf("disk fault: %s did not report the full volume yet", m.name)
	}
	if err := os.Remove(fill); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	s.logf("disk fault: %s's volume has room again", m.name)
	return nil
}

// logLine returns the first line of m's current log that contains sub
// (cut to 300 bytes), "" if none.
func logLine(m *member, sub string) string {
	if m.p == nil || m.p.log == nil {
		return ""
	}
	b, err := os.ReadFile(m.p.log.Name())
	if err != nil {
		return ""
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if strings.Contains(line, sub) {
			if len(line) > 300 {
				line = line[:300] + "…"
			}
			return line
		}
	}
	return ""
}
