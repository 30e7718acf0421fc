package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"claimdesk/internal/desk"
	"claimdesk/internal/handlers"
	"claimdesk/internal/tasks"
	"claimdesk/internal/users"
	"claimdesk/internal/webhooks"
	"claimdesk/internal/webhooks/receivertest"
)

// The webhooks' API: each call is the desk's action (who may do what, and
// what it changes, are tested in internal/desk), read from the request
// and answered as the contract says.

// hookBody is a webhook of the app's queue at url, for events.
func (a *app) hookBody(url, events string) string {
	return fmt.Sprintf(`{"url":%q,"events":[%s],"queues":[%q]}`, url, events, a.queue)
}

// addHook registers a webhook as the token's user, and returns it and its
// secret.
func (a *app) addHook(token, url string) (map[string]any, string) {
	a.t.Helper()
	out := a.expect("POST", "/api/v1/webhooks", token, a.hookBody(url, `"job.completed","job.dead"`), 201, "")
	secret, _ := out["secret"].(string)
	if !strings.HasPrefix(secret, "whsec_") {
		a.t.Fatalf("registered webhook's secret %q", secret)
	}
	return out["webhook"].(map[string]any), secret
}

// listed reports whether a listing's webhooks hold the one of id.
func listed(out map[string]any, id string) bool {
	for _, w := range out["webhooks"].([]any) {
		if w.(map[string]any)["id"] == id {
			return true
		}
	}
	return false
}

func TestWebhookAPI(t *testing.T) {
	a := newApp(t)
	hook, secret := a.addHook(a.producer, "http://127.0.0.1:9/hooks")
	id := hook["id"].(string)
	if hook["url"] != "http://127.0.0.1:9/hooks" || mustJSON(hook["events"]) != `["job.completed","job.dead"]` ||
		mustJSON(hook["queues"]) != `["`+a.queue+`"]` || hook["owner"] != a.nameOf(a.producer) || hook["enabled"] != true {
		t.Fatalf("registered webhook %v", hook)
	}
	path := "/api/v1/webhooks/" + id
	// Its owner and supervisors see it; never its secret again.
	for _, token := range []string{a.producer, a.super} {
		if out := a.expect("GET", "/api/v1/webhooks", token, "", 200, ""); !listed(out, id) {
			t.Fatalf("the webhook is not listed: %v", out)
		}
		if out := a.expect("GET", path, token, "", 200, ""); out["id"] != id || strings.Contains(mustJSON(out), secret) {
			t.Fatalf("GET %s: %v", path, out)
		}
	}

	// Changed: only what is given; paused, then enabled again.
	out := a.expect("PATCH", path, a.producer, `{"enabled":false}`, 200, "")
	if out["enabled"] != false || out["disabled_reason"] != webhooks.DisabledPaused || mustJSON(out["events"]) != `["job.completed","job.dead"]` {
		t.Fatalf("paused: %v", out)
	}
	out = a.expect("PATCH", path, a.super, `{"events":["batch.finished","job.canceled"],"enabled":true}`, 200, "")
	if out["enabled"] != true || out["disabled_reason"] != nil || mustJSON(out["events"]) != `["job.canceled","batch.finished"]` {
		t.Fatalf("changed and enabled: %v", out)
	}

	// Rotated: a new secret, the old one signing for a day beside it.
	out = a.expect("POST", path+"/rotate", a.producer, "", 200, "")
	fresh, _ := out["secret"].(string)
	until, _ := time.Parse(time.RFC3339, fmt.Sprint(out["webhook"].(map[string]any)["previous_secret_until"]))
	if !strings.HasPrefix(fresh, "whsec_") || fresh == secret || time.Until(until) < webhooks.RotationOverlap-time.Minute {
		t.Fatalf("rotated: %v", out)
	}

	// No deliveries yet; none to replay.
	if out := a.expect("GET", path+"/deliveries?limit=10", a.producer, "", 200, ""); len(out["deliveries"].([]any)) != 0 {
		t.Fatalf("deliveries of a new webhook: %v", out)
	}
	a.expect("POST", path+"/deliveries/evt_1-0."+a.queue+"/replay", a.producer, "", 404, "not_found")

	// Removed: gone for everyone.
	a.expect("DELETE", path, a.producer, "", 204, "")
	a.expect("GET", path, a.super, "", 404, "not_found")
	a.expect("DELETE", path, a.super, "", 404, "not_found")
	if out := a.expect("GET", "/api/v1/webhooks", a.super, "", 200, ""); listed(out, id) {
		t.Fatalf("a removed webhook is listed: %v", out)
	}
}

// Refusals: each a 4xx that changes nothing.
func TestWebhookAPIRefuses(t *testing.T) {
	a := newApp(t)
	hook, _ := a.addHook(a.producer, "http://127.0.0.1:9/hooks")
	path := "/api/v1/webhooks/" + hook["id"].(string)
	before := mustJSON(a.expect("GET", path, a.producer, "", 200, ""))

	// Operators manage none; another producer does not see this one.
	_, stranger := a.newUser(users.Producer, a.queue)
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/api/v1/webhooks", ""},
		{"POST", "/api/v1/webhooks", a.hookBody("http://127.0.0.1:9/hooks", `"job.completed"`)},
		{"GET", path, ""},
		{"PATCH", path, `{"enabled":false}`},
		{"DELETE", path, ""},
		{"POST", path + "/rotate", ""},
		{"GET", path + "/deliveries", ""},
		{"POST", path + "/deliveries/evt_1-0." + a.queue + "/replay", ""},
	} {
		a.expect(c.method, c.path, a.operator, c.body, 403, "forbidden")
		if c.path != "/api/v1/webhooks" {
			a.expect(c.method, c.path, stranger, c.body, 404, "not_found")
		}
	}
	if out := a.expect("GET", "/api/v1/webhooks", stranger, "", 200, ""); listed(out, hook["id"].(string)) {
		t.Fatalf("another producer lists the webhook: %v", out)
	}

	// What the webhook would be: each refused field named.
	for _, c := range []struct{ token, body, field string }{
		{a.producer, a.hookBody("http://10.0.0.1/hooks", `"job.completed"`), "url"},
		{a.producer, a.hookBody("ftp://127.0.0.1/hooks", `"job.completed"`), "url"},
		{a.producer, a.hookBody("http://127.0.0.1:9/hooks", `"job.eaten"`), "events"},
		{a.producer, `{"url":"http://127.0.0.1:9/hooks","events":[]}`, "events"},
		{a.super, `{"url":"http://127.0.0.1:9/hooks","events":["job.dead"],"queues":["` + a.queue + `-none"]}`, "queues"},
	} {
		out := a.expect("POST", "/api/v1/webhooks", c.token, c.body, 422, "invalid_webhook")
		if fields, _ := out["error"].(map[string]any)["fields"].(map[string]any); fields[c.field] == nil || len(fields) != 1 {
			t.Errorf("POST %s: fields %v, want %s", c.body, fields, c.field)
		}
	}
	a.expect("PATCH", path, a.producer, `{"url":"http://169.254.169.254/latest"}`, 422, "invalid_webhook")
	a.expect("PATCH", path, a.producer, `{"events":["job.eaten"]}`, 422, "invalid_webhook")
	// Another's queue; JSON it does not take; a limit out of range.
	if _, err := a.tasks.PutQueue(context.Background(), tasks.Queue{Name: a.queue + "-another"}); err != nil {
		t.Fatal(err)
	}
	a.expect("POST", "/api/v1/webhooks", a.producer, `{"url":"http://127.0.0.1:9/hooks","events":["job.dead"],"queues":["`+a.queue+`-another"]}`, 403, "forbidden")
	a.expect("POST", "/api/v1/webhooks", a.producer, `{"url":"http://127.0.0.1:9/hooks","events":["job.dead"],"secret":"mine"}`, 400, "invalid_json")
	a.expect("PATCH", path, a.producer, `{"enabled":"no"}`, 400, "invalid_field")
	a.expect("PATCH", path, a.producer, `{"paused":true}`, 400, "invalid_json")
	a.expect("GET", path+"/deliveries?limit=1001", a.producer, "", 400, "invalid_field")
	if after := mustJSON(a.expect("GET", path, a.producer, "", 200, "")); after != before {
		t.Fatalf("refusals changed the webhook:\n%s\nnow\n%s", before, after)
	}

	// At most webhooks.MaxPerOwner each.
	_, busy := a.newUser(users.Producer, a.queue)
	for range webhooks.MaxPerOwner {
		a.addHook(busy, "http://127.0.0.1:9/hooks")
	}
	a.expect("POST", "/api/v1/webhooks", busy, a.hookBody("http://127.0.0.1:9/hooks", `"job.dead"`), 409, "webhook_limit")
	if out := a.expect("GET", "/api/v1/webhooks", busy, "", 200, ""); len(out["webhooks"].([]any)) != webhooks.MaxPerOwner {
		t.Fatalf("after the limit: %d webhooks", len(out["webhooks"].([]any)))
	}
}

// A webhook registered through the API receives a completed job's event,
// signed with the secret the API answered (the receiver verifies it with
// the Standard Webhooks library), lists its delivery, and receives it
// again when it is replayed.
func TestWebhookDelivered(t *testing.T) {
	a := appWith(t, func(cfg *handlers.Config) {
		d := webhooks.NewDeliverer(webhooks.Config{Store: cfg.Webhooks, Tasks: cfg.Tasks, Egress: loopbackEgress(),
			Instance: "test", Log: slog.New(slog.NewTextHandler(io.Discard, nil)), May: desk.MayReceive(cfg.Users)})
		cfg.Tasks.Observe(d.Observe)
		cfg.WebhooksChanged = d.Changed
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); d.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
	})
	rc := receivertest.Start(t)
	hook, secret := a.addHook(a.producer, rc.URL())
	rc.SetSecrets(secret)
	id := a.enqueue("Check invoice INV-2026-0502")
	_, token := a.claim()
	a.expect("POST", "/api/v1/jobs/"+id+"/complete", a.operator, `{"token":"`+token+`","result":{"approved":true}}`, 200, "")

	rc.Wait(t, func(ds []receivertest.Delivery) bool { return len(ds) == 1 }, 10*time.Second)
	got := rc.Deliveries()[0]
	var job struct {
		ID     string          `json:"id"`
		State  string          `json:"state"`
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(got.Event.Data, &job); err != nil || got.Bad != "" || got.Event.Type != "job.completed" ||
		job.ID != id || job.State != "completed" || string(job.Result) != `{"approved":true}` {
		t.Fatalf("delivery %+v (%v), job %+v", got, err, job)
	}

	path := "/api/v1/webhooks/" + hook["id"].(string)
	var listedDelivery map[string]any
	eventually(t, 10*time.Second, "the delivery listed as succeeded", func() bool {
		ds := a.expect("GET", path+"/deliveries", a.producer, "", 200, "")["deliveries"].([]any)
		if len(ds) != 1 {
			t.Fatalf("deliveries %v, want the one", ds)
		}
		listedDelivery = ds[0].(map[string]any)
		return listedDelivery["state"] == webhooks.StateSucceeded
	})
	if listedDelivery["id"] != got.ID || listedDelivery["event"] != "job.completed" || listedDelivery["attempts"] != 1.0 ||
		listedDelivery["last_status"] != 204.0 {
		t.Fatalf("listed delivery %v, want the one received (%s)", listedDelivery, got.ID)
	}

	out := a.expect("POST", path+"/deliveries/"+got.ID+"/replay", a.super, "", 200, "")
	if out["id"] != got.ID || out["state"] != webhooks.StatePending || out["attempts"] != 0.0 {
		t.Fatalf("replayed %v", out)
	}
	rc.Wait(t, func(ds []receivertest.Delivery) bool { return len(ds) == 2 }, 10*time.Second)
	if again := rc.Deliveries()[1]; again.ID != got.ID || string(again.Body) != string(got.Body) || again.Bad != "" {
		t.Fatalf("replayed delivery %+v, want the event %s again", again, got.ID)
	}
}
