package main

import (
	"context"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"claimdesk/internal/audit"
	"claimdesk/internal/durable"
	"claimdesk/internal/tasks"
	"claimdesk/internal/tasks/taskstest"
	"claimdesk/internal/webhooks"
	"claimdesk/internal/webhooks/receivertest"
)

// The webhook commands: what they print is what a receiver verifies with
// (a deliverer of the test's own delivers to a real receiver), what they
// change is the command line's, audited, and bad input is a usage error.
func TestWebhookCommands(t *testing.T) {
	srv := taskstest.Redis(t)
	key := strings.Repeat("7c", 32)
	env := envWith(srv.Addr(), "CLAIMDESK_WEBHOOK_ALLOW_NETWORKS", "127.0.0.0/8", "CLAIMDESK_WEBHOOK_KEY", key)
	ctx := context.Background()
	rdb := srv.Client()
	if _, err := command(env, "", "queue", "add", "triage"); err != nil {
		t.Fatal(err)
	}
	// A deliverer, as an instance of claimdesk serve runs one.
	ts := tasks.New(rdb)
	keyBytes, _ := hex.DecodeString(key)
	sealer, err := webhooks.NewSealer(keyBytes)
	if err != nil {
		t.Fatal(err)
	}
	_, loopback, _ := net.ParseCIDR("127.0.0.0/8")
	egress := &webhooks.Egress{Allow: []*net.IPNet{loopback}, Timeout: 5 * time.Second}
	store := webhooks.NewStore(rdb, ts, sealer, egress, durable.Policy{})
	d := webhooks.NewDeliverer(webhooks.Config{Store: store, Tasks: ts, Egress: egress, Instance: "test",
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ts.Observe(d.Observe)
	running, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); d.Run(running) }()
	t.Cleanup(func() { stop(); <-done })
	complete := func() {
		t.Helper()
		if _, err := ts.Enqueue(ctx, "triage", "pat", []tasks.NewJob{{Title: "Check invoice"}}); err != nil {
			t.Fatal(err)
		}
		r, err := ts.Claim(ctx, "triage", "dora")
		if err != nil || r == nil {
			t.Fatalf("claim: %v, %v", r, err)
		}
		if _, err := ts.Complete(ctx, r.Job.ID, r.Hold(), nil); err != nil {
			t.Fatal(err)
		}
	}

	rc := receivertest.Start(t)
	out, err := command(env, "", "webhook", "add", "--url", rc.URL(), "--events", "job.completed,job.dead", "--queues", "triage")
	added := regexp.MustCompile(`^webhook (wh_[a-z2-7]{16}) added: job.completed,job.dead of triage to http://127\.0\.0\.1:\d+/hook\n` +
		`secret (whsec_\S+)\n\(shown this once: .*\)\n$`).FindStringSubmatch(out)
	if err != nil || added == nil {
		t.Fatalf("webhook add: %v\n%s", err, out)
	}
	id, secret := added[1], added[2]
	rc.SetSecrets(secret)
	complete()
	rc.Wait(t, func(ds []receivertest.Delivery) bool { return len(ds) == 1 }, 10*time.Second)

	out, err = command(env, "", "webhook", "list")
	rows := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if err != nil || len(rows) != 2 || !strings.HasPrefix(rows[0], "ID ") ||
		strings.Join(strings.Fields(rows[1]), " ") != id+" "+rc.URL()+" command line job.completed,job.dead triage yes - 0" {
		t.Fatalf("webhook list: %v\n%s", err, out)
	}

	// Rotated: the new secret signs what follows.
	out, err = command(env, "", "webhook", "rotate", id)
	rotated := regexp.MustCompile(`^webhook ` + id + `: new secret (whsec_\S+)\n\(shown this once: .*\)\n` +
		`the old secret signs beside it until (\S+)\n$`).FindStringSubmatch(out)
	if err != nil || rotated == nil || rotated[1] == secret {
		t.Fatalf("webhook rotate: %v\n%s", err, out)
	}
	if until, err := time.Parse(time.RFC3339, rotated[2]); err != nil || time.Until(until) < webhooks.RotationOverlap-time.Minute {
		t.Fatalf("webhook rotate: the old secret signs until %s, %v", rotated[2], err)
	}
	rc.SetSecrets(rotated[1])
	complete()
	rc.Wait(t, func(ds []receivertest.Delivery) bool { return len(ds) == 2 }, 10*time.Second)
	if bad := rc.Bad(); len(bad) > 0 {
		t.Fatalf("deliveries the receiver refused: %v", bad)
	}

	// Paused (from elsewhere), it says so.
	paused := false
	if _, _, err := store.Update(ctx, id, webhooks.Patch{Enabled: &paused}); err != nil {
		t.Fatal(err)
	}
	if out, err := command(env, "", "webhook", "list"); err != nil || !strings.Contains(out, " no: paused ") {
		t.Fatalf("webhook list of a paused webhook: %v\n%s", err, out)
	}

	if out, err := command(env, "", "webhook", "remove", id); err != nil || out != "webhook "+id+" removed: nothing more is sent to it\n" {
		t.Fatalf("webhook remove: %v\n%s", err, out)
	}
	if out, err := command(env, "", "webhook", "list"); err != nil || strings.Count(out, "\n") != 1 {
		t.Fatalf("webhook list after the remove: %v\n%s", err, out)
	}
	entries, _, err := audit.New(rdb).List(ctx, "", 10, audit.Filter{})
	var did []string
	for _, e := range entries {
		if e.Target == id && e.Actor == audit.CommandLine {
			did = append(did, e.Action)
		}
	}
	if err != nil || strings.Join(did, " ") != "webhook.deleted webhook.rotated webhook.created" {
		t.Fatalf("the audit log of the commands: %v, %v", did, err)
	}

	for _, args := range [][]string{
		{"webhook"}, {"webhook", "show"}, {"webhook", "add", "--events", "job.dead"}, {"webhook", "add", "--url", rc.URL()},
		{"webhook", "add", "--url", "http://10.0.0.1/hooks", "--events", "job.dead"},
		{"webhook", "add", "--url", rc.URL(), "--events", "job.eaten"},
		{"webhook", "add", "--url", rc.URL(), "--events", "job.dead", "--queues", "no-such-queue"},
		{"webhook", "list", "extra"}, {"webhook", "remove"}, {"webhook", "rotate"},
	} {
		_, err := command(env, "", args...)
		var u usageError
		if !errors.As(err, &u) {
			t.Errorf("%q: error %v, want a usage error", args, err)
		}
	}
	for _, args := range [][]string{{"webhook", "remove", id}, {"webhook", "rotate", "wh_nope"}} {
		_, err := command(env, "", args...)
		var u usageError
		if !errors.Is(err, webhooks.ErrNotFound) || errors.As(err, &u) {
			t.Errorf("%q: error %v, want no such webhook", args, err)
		}
	}
	if out, _ := command(env, "", "webhook", "list"); strings.Count(out, "\n") != 1 {
		t.Fatalf("refused commands registered a webhook:\n%s", out)
	}
}
