//go:build !linux

package taskstest

import "os/exec"

// DieWithParent is a no-op where the parent-death signal is
// unavailable.
func DieWithParent(*exec.Cmd) {}
