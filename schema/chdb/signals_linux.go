//go:build linux && (amd64 || arm64)

package chdb

// The Linux-only parts of the engine: signal dispositions and the data
// path's lock.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

// kernelSigaction is struct sigaction as the rt_sigaction system call takes
// it on Linux amd64 and arm64 (handler, flags, restorer, mask): saved and
// written back byte for byte, never interpreted.
type kernelSigaction struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

// goSignals are the signals the Go runtime must keep handling for the
// process to work: the faults it turns into panics and uses for stack growth
// (SEGV, BUS, FPE, ILL, TRAP, SYS, ABRT), preemption (URG), profiling (PROF),
// what tally itself listens to (INT, TERM), and CHLD (os/exec's Wait needs
// it not ignored), HUP, QUIT and TSTP.
// chDB installs its own crash handlers when it starts, and its opt-out resets
// the fault set to SIG_DFL; either would break Go. Others (USR1, USR2, the
// real-time signals) are left to chDB, which may use them itself, and so is
// PIPE: should chDB ignore it, Go's handler would turn a broken pipe on one
// of chDB's threads into the death of the process (Go itself sees EPIPE as
// an error either way).
var goSignals = []syscall.Signal{
	syscall.SIGSEGV, syscall.SIGBUS, syscall.SIGFPE, syscall.SIGILL, syscall.SIGTRAP,
	syscall.SIGSYS, syscall.SIGABRT, syscall.SIGURG, syscall.SIGPROF,
	syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
	syscall.SIGCHLD, syscall.SIGTSTP,
}

// signalState is the dispositions of goSignals at one moment, in order.
type signalState []kernelSigaction

// saveSignals reads the current dispositions of goSignals.
func saveSignals() (signalState, error) {
	s := make(signalState, len(goSignals))
	for i, sig := range goSignals {
		if err := rtSigaction(sig, nil, &s[i]); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// restore writes back every disposition that changed since s was saved,
// returning the signals it put back (chDB had taken them).
func (s signalState) restore() ([]syscall.Signal, error) {
	var changed []syscall.Signal
	for i, sig := range goSignals {
		var now kernelSigaction
		if err := rtSigaction(sig, nil, &now); err != nil {
			return changed, err
		}
		if now == s[i] {
			continue
		}
		if err := rtSigaction(sig, &s[i], nil); err != nil {
			return changed, err
		}
		changed = append(changed, sig)
	}
	return changed, nil
}

func rtSigaction(sig syscall.Signal, act, old *kernelSigaction) error {
	const sigsetSize = 8
	_, _, errno := syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig),
		uintptr(unsafe.Pointer(act)), uintptr(unsafe.Pointer(old)), sigsetSize, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

// checkPathFree fails when the engine's lock on path is held (the status
// file ClickHouse flocks while it runs there), naming the holder from the
// file when it says: another process, or an Engine of this one not yet
// closed (flock is per open file).
func checkPathFree(path string) error {
	f, err := os.Open(filepath.Join(path, "status"))
	if err != nil {
		return nil // never opened here: free
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			holder := ""
			if b, rerr := os.ReadFile(f.Name()); rerr == nil {
				if first, _, _ := strings.Cut(string(b), "\n"); strings.HasPrefix(first, "PID:") {
					if strings.TrimSpace(strings.TrimPrefix(first, "PID:")) == strconv.Itoa(os.Getpid()) {
						return fmt.Errorf("chdb: the embedded store at %s is already open in this process: close that Engine first", path)
					}
					holder = " (" + strings.TrimSpace(first) + ")"
				}
			}
			return fmt.Errorf("chdb: the embedded store at %s is open in another process%s, a running tally serve perhaps: "+
				"one process at a time can have it — stop that one first", path, holder)
		}
		return nil
	}
	return syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}
