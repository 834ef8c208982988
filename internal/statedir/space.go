package statedir

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
)

// Free returns the bytes an unprivileged process may still write on the
// volume holding dir.
func Free(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("statedir: free space of %s: %w", dir, err)
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// NoSpace reports a write that failed for a full volume (ENOSPC, or
// Badger's wrapping of it that lost the errno).
func NoSpace(err error) bool {
	return err != nil && (errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) ||
		strings.Contains(err.Error(), "no space left on device"))
}
