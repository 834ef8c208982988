package exactlyonce

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// InstanceIDFile is the name of the file, in the state directory, that
// holds the instance id.
const InstanceIDFile = "instance-id"

// validInstanceID is what an instance id may look like: safe in a
// transactional id, a file name and a log line.
var validInstanceID = regexp.MustCompile(`^[A-Za-z0-9._-]{1,200}$`)

// LoadOrCreateInstanceID returns the instance id kept in
// <stateDir>/instance-id, creating the directory and the file (32 random
// hex digits) on first use. A restart with the same state directory gets
// the same id, hence the same transactional id
// ("<application>-<instance id>"), so the new process fences its own
// zombie; two state directories get two ids.
//
// The file is written whole and durably (a synced temporary file hard
// linked into place, then the directory synced), so a crash never leaves
// a partial id behind, and of two processes creating it at once both
// return the id that won. An existing file that does not hold a valid id
// is an error, never silently replaced: a new id would lose the fencing.
// The file may be edited to a chosen id (letters, digits, '.', '_', '-').
func LoadOrCreateInstanceID(stateDir string) (string, error) {
	if stateDir == "" {
		return "", errors.New("exactlyonce: instance id: empty state directory")
	}
	path := filepath.Join(stateDir, InstanceIDFile)
	if id, err := readInstanceID(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return id, err
	}
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return "", fmt.Errorf("exactlyonce: instance id: %w", err)
	}
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("exactlyonce: instance id: %w", err)
	}
	id := hex.EncodeToString(b)
	if err := createFile(stateDir, path, []byte(id+"\n")); err != nil {
		if errors.Is(err, fs.ErrExist) { // another process was first
			return readInstanceID(path)
		}
		return "", fmt.Errorf("exactlyonce: instance id: %w", err)
	}
	return id, nil
}

// readInstanceID reads and validates the id in path.
func readInstanceID(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		return "", fmt.Errorf("exactlyonce: instance id: %w", err)
	}
	id := strings.TrimSpace(string(b))
	if !validInstanceID.MatchString(id) {
		return "", fmt.Errorf("exactlyonce: instance id: %s does not hold a valid id (%q)", path, id)
	}
	return id, nil
}

// createFile creates path with data, failing with fs.ErrExist if it
// exists. The content is synced before the file appears under its name.
func createFile(dir, path string, data []byte) error {
	tmp, err := os.CreateTemp(dir, "."+InstanceIDFile+"-*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		_ = os.Remove(tmp.Name())
	}()
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return err
		}
		// No hard links on this file system, say: fall back to an
		// exclusive create (not atomic against a crash mid-write, which
		// the validation on read then reports).
		if err := writeExclusive(path, data); err != nil {
			return err
		}
	}
	return syncDir(dir)
}

func writeExclusive(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// syncDir makes a new directory entry durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
