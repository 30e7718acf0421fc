package tasks

import (
	"context"
	"strings"
	"testing"

	"claimdesk/internal/keys"
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

// Each function of the library, called first on a server that has just
// loaded it, binds the globals' locals before it uses one (luaGlobals): a
// function that did not would find them nil, and Redis refuses it any
// global of the load. Called with empty arguments, each answers or fails
// on them, never on a global.
func TestFunctionsBindTheirGlobalsFirst(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := taskstest.Redis(t).Client()
	defer rdb.Close()
	l := newLibrary()
	names := map[string][]string{l.many: keysOf(keys.Parts)}
	for i, f := range l.files {
		var parts []keys.Part
		for _, at := range l.parts[i] {
			parts = append(parts, keys.Parts[at])
		}
		names[l.names[f]] = keysOf(parts)
	}
	args := make([]any, 30)
	for i := range args {
		args[i] = ""
	}
	for name, ks := range names {
		if err := rdb.FunctionFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.FunctionLoad(ctx, l.code).Err(); err != nil {
			t.Fatal(err)
		}
		err := rdb.FCall(ctx, name, ks, args...).Err()
		if err != nil && strings.Contains(err.Error(), "global") {
			t.Errorf("%s, called first: %v", name, err)
		}
	}
}

// keysOf names the parts' keys of a queue "bind".
func keysOf(parts []keys.Part) []string {
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = keysFor("bind").Key(p)
	}
	return out
}
