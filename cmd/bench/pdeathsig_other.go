//go:build !linux

package main

import "os/exec"

// setParentDeathSignal is a no-op where the parent-death signal is
// unavailable.
func setParentDeathSignal(*exec.Cmd) {}
