package bench

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal makes the kernel kill the child when its parent goes.
func setParentDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
