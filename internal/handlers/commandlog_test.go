package handlers

import (
	"fmt"
	"sync"

	"claimdesk/internal/tasks/taskstest"

	"github.com/redis/go-redis/v9"
)

// CommandLog notes every command sent, pipelined or not (Hook), as its name and first key (a function's name and first key for
// FCALL), for the tests that count what a request costs.
type CommandLog struct {
	mu   sync.Mutex
	cmds []string
}

// Hook is the Redis hook that notes the commands.
func (l *CommandLog) Hook() redis.Hook { return taskstest.Hook(l.note) }

func (l *CommandLog) note(cmd redis.Cmder) {
	line := cmd.Name()
	args := cmd.Args()
	switch {
	case line == "fcall" && len(args) > 3:
		line += fmt.Sprintf(" %v %v", args[1], args[3]) // the function, its first key
	case len(args) > 1:
		line += fmt.Sprintf(" %v", args[1])
	}
	l.mu.Lock()
	l.cmds = append(l.cmds, line)
	l.mu.Unlock()
}

// During returns the commands fn made.
func (l *CommandLog) During(fn func()) []string {
	l.mu.Lock()
	l.cmds = nil
	l.mu.Unlock()
	fn()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cmds
}
