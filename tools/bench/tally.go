package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

// tallyReadyTimeout bounds how long a starting tally serve may take.
const tallyReadyTimeout = 90 * time.Second

// Tally is a `tally serve` subprocess on a free loopback port, so that its
// memory (/proc/PID/status) is its own.
type Tally struct {
	URL      string // http://127.0.0.1:port
	DebugURL string // the --debug-listen address (pprof), "" when off
	PID      int
	logPath  string
	exited   chan struct{}
	waitErr  error
}

// TallyOptions say how to start tally serve.
type TallyOptions struct {
	Bin     string   // the tally binary
	Store   []string // store flags (--store, --clickhouse-addr, --clickhouse-database)
	DataDir string
	LogPath string   // stdout and stderr go here
	Debug   bool     // serve pprof on --debug-listen
	Env     []string // added to the environment, KEY=VALUE
	Args    []string // more flags
}

// StartTally starts tally serve and waits until /readyz answers 200.
func StartTally(ctx context.Context, o TallyOptions) (*Tally, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	args := []string{"serve",
		"--listen", "127.0.0.1:" + strconv.Itoa(port),
		"--data-dir", o.DataDir,
		"--log-level", "warn",
	}
	args = append(args, o.Store...)
	t := &Tally{URL: "http://127.0.0.1:" + strconv.Itoa(port), logPath: o.LogPath, exited: make(chan struct{})}
	if o.Debug {
		dport, err := freePort()
		if err != nil {
			return nil, err
		}
		t.DebugURL = "http://127.0.0.1:" + strconv.Itoa(dport)
		args = append(args, "--debug-listen", "127.0.0.1:"+strconv.Itoa(dport))
	}
	args = append(args, o.Args...)
	if err := os.MkdirAll(o.DataDir, 0o750); err != nil {
		return nil, fmt.Errorf("tally data dir: %w", err)
	}
	logf, err := os.OpenFile(o.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("tally log: %w", err)
	}
	defer logf.Close()
	// Keep tally's environment from changing its settings (TALLY_*).
	env := []string{}
	for _, kv := range os.Environ() {
		if len(kv) < 6 || kv[:6] != "TALLY_" {
			env = append(env, kv)
		}
	}
	env = append(env, o.Env...)
	started := make(chan error, 1)
	go func() {
		// The parent-death signal fires when the forking thread exits, so
		// this goroutine keeps its thread until the child is gone.
		runtime.LockOSThread()
		cmd := exec.Command(o.Bin, args...)
		cmd.Stdout, cmd.Stderr, cmd.Env = logf, logf, env
		cmd.Dir = o.DataDir // no tally.yaml there
		setParentDeathSignal(cmd)
		if err := cmd.Start(); err != nil {
			started <- err
			close(t.exited)
			return
		}
		t.PID = cmd.Process.Pid
		started <- nil
		t.waitErr = cmd.Wait()
		close(t.exited)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start %s: %w", o.Bin, err)
	}
	if err := t.waitReady(ctx); err != nil {
		_ = t.Stop()
		return nil, err
	}
	return t, nil
}

func (t *Tally) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(tallyReadyTimeout)
	client := &http.Client{Timeout: 5 * time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, t.URL+"/readyz", nil) // constant URL
		resp, err := client.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body) //nolint:errcheck // draining only
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-t.exited:
			return fmt.Errorf("tally serve exited during start-up (%v); log: %s", t.waitErr, tail(t.logPath, 2000))
		default:
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("tally serve at %s not ready after %s; log: %s", t.URL, tallyReadyTimeout, tail(t.logPath, 2000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// PeakRSS is the process's peak resident set size so far (VmHWM), in bytes.
func (t *Tally) PeakRSS() (uint64, error) {
	kb, ok := procStatusKiB(t.PID, "VmHWM")
	if !ok {
		return 0, fmt.Errorf("read VmHWM of pid %d", t.PID)
	}
	return kb * 1024, nil
}

// RSS is the process's current resident set size (VmRSS), in bytes.
func (t *Tally) RSS() (uint64, error) {
	kb, ok := procStatusKiB(t.PID, "VmRSS")
	if !ok {
		return 0, fmt.Errorf("read VmRSS of pid %d", t.PID)
	}
	return kb * 1024, nil
}

// Stop sends SIGTERM, waits up to 30 s for a graceful exit, then SIGKILL.
func (t *Tally) Stop() error {
	select {
	case <-t.exited:
		return nil
	default:
	}
	if err := syscall.Kill(t.PID, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal tally pid %d: %w", t.PID, err)
	}
	select {
	case <-t.exited:
		return nil
	case <-time.After(30 * time.Second):
	}
	if err := syscall.Kill(t.PID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill tally pid %d: %w", t.PID, err)
	}
	<-t.exited
	return nil
}

// tail is the end of a file, for error messages.
func tail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > n {
		if _, err := f.Seek(st.Size()-n, io.SeekStart); err != nil {
			return ""
		}
	}
	b, _ := io.ReadAll(f)
	return string(b)
}

// BuildTally builds ./cmd/tally of the module at root into dir.
func BuildTally(ctx context.Context, root, dir string) (string, error) {
	bin := filepath.Join(dir, "tally")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/tally")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build tally: %w\n%s", err, out)
	}
	return bin, nil
}
