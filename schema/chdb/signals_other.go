//go:build !linux || !(amd64 || arm64)

package chdb

import "errors"

// The embedded store is built and tested on Linux amd64; elsewhere (and on
// Linux CPUs whose struct sigaction differs) Open refuses with an error.

type signalState struct{}

func saveSignals() (signalState, error) {
	return signalState{}, errors.New("chdb: signal handling is implemented for Linux only")
}

func (signalState) restore() ([]string, error) { return nil, nil }

func checkPathFree(string) error { return nil }

// releaseStartupPages gives back nothing where the engine does not run.
func releaseStartupPages(string) (before, after uint64) { return 0, 0 }
