package chdb

import (
	"syscall"
	"unsafe"
)

// kernelSigaction is struct sigaction as the rt_sigaction system call takes
// it on Linux (handler, flags, restorer, mask): saved and written back
// byte for byte, never interpreted.
type kernelSigaction struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

// goSignals are the signals the Go runtime must keep handling for the
// process to work: the faults it turns into panics and uses for stack growth
// (SEGV, BUS, FPE, ILL, TRAP, SYS, ABRT), preemption (URG), profiling (PROF),
// and what tally itself listens to (INT, TERM, HUP, QUIT, PIPE, CHLD, TSTP).
// chDB installs its own crash handlers when it starts, and its opt-out resets
// the fault set to SIG_DFL; either would break Go. Others (USR1, USR2, the
// real-time signals) are left to chDB, which may use them itself.
var goSignals = []syscall.Signal{
	syscall.SIGSEGV, syscall.SIGBUS, syscall.SIGFPE, syscall.SIGILL, syscall.SIGTRAP,
	syscall.SIGSYS, syscall.SIGABRT, syscall.SIGURG, syscall.SIGPROF,
	syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
	syscall.SIGPIPE, syscall.SIGCHLD, syscall.SIGTSTP,
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
