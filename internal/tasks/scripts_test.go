package tasks

import (
	"context"
	"strings"
	"testing"

	"claimdesk/internal/tasks/taskstest"

	"github.com/redis/go-redis/v9"
)

// A server that lost the function library (a restart without persistence,
// FUNCTION FLUSH, a replica promoted before it had the library) is given it
// again by the next call, which then succeeds.
func TestLibraryLoadedWhereMissing(t *testing.T) {
	t.Parallel()
	private := taskstest.Redis(t).Client()
	defer private.Close()
	// The cluster is shared with tests running in parallel: they reload the
	// library as this one does.
	for _, b := range []backend{{"standalone", private}, backends[1]} {
		t.Run(b.name, func(t *testing.T) {
			e := newEnv(t, b.rdb, Queue{})
			ctx := e.ctx
			masters := func(fn func(c *redis.Client) error) {
				t.Helper()
				var err error
				if cc, ok := e.rdb.(*redis.ClusterClient); ok {
					err = cc.ForEachMaster(ctx, func(_ context.Context, c *redis.Client) error { return fn(c) })
				} else {
					err = fn(e.rdb.(*redis.Client))
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			masters(func(c *redis.Client) error { return c.FunctionFlush(ctx).Err() })

			j := e.add("after the flush", 50)
			r, err := e.store.Claim(ctx, e.queue, "ann")
			if err != nil || r == nil || r.Job.ID != j.ID {
				t.Fatalf("Claim after the flush = %+v, %v; want %s", r, err, j.ID)
			}
			masters(func(c *redis.Client) error {
				libs, err := c.FunctionList(ctx, redis.FunctionListQuery{}).Result()
				if err != nil {
					return err
				}
				for _, l := range libs {
					if strings.HasPrefix(l.Name, "claimdesk_") && len(l.Functions) == len(library.names)+1 { // and many
						return nil
					}
				}
				t.Errorf("%s has no complete claimdesk library: %+v", c.Options().Addr, libs)
				return nil
			})
		})
	}
}
