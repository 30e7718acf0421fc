package tasks

import (
	"context"
	"embed"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// script is one Lua file of lua/, with lib.lua in front of it.
type script struct{ *redis.Script }

func loadScript(name string) script {
	lib, err := luaFiles.ReadFile("lua/lib.lua")
	if err != nil {
		panic(err)
	}
	body, err := luaFiles.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic(err)
	}
	return script{redis.NewScript(string(lib) + "\n" + string(body))}
}

var (
	enqueueScript     = loadScript("enqueue")
	claimScript       = loadScript("claim")
	completeScript    = loadScript("complete")
	releaseScript     = loadScript("release")
	extendScript      = loadScript("extend")
	failScript        = loadScript("fail")
	reclaimScript     = loadScript("reclaim")
	promoteScript     = loadScript("promote")
	cancelScript      = loadScript("cancel")
	requeueScript     = loadScript("requeue")
	purgeScript       = loadScript("purge")
	listScript        = loadScript("list")
	statsScript       = loadScript("stats")
	batchSealScript   = loadScript("batch_seal")
	batchCancelScript = loadScript("batch_cancel")
)

// run calls the script on the queue's keys (EVALSHA, falling back to EVAL) and
// turns its status code into an error. It returns the values after the code.
func (sc script) run(ctx context.Context, rdb redis.Scripter, queue string, args ...any) ([]any, error) {
	res, err := sc.Run(ctx, rdb, keysFor(queue).all(), args...).Slice()
	if err != nil {
		return nil, redisErr(err)
	}
	if len(res) == 0 {
		return nil, errors.New("script answered nothing")
	}
	code, _ := res[0].(string)
	if code == "ok" || code == "empty" {
		return res[1:], nil
	}
	if err, ok := statusErrors[code]; ok {
		return nil, err
	}
	return nil, fmt.Errorf("script answered unknown status %q", code)
}

// redisErr wraps an error of the Redis client.
func redisErr(err error) error { return fmt.Errorf("redis: %w", err) }
