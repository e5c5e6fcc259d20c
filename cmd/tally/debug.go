package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// startDebugListener serves net/http/pprof on --debug-listen, apart from the
// main listener so that profiling is never reachable through the API port.
// A non-loopback address needs --insecure: profiles reveal program state.
func startDebugListener(ctx context.Context, addr string, insecure bool, log *slog.Logger) error {
	if addr == "" {
		return nil
	}
	if !isLoopback(addr) && !insecure {
		return fmt.Errorf("refusing --debug-listen on non-loopback %s without --insecure", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--debug-listen: %w", err)
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
			log.Warn("debug listener stopped", "err", err)
		}
	}()
	go func() {
		<-ctx.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}()
	log.Info("profiling enabled", "debug_listen", ln.Addr().String(), "pprof", "http://"+ln.Addr().String()+"/debug/pprof/")
	return nil
}
