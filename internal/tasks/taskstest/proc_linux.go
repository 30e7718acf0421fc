package taskstest

import (
	"os/exec"
	"syscall"
)

// DieWithParent makes the kernel kill the child if the test binary
// dies without running its cleanups, so no redis-server outlives a crash.
func DieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
