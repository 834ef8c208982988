// Package statedir keeps an instance's Badger directories (the state stores
// and the offsets log) a cache: it tells damage from the other reasons a
// directory cannot be opened, turns Badger's panics on damaged files into
// errors, and sets a damaged directory aside for inspection so that a new
// one can be rebuilt — stores from their changelogs, the write-ahead log
// from Kafka's committed offsets.
//
// A failure to open is damage unless its cause says otherwise: a lock held
// by another process, a permission, a full or read-only volume, too many
// open files, a cancelled context. Those would fail the same way on a new
// directory, or would lose state another process is using, so they are
// returned as they are.
package statedir

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Keep is how many set-aside copies of one directory SetAside keeps: the
// newest three, enough to inspect a damage that repeats, bounded so that a
// volume that damages every file does not fill with copies.
const Keep = 3

// ErrDamaged is wrapped by every *Damage.
var ErrDamaged = errors.New("state directory damaged")

// The reasons a directory is damaged, as Damage.Reason and the
// weir_state_rebuilt_total{reason} label name them.
const (
	ReasonChecksum  = "checksum"  // a file's checksum does not match
	ReasonTruncated = "truncated" // a file ends early
	ReasonManifest  = "manifest"  // Badger's MANIFEST is unreadable
	ReasonMissing   = "missing"   // a file the MANIFEST names is gone
	ReasonForeign   = "foreign"   // written by another program or layout version
	ReasonPanic     = "panic"     // Badger panicked reading it
	ReasonMarked    = "marked"    // a previous run found it damaged (see MarkFile)
	ReasonOther     = "unreadable"
)

// Damage says why a directory cannot be opened or read.
type Damage struct {
	Dir string
	// File is the file Badger named, or "" when it named none.
	File   string
	Reason string
	Err    error
}

// Error names the directory, the file and the cause.
func (d *Damage) Error() string {
	file := d.File
	if file == "" {
		file = "(not named)"
	}
	return fmt.Sprintf("%s: %s in %s, file %s: %v", ErrDamaged, d.Reason, d.Dir, file, d.Err)
}

// Unwrap returns ErrDamaged and the cause.
func (d *Damage) Unwrap() []error { return []error{ErrDamaged, d.Err} }

// PanicError is a panic recovered from Badger.
type PanicError struct {
	Value any
	Stack []byte
}

func (p *PanicError) Error() string { return fmt.Sprintf("badger panicked: %v", p.Value) }

// Protect calls fn and turns a panic inside it into a *PanicError.
func Protect[T any](fn func() (T, error)) (v T, err error) {
	defer func() {
		if p := recover(); p != nil {
			var zero T
			v, err = zero, &PanicError{Value: p, Stack: debug.Stack()}
		}
	}()
	return fn()
}

// Locked reports a directory lock held by another process: a second
// instance on this machine using the same state dir.
func Locked(err error) bool {
	return err != nil && (errors.Is(err, syscall.EWOULDBLOCK) || strings.Contains(err.Error(), "Cannot acquire directory lock"))
}

// notDamage are the causes a new directory would not cure.
var notDamage = []error{
	syscall.EACCES, syscall.EPERM, syscall.ENOSPC, syscall.EROFS, syscall.EMFILE, syscall.ENFILE,
	syscall.ENOMEM, syscall.EDQUOT,
}

// fileRE finds the file a Badger error names.
var fileRE = regexp.MustCompile(`[^\s"':]*(?:\.sst|\.vlog|\.mem|MANIFEST|KEYREGISTRY|DISCARD)\b`)

// tableRE finds the table a Badger error names by number only.
var tableRE = regexp.MustCompile(`for table (\d+)`)

// Classify returns why err, an error opening or reading a Badger
// directory, is damage, and "" if it is not (see the package doc). ctxErr
// errors, locks and the causes a new directory would not cure are not
// damage.
func Classify(err error) string {
	if err == nil || Locked(err) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return ""
	}
	for _, e := range notDamage {
		if errors.Is(err, e) {
			return ""
		}
	}
	var d *Damage
	if errors.As(err, &d) {
		return d.Reason
	}
	var p *PanicError
	if errors.As(err, &p) {
		return ReasonPanic
	}
	msg := strings.ToLower(err.Error())
	switch {
	case strings.Contains(msg, "checksum"):
		return ReasonChecksum
	case strings.Contains(msg, "manifest"):
		return ReasonManifest
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || strings.Contains(msg, "truncat") ||
		strings.Contains(msg, "eof") || strings.Contains(msg, "out of range"):
		return ReasonTruncated
	case errors.Is(err, os.ErrNotExist) || strings.Contains(msg, "does not exist") || strings.Contains(msg, "no such file"):
		return ReasonMissing
	}
	return ReasonOther
}

// NewDamage returns the *Damage of err, an error opening or reading dir,
// and nil if err is not damage (Classify).
func NewDamage(dir string, err error) *Damage {
	var d *Damage
	if errors.As(err, &d) {
		return d
	}
	reason := Classify(err)
	if reason == "" {
		return nil
	}
	return &Damage{Dir: dir, File: fileOf(err), Reason: reason, Err: err}
}

// fileOf returns the base name of the file err's message names, or "".
func fileOf(err error) string {
	if m := fileRE.FindString(err.Error()); m != "" {
		return filepath.Base(m)
	}
	if m := tableRE.FindStringSubmatch(err.Error()); m != nil {
		return fmt.Sprintf("%06s.sst", m[1])
	}
	if strings.Contains(strings.ToLower(err.Error()), "manifest") {
		return "MANIFEST"
	}
	return ""
}

// MarkFile is the file a process writes into a Badger directory it found
// damaged while running (a read failed its checksum, or panicked): the
// next Open sets the directory aside.
const MarkFile = "WEIR-DAMAGED"

// Mark records in dir that it is damaged, and why.
func Mark(dir string, cause error) error {
	return os.WriteFile(filepath.Join(dir, MarkFile), []byte(cause.Error()+"\n"), 0o644)
}

// Marked returns the *Damage a previous Mark recorded in dir, or nil.
func Marked(dir string) *Damage {
	b, err := os.ReadFile(filepath.Join(dir, MarkFile))
	if err != nil {
		return nil
	}
	return &Damage{Dir: dir, File: MarkFile, Reason: ReasonMarked, Err: errors.New(strings.TrimSpace(string(b)))}
}

// asideSuffix separates a directory's name from its set-aside time.
const asideSuffix = ".damaged-"

// SetAside renames dir to "<dir>.damaged-<UTC time>" in the same parent,
// and removes the oldest set-aside copies of dir beyond keep. It returns
// the new name. A dir that does not exist is not an error ("" returned).
func SetAside(dir string, now time.Time, keep int) (string, error) {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	to := dir + asideSuffix + now.UTC().Format("20060102T150405.000000000Z")
	if err := os.Rename(dir, to); err != nil {
		return "", fmt.Errorf("statedir: set aside %s: %w", dir, err)
	}
	old, err := filepath.Glob(dir + asideSuffix + "*")
	if err != nil {
		return to, nil
	}
	slices.Sort(old) // the time format sorts in time order
	for len(old) > max(keep, 1) {
		if err := os.RemoveAll(old[0]); err != nil {
			return to, fmt.Errorf("statedir: remove old copy %s: %w", old[0], err)
		}
		old = old[1:]
	}
	return to, nil
}
