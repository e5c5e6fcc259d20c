package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/spf13/pflag"
)

// debugListenFlag names the opt-in listener for Go's profiling endpoints.
const debugListenFlag = "debug-listen"

func init() {
	serveFlagHooks = append(serveFlagHooks, func(fs *pflag.FlagSet) {
		fs.String(debugListenFlag, "", "serve Go profiling (net/http/pprof under /debug/pprof/) on this separate address, e.g. 127.0.0.1:6060; off when empty")
	})
	serveHooks = append(serveHooks, startDebugListener)
}

// startDebugListener serves net/http/pprof on --debug-listen, apart from the
// main listener so that profiling is never reachable through the API port.
// A non-loopback address needs --insecure: profiles reveal program state.
func startDebugListener(env *serveEnv) error {
	addr, _ := env.flags.GetString(debugListenFlag) // registered above; "" means off
	if addr == "" {
		return nil
	}
	if insecure, _ := env.flags.GetBool("insecure"); !isLoopback(addr) && !insecure {
		return fmt.Errorf("refusing --%s on non-loopback %s without --insecure", debugListenFlag, addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--%s: %w", debugListenFlag, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			env.log.Warn("debug listener stopped", "err", err)
		}
	}()
	go func() {
		<-env.ctx.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}()
	env.log.Info("profiling enabled", "debug_listen", ln.Addr().String(), "pprof", "http://"+ln.Addr().String()+"/debug/pprof/")
	return nil
}
