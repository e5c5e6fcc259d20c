//go:build !linux

package bench

import "os/exec"

// setParentDeathSignal does nothing where the kernel has no parent-death
// signal; children are still stopped by Stop.
func setParentDeathSignal(*exec.Cmd) {}
