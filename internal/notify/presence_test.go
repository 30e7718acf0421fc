package notify

import (
	"context"
	"testing"
	"time"

	"claimdesk/internal/tasks/taskstest"
)

// Presence: marked users are online until PresenceTimeout passes without a
// mark; Everyone also tells when each last changed a job.
func TestPresence(t *testing.T) {
	srv := taskstest.Redis(t)
	rdb := srv.Client()
	p := NewPresence(rdb, quiet())
	now := time.Now()
	p.now = func() time.Time { return now }
	ctx := context.Background()
	if err := p.Mark(ctx, "ann", "bob"); err != nil {
		t.Fatal(err)
	}
	now = now.Add(PresenceTimeout / 2)
	if err := p.Mark(ctx, "bob"); err != nil {
		t.Fatal(err)
	}
	if err := rdb.HSet(ctx, "cd:lastaction", "bob", now.UnixMilli()).Err(); err != nil {
		t.Fatal(err)
	}
	seen, err := p.Everyone(ctx)
	if err != nil {
		t.Fatal(err)
	}
	later := now.Add(PresenceTimeout/2 + time.Second)
	if !seen["ann"].Open(now) || seen["ann"].Open(later) || !seen["bob"].Open(later) || seen["carl"].Open(now) {
		t.Fatalf("seen = %+v", seen)
	}
	if seen["bob"].LastAction.UnixMilli() != now.UnixMilli() || !seen["ann"].LastAction.IsZero() {
		t.Fatalf("last actions: %+v", seen)
	}
	// A hub's viewers are marked by Run's beat; Viewers names each once.
	hub := NewHub()
	hub.Join(ann)
	hub.Join(ann)
	hub.Join(bob)
	if v := hub.Viewers(); len(v) != 2 {
		t.Fatalf("Viewers = %v", v)
	}
}
