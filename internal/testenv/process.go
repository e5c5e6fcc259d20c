package testenv

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"
)

// process is a child process started by this package, stopped by its PID.
type process struct {
	pid     int
	exited  chan struct{} // closed once the process has exited and been reaped
	waitErr error         // the exit status; read only after exited is closed
}

// startProcess starts name with args, writing its stdout and stderr to output.
//
// The child is started with a parent-death signal (SIGKILL) so that it does
// not outlive a test binary that crashes or times out before its cleanup runs.
// Linux sends that signal when the OS thread that forked the child exits, not
// the process, so the forking goroutine locks its thread and keeps it until
// the child has exited.
func startProcess(name string, args []string, output io.Writer) (*process, error) {
	proc := &process{exited: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// The thread is never unlocked: it ends with this goroutine, after the
		// child it forked is gone.
		cmd := exec.Command(name, args...)
		cmd.Stdout = output
		cmd.Stderr = output
		setParentDeathSignal(cmd)
		if err := cmd.Start(); err != nil {
			started <- err
			close(proc.exited)
			return
		}
		proc.pid = cmd.Process.Pid
		started <- nil
		proc.waitErr = cmd.Wait()
		close(proc.exited)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return proc, nil
}

// running reports whether the process has not exited yet.
func (p *process) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// stop sends sig to the process and waits for it to exit; after grace it
// sends SIGKILL and waits again.
func (p *process) stop(sig syscall.Signal, grace time.Duration) error {
	if !p.running() {
		return nil
	}
	if err := syscall.Kill(p.pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal pid %d: %w", p.pid, err)
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-p.exited:
		return nil
	case <-timer.C:
	}
	if err := syscall.Kill(p.pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill pid %d: %w", p.pid, err)
	}
	<-p.exited
	return nil
}

// tailFile returns up to the last maxBytes of a file, for failure messages.
func tailFile(path string, maxBytes int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return ""
	}
	if info.Size() > maxBytes {
		if _, err := f.Seek(info.Size()-maxBytes, io.SeekStart); err != nil {
			return ""
		}
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return ""
	}
	return string(data)
}
