//go:build !unix

package diskguard

import "fmt"

// statfs is not measured on this platform: the guard leaves the path out.
func statfs(path string) (free, total uint64, err error) {
	return 0, 0, fmt.Errorf("free space of %s: not measured on this platform", path)
}
