package handlers_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"

	"claimdesk/internal/handlers"
	"claimdesk/internal/keys"
	"claimdesk/internal/notify"
	"claimdesk/internal/tasks"
	"claimdesk/internal/users"

	"github.com/redis/go-redis/v9"
)

// An operator's recent work and when they last acted are written before
// the action answers, not with its notices, which may be lost: on a
// server whose notices cannot go out (its announcer's Redis is out of
// reach, as when they are dropped from a full queue), a completed job is
// in the operator's recent work when the completion is answered.
func TestRecentWorkDoesNotWaitForNotices(t *testing.T) {
	a := appWith(t, func(c *handlers.Config) {
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		unreachable := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
		t.Cleanup(func() { unreachable.Close() })
		announce := notify.NewAnnouncer(notify.NewBus(unreachable, log), log)
		t.Cleanup(func() { _ = announce.Close(context.Background()) })
		ts := tasks.New(c.Redis)
		ts.Observe(announce.Observe)
		c.Tasks = ts
	})
	name, token := a.newUser(users.Operator, a.queue)
	id := a.enqueue("kept")
	out := a.expect("POST", "/api/v1/queues/"+a.queue+"/claim", token, "", http.StatusOK, "")
	hold := out["reservation"].(map[string]any)["token"].(string)
	a.expect("POST", "/api/v1/jobs/"+id+"/complete", token, `{"token":"`+hold+`"}`, http.StatusOK, "")

	ctx := context.Background()
	recent, err := notify.RecentWork(ctx, a.rdb, name)
	if err != nil || len(recent) != 1 || recent[0].JobID != id || recent[0].Action != tasks.ActionCompleted {
		t.Fatalf("recent work when the completion is answered: %+v, %v; want the job, completed", recent, err)
	}
	if at, err := a.rdb.HGet(ctx, keys.LastAction, name).Int64(); err != nil || at != recent[0].At.UnixMilli() {
		t.Fatalf("last action when the completion is answered: %d, %v; want %v", at, err, recent[0].At)
	}
}
