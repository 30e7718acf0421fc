package main

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal makes the kernel kill the child when the bench dies
// without cleaning up, so no claimdesk server outlives it.
func setParentDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
