//go:build !linux

package chdb

import "errors"

// The embedded store is built and tested on Linux; elsewhere Open refuses
// before these are reached.

type signalState struct{}

func saveSignals() (signalState, error) {
	return signalState{}, errors.New("chdb: signal handling is implemented for Linux only")
}

func (signalState) restore() ([]string, error) { return nil, nil }

func checkPathFree(string) error { return nil }
