//go:build unix

package diskguard

import (
	"fmt"
	"syscall"
)

// statfs is a path's free (to unprivileged users) and total bytes.
func statfs(path string) (free, total uint64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, 0, fmt.Errorf("free space of %s: %w", path, err)
	}
	return uint64(st.Bavail) * uint64(st.Bsize), uint64(st.Blocks) * uint64(st.Bsize), nil
}
