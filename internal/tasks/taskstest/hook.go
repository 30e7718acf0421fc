package taskstest

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Hook is a Redis hook that tells the function of every command a client
// sends, pipelined or not, before it goes: for tests that count or look at
// what a call sent.
type Hook func(redis.Cmder)

// DialHook leaves dialing alone.
func (h Hook) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook tells h of the command.
func (h Hook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h(cmd)
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook tells h of each command of the pipeline.
func (h Hook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			h(cmd)
		}
		return next(ctx, cmds)
	}
}
