package handlers_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"claimdesk/internal/handlers"
	"claimdesk/internal/keys"

	"github.com/redis/go-redis/v9"
)

// sessionWrites is a Redis hook that counts writes of web sessions.
type sessionWrites struct{ n atomic.Int64 }

func (*sessionWrites) DialHook(next redis.DialHook) redis.DialHook { return next }

func (*sessionWrites) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *sessionWrites) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if key, ok := cmd.Args()[min(1, len(cmd.Args())-1)].(string); ok && cmd.Name() == "set" && strings.HasPrefix(key, keys.Session("")) {
			h.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

// Reading pages and their live fragments leaves the session as it is, so
// that a refresh running beside a form post cannot undo what the post
// saved (the flash that says what happened).
func TestReadingPagesDoesNotRewriteTheSession(t *testing.T) {
	writes := &sessionWrites{}
	a := newApp(t)
	srv := a.serverWith(a.rdb, func(cfg *handlers.Config, _ *http.Server) {
		r := redis.NewClient(&redis.Options{Addr: a.rdb.(*redis.Client).Options().Addr})
		t.Cleanup(func() { r.Close() })
		r.AddHook(writes)
		cfg.Redis = r
	})
	b := a.browser()
	b.base = srv.URL
	b.login(a.opName, "password-"+a.opName)
	b.do("GET", "/", nil) // the home page pops the login's flash, if any
	before := writes.n.Load()
	for _, path := range []string{"/", "/fragments/home", "/fragments/home", "/"} {
		if b.do("GET", path, nil); b.status != http.StatusOK {
			t.Fatalf("GET %s: %d", path, b.status)
		}
	}
	if n := writes.n.Load() - before; n != 0 {
		t.Fatalf("reading pages wrote the session %d times, want none", n)
	}
}
