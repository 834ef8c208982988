package statedir

import (
	"fmt"
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
