package handlers_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"claimdesk/internal/handlers"
	"claimdesk/internal/users"
	"claimdesk/internal/webhooks"
	"claimdesk/internal/webhooks/receivertest"
)

// hooksApp is an app on a Redis of its own (appWith), whose webhooks are
// all the test's, served as claimdesk serve does: a deliverer runs, which
// tries a failed delivery again an hour later.
func hooksApp(t *testing.T) *app {
	t.Helper()
	return appWith(t, func(cfg *handlers.Config) {
		d := webhooks.NewDeliverer(webhooks.Config{Store: cfg.Webhooks, Tasks: cfg.Tasks, Egress: loopbackEgress(),
			Schedule: []time.Duration{0, time.Hour}, Instance: "pages", Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		cfg.Tasks.Observe(d.Observe)
		cfg.WebhooksChanged, cfg.DisabledWebhooks = d.Changed, d.Disabled
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); d.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
	})
}

var (
	secretRE  = regexp.MustCompile(`whsec_[A-Za-z0-9+/=]+`)
	hookIDRE  = regexp.MustCompile(`action="/webhooks/(wh_[a-z0-9]+)/pause"`)
	navMarkRE = regexp.MustCompile(`data-testid="webhooks-disabled">(\d+)<`)
)

// completeJob enqueues a job, has the operator claim and complete it
// through the API, and returns its id.
func (a *app) completeJob(title string) string {
	a.t.Helper()
	a.enqueue(title)
	id, token := a.claim()
	a.expect("POST", "/api/v1/jobs/"+id+"/complete", a.operator, `{"token":"`+token+`"}`, 200, "")
	return id
}

// deliveryRow is the row of the delivery of the event, as the page shows
// it; "" when the page has none.
func deliveryRow(page, event string) string {
	_, row, ok := strings.Cut(page, `data-testid="delivery-`+event+`"`)
	if !ok {
		return ""
	}
	row, _, _ = strings.Cut(row, "</tr>")
	return row
}

// Only supervisors open the webhooks' pages; a visitor is sent to log in.
// Without a key for the secrets, the page says they are stored unsealed,
// and what to set.
func TestWebhookPagesAreForSupervisors(t *testing.T) {
	// A claimdesk without a key: the desk's own registry, unsealed.
	a := appWith(t, func(cfg *handlers.Config) { cfg.Webhooks = nil })
	if b := a.browser().do("GET", "/webhooks", nil); b.status != http.StatusSeeOther || !strings.HasPrefix(b.body, "/login?next=") {
		t.Fatalf("a visitor on /webhooks: %d %s", b.status, b.body)
	}
	_, op := a.person(users.Operator, a.queue)
	for _, get := range []string{"/webhooks", "/webhooks/wh_any", "/webhooks/wh_any/fragments/deliveries"} {
		if op.do("GET", get, nil); op.status != http.StatusForbidden || !strings.Contains(op.body, "Not for you") {
			t.Fatalf("an operator on %s: %d", get, op.status)
		}
	}
	for _, post := range []string{"/webhooks", "/webhooks/wh_any/pause", "/webhooks/wh_any/rotate", "/webhooks/wh_any/remove", "/webhooks/wh_any/deliveries/evt_x/replay"} {
		if op.do("POST", post, url.Values{"_csrf": {op.csrf}, "url": {"https://93.184.215.14/hook"}, "events": {"job.completed"}}); op.status != http.StatusForbidden {
			t.Fatalf("an operator's POST %s: %d", post, op.status)
		}
	}
	if op.do("GET", "/", nil); strings.Contains(op.body, `href="/webhooks"`) {
		t.Fatal("an operator's navigation links the webhooks")
	}
	_, sup := a.person(users.Supervisor)
	sup.do("GET", "/webhooks", nil)
	if sup.status != 200 || !strings.Contains(sup.body, `data-testid="unsealed"`) || !strings.Contains(sup.body, "<code>CLAIMDESK_WEBHOOK_KEY</code>") ||
		!strings.Contains(sup.body, `href="/webhooks" class="current" aria-current="page"`) {
		t.Fatalf("the webhooks page of a claimdesk without a key: %d\n%s", sup.status, sup.body)
	}
}

// A supervisor adds a webhook, refused first where the form is wrong, and
// sees its secret once; follows its deliveries as the receiver answers,
// replays one; is told in the navigation when its receiver got it
// disabled; resumes, pauses, rotates and removes it.
func TestWebhookPages(t *testing.T) {
	a := hooksApp(t)
	_, b := a.person(users.Supervisor)
	rc := receivertest.Start(t)
	if b.do("GET", "/webhooks", nil); b.status != 200 || !strings.Contains(b.body, `data-testid="no-webhooks"`) || strings.Contains(b.body, `data-testid="unsealed"`) {
		t.Fatalf("the webhooks page, sealed and empty: %d\n%s", b.status, b.body)
	}
	add := func(v url.Values) {
		t.Helper()
		v.Set("_csrf", b.csrf)
		b.do("POST", "/webhooks", v)
	}

	// Refused: nothing is added, the form is shown again as typed, each
	// problem at its field.
	if b.do("POST", "/webhooks", url.Values{"url": {rc.URL()}, "events": {"job.completed"}}); b.status != http.StatusForbidden {
		t.Fatalf("adding without the CSRF token: %d", b.status)
	}
	for _, c := range []struct {
		name    string
		form    url.Values
		problem string
	}{
		{"an internal address", url.Values{"url": {"http://10.0.0.1/hook"}, "events": {"job.completed"}, "scope": {"every"}},
			`<span id="problem-url" class="field-problem" data-testid="problem-url">10.0.0.1 is a private address: webhooks go only to public addresses.</span>`},
		{"no event", url.Values{"url": {rc.URL()}, "scope": {"chosen"}, "queues": {a.queue}}, `data-testid="problem-events">Name at least one of job.completed`},
		{"no queue ticked", url.Values{"url": {rc.URL()}, "events": {"job.dead"}, "scope": {"chosen"}},
			`data-testid="problem-queues">Tick the queues whose events it receives, or choose every queue.`},
		{"no such queue", url.Values{"url": {rc.URL()}, "events": {"job.dead"}, "scope": {"chosen"}, "queues": {"no-such-queue"}},
			`data-testid="problem-queues">No queue is named no-such-queue.`},
	} {
		add(c.form)
		if b.status != http.StatusBadRequest || !strings.Contains(b.body, c.problem) || !strings.Contains(b.body, `value="`+c.form.Get("url")+`"`) {
			t.Fatalf("%s: %d, want 400 with %s\n%s", c.name, b.status, c.problem, b.body)
		}
		kept := []string{`value="` + c.form.Get("scope") + `" checked`}
		for _, q := range c.form["queues"] {
			if q == a.queue {
				kept = append(kept, `value="`+q+`" checked`)
			}
		}
		for _, e := range c.form["events"] {
			kept = append(kept, `value="`+e+`" checked`)
		}
		for _, k := range kept {
			if !strings.Contains(b.body, k) {
				t.Fatalf("%s: the form shown again lost what was ticked: %s", c.name, k)
			}
		}
		_, form, _ := strings.Cut(b.body, `data-testid="add-webhook"`)
		if form, _, _ = strings.Cut(form, "</form>"); strings.Count(form, " checked") != len(kept) {
			t.Fatalf("%s: the form shown again ticks more than was sent:\n%s", c.name, form)
		}
	}
	if b.do("GET", "/webhooks", nil); !strings.Contains(b.body, `data-testid="no-webhooks"`) {
		t.Fatal("a refused form added a webhook")
	}

	// Added: its page shows its secret this once.
	add(url.Values{"url": {rc.URL()}, "events": {"job.completed", "job.dead"}, "scope": {"chosen"}, "queues": {a.queue}})
	secret := secretRE.FindString(b.body)
	m := hookIDRE.FindStringSubmatch(b.body)
	if b.status != http.StatusCreated || secret == "" || m == nil || b.got.Get("Cache-Control") != "no-store" || !strings.Contains(b.body, "it will not be shown again") {
		t.Fatalf("added: %d %q\n%s", b.status, b.got.Get("Cache-Control"), b.body)
	}
	id, page := m[1], "/webhooks/"+m[1]
	rc.SetSecrets(secret)
	if b.do("GET", page, nil); b.status != 200 || strings.Contains(b.body, "whsec_") || !strings.Contains(b.body, `data-testid="no-deliveries"`) {
		t.Fatalf("the webhook's page shows its secret again, or a delivery: %d", b.status)
	}
	if b.do("GET", "/webhooks", nil); !strings.Contains(b.body, `data-testid="webhook-`+id+`"`) || strings.Contains(b.body, "whsec_") {
		t.Fatal("the list does not show the webhook, or shows its secret")
	}

	// A job completed: its delivery succeeded, linked to the job.
	job := a.completeJob("Check invoice INV-9")
	rc.Wait(t, func(ds []receivertest.Delivery) bool { return len(ds) == 1 }, 10*time.Second)
	first := rc.Deliveries()[0].ID
	eventually(t, 10*time.Second, "the delivery shown as succeeded", func() bool {
		b.do("GET", page+"/fragments/deliveries", nil)
		row := deliveryRow(b.body, first)
		return strings.Contains(row, `state-succeeded`) && strings.Contains(row, "204 No Content") &&
			strings.Contains(row, `href="/jobs/`+job+`">Check invoice INV-9</a>`)
	})

	// The receiver fails: the delivery waits for its next attempt, and
	// says how the receiver answered; once the receiver is mended, a
	// replay delivers it.
	rc.Answer(func(int, receivertest.Delivery) receivertest.Reply {
		return receivertest.Reply{Status: http.StatusInternalServerError, Body: "database is down"}
	})
	a.completeJob("Check invoice INV-10")
	rc.Wait(t, func(ds []receivertest.Delivery) bool { return len(ds) == 2 }, 10*time.Second)
	second := rc.Deliveries()[1].ID
	eventually(t, 10*time.Second, "the failed attempt shown", func() bool {
		b.do("GET", page+"/fragments/deliveries", nil)
		row := deliveryRow(b.body, second)
		return strings.Contains(row, `state-pending`) && strings.Contains(row, "500 Internal Server Error") && strings.Contains(row, "database is down")
	})
	rc.Answer(func(int, receivertest.Delivery) receivertest.Reply { return receivertest.Reply{} })
	if b.do("POST", page+"/deliveries/"+second+"/replay", url.Values{}); b.status != http.StatusForbidden {
		t.Fatalf("replay without the CSRF token: %d", b.status)
	}
	if b.do("POST", page+"/deliveries/"+second+"/replay", url.Values{"_csrf": {b.csrf}}); b.status != http.StatusSeeOther || b.body != page {
		t.Fatalf("replay: %d %s", b.status, b.body)
	}
	if b.do("GET", page, nil); !strings.Contains(b.body, "Replaying job.completed of “Check invoice INV-10”: its first attempt is due now.") {
		t.Fatal("the replay's flash is missing")
	}
	rc.Wait(t, func(ds []receivertest.Delivery) bool { return len(ds) == 3 }, 10*time.Second)
	eventually(t, 10*time.Second, "the replayed delivery shown as succeeded", func() bool {
		b.do("GET", page+"/fragments/deliveries", nil)
		return strings.Contains(deliveryRow(b.body, second), `state-succeeded`)
	})
	if b.do("POST", page+"/deliveries/evt_none/replay", url.Values{"_csrf": {b.csrf}}); b.status != http.StatusNotFound {
		t.Fatalf("replay of no delivery: %d", b.status)
	}

	// 410 Gone disables it: the page says what to do, and the
	// navigation marks it on every page; resumed, the mark goes.
	rc.Answer(func(int, receivertest.Delivery) receivertest.Reply {
		return receivertest.Reply{Status: http.StatusGone}
	})
	a.completeJob("Check invoice INV-11")
	eventually(t, 10*time.Second, "the navigation marking one disabled webhook", func() bool {
		b.do("GET", "/supervisor/team", nil)
		m := navMarkRE.FindStringSubmatch(b.body)
		return m != nil && m[1] == "1"
	})
	b.do("GET", "/webhooks", nil)
	if !strings.Contains(b.body, `data-testid="disabled-`+id+`"`) || !strings.Contains(b.body, "Its receiver answered 410 Gone") || !strings.Contains(b.body, "Disabled: answered 410 Gone") || !strings.Contains(b.body, "Failing since <time datetime=") {
		t.Fatalf("the list does not say the webhook is disabled, and why\n%s", b.body)
	}
	if b.do("POST", page+"/resume", url.Values{"_csrf": {b.csrf}}); b.status != http.StatusSeeOther || b.body != page {
		t.Fatalf("resume: %d %s", b.status, b.body)
	}
	if b.do("GET", page, nil); !strings.Contains(b.body, "Resumed the webhook to "+rc.URL()) || navMarkRE.MatchString(b.body) || strings.Contains(b.body, `data-testid="disabled-why"`) {
		t.Fatalf("resumed: the flash is missing, or it is still marked disabled\n%s", b.body)
	}

	// Paused: its page says so, and nothing is marked.
	if b.do("POST", page+"/pause", url.Values{"_csrf": {b.csrf}}); b.status != http.StatusSeeOther {
		t.Fatalf("pause: %d", b.status)
	}
	if b.do("GET", page, nil); !strings.Contains(b.body, "Paused the webhook to") || !strings.Contains(b.body, `data-testid="paused-note"`) ||
		!strings.Contains(b.body, `action="/webhooks/`+id+`/resume"`) || navMarkRE.MatchString(b.body) {
		t.Fatal("paused: the page does not say so, offers no resume, or marks it disabled")
	}

	// Rotated: the new secret is shown once, beside until when the old one
	// signs.
	b.do("POST", page+"/rotate", url.Values{"_csrf": {b.csrf}})
	rotated := secretRE.FindString(b.body)
	if b.status != http.StatusOK || rotated == "" || rotated == secret || !strings.Contains(b.body, "The previous secret signs beside it until <time datetime=") {
		t.Fatalf("rotate: %d\n%s", b.status, b.body)
	}
	if b.do("GET", page, nil); strings.Contains(b.body, "whsec_") || !strings.Contains(b.body, "Previous secret signs until <time datetime=") {
		t.Fatal("after a rotation, the page shows the secret again, or not until when the old one signs")
	}

	// Removed, with the CSRF token only.
	if b.do("POST", page+"/remove", url.Values{}); b.status != http.StatusForbidden {
		t.Fatalf("remove without the CSRF token: %d", b.status)
	}
	if b.do("POST", page+"/remove", url.Values{"_csrf": {b.csrf}}); b.status != http.StatusSeeOther || b.body != "/webhooks" {
		t.Fatalf("remove: %d %s", b.status, b.body)
	}
	if b.do("GET", "/webhooks", nil); !strings.Contains(b.body, "Removed the webhook to "+rc.URL()+", and its deliveries.") || !strings.Contains(b.body, `data-testid="no-webhooks"`) {
		t.Fatal("removed: no flash, or still listed")
	}
	for _, path := range []string{page, page + "/fragments/deliveries"} {
		if b.do("GET", path, nil); b.status != http.StatusNotFound {
			t.Fatalf("GET %s of a removed webhook: %d", path, b.status)
		}
	}
	for _, action := range []string{"pause", "resume", "rotate", "remove", "deliveries/" + first + "/replay"} {
		if b.do("POST", page+"/"+action, url.Values{"_csrf": {b.csrf}}); b.status != http.StatusNotFound {
			t.Fatalf("%s of a removed webhook: %d", action, b.status)
		}
	}
}
