//go:build !linux

package testenv

import "os/exec"

// setParentDeathSignal does nothing where the kernel has no parent-death
// signal; children are still stopped by cleanup and Main.
func setParentDeathSignal(*exec.Cmd) {}
