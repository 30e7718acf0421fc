package handlers_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"claimdesk/internal/handlers"
	"claimdesk/internal/tasks"
)

// The due times' numbers: each queue's jobs at risk and overdue when
// Prometheus scrapes, and the breaches the instance's store made.
func TestDueMetrics(t *testing.T) {
	a := newApp(t)
	ctx := context.Background()
	srv := a.serverWith(a.rdb, func(cfg *handlers.Config, _ *http.Server) { cfg.Tasks = a.tasks })
	past := a.now().Add(-time.Minute)
	if _, err := a.tasks.Enqueue(ctx, a.queue, "bot", []tasks.NewJob{{Title: "late", DueAt: &past}, {Title: "later", DueInSeconds: 3600}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.tasks.WatchDue(ctx, a.queue, 10); err != nil {
		t.Fatal(err)
	}
	res, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{
		fmt.Sprintf(`claimdesk_queue_sla_jobs{queue=%q,sla="at_risk"} 0`, a.queue),
		fmt.Sprintf(`claimdesk_queue_sla_jobs{queue=%q,sla="breached"} 1`, a.queue),
		fmt.Sprintf(`claimdesk_sla_breaches_total{queue=%q} 1`, a.queue),
	} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// Due times over the API: given at enqueue (and refused when both ways
// are given), answered with the job, and listed by where jobs stand.
func TestDueTimesAPI(t *testing.T) {
	a := newApp(t)
	q := "/api/v1/queues/" + a.queue + "/jobs"
	past := a.now().Add(-time.Minute).UTC().Format(time.RFC3339)
	late := a.expect("POST", q, a.producer, `{"title":"late","due_at":"`+past+`"}`, 201, "")["job"].(map[string]any)
	if late["sla"] != "breached" || late["due_at"] == nil {
		t.Fatalf("a job due a minute ago = %v", late)
	}
	soon := a.expect("POST", q, a.producer, `{"title":"soon","due_in_seconds":3600}`, 201, "")["job"].(map[string]any)
	if soon["sla"] != "on_time" {
		t.Fatalf("a job due in an hour = %v", soon)
	}
	a.expect("POST", q, a.producer, `{"title":"both","due_at":"`+past+`","due_in_seconds":60}`, 400, "invalid_field")
	if _, _, err := a.tasks.WatchDue(context.Background(), a.queue, 10); err != nil {
		t.Fatal(err)
	}
	list := "/api/v1/jobs?queue=" + a.queue + "&sla="
	got := a.expect("GET", list+"breached", a.super, "", 200, "")["jobs"].([]any)
	if len(got) != 1 || got[0].(map[string]any)["id"] != late["id"] {
		t.Fatalf("breached = %v", got)
	}
	if got := a.expect("GET", list+"at_risk", a.super, "", 200, "")["jobs"].([]any); len(got) != 0 {
		t.Fatalf("at risk = %v", got)
	}
	a.expect("GET", list+"on_time", a.super, "", 400, "invalid_field")
	a.expect("GET", list+"breached&state=ready", a.super, "", 400, "invalid_field")
	a.expect("GET", list+"breached", a.producer, "", 403, "forbidden")
}

// A queue's breach queue over the API: set (an unknown queue, or the
// queue itself, refused), and a job that moved answers its old id with
// 308 to its new one, which clients follow: its producer, though not
// granted the breach queue, reads and cancels it there.
func TestBreachQueueAPI(t *testing.T) {
	a := newApp(t)
	ctx := context.Background()
	leads := a.queue + "-leads"
	if _, err := a.tasks.CreateQueue(ctx, tasks.Queue{Name: leads}); err != nil {
		t.Fatal(err)
	}
	settings := "/api/v1/queues/" + a.queue
	a.expect("PATCH", settings, a.super, `{"breach_queue":"no-such-queue"}`, 400, "invalid_field")
	a.expect("PATCH", settings, a.super, `{"breach_queue":"`+a.queue+`"}`, 400, "invalid_field")
	if q := a.expect("PATCH", settings, a.super, `{"breach_queue":"`+leads+`"}`, 200, ""); q["breach_queue"] != leads {
		t.Fatalf("settings = %v", q)
	}
	past := a.now().Add(-time.Minute).UTC().Format(time.RFC3339)
	enqueue := `{"title":"late","due_at":"` + past + `","idempotency_key":"late-1"}`
	old := a.expect("POST", "/api/v1/queues/"+a.queue+"/jobs", a.producer, enqueue, 201, "")["job"].(map[string]any)["id"].(string)
	if _, _, err := a.tasks.WatchDue(ctx, a.queue, 10); err != nil {
		t.Fatal(err)
	}
	if n, _, err := a.tasks.MoveBreached(ctx, a.queue, 10); err != nil || n != 1 {
		t.Fatalf("MoveBreached = %d, %v", n, err)
	}
	moved := strings.TrimSuffix(old, a.queue) + leads
	// The redirect itself.
	req, _ := http.NewRequest("GET", a.srv.URL+"/api/v1/jobs/"+old+"?x=1", nil)
	req.Header.Set("Authorization", "Bearer "+a.producer)
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := noFollow.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 308 || res.Header.Get("Location") != "/api/v1/jobs/"+moved+"?x=1" || !strings.Contains(string(raw), `"job_moved"`) {
		t.Fatalf("old id: %d %q %s", res.StatusCode, res.Header.Get("Location"), raw)
	}
	// Followed, by its producer.
	j := a.expect("GET", "/api/v1/jobs/"+old, a.producer, "", 200, "")
	if j["id"] != moved || j["moved_from"] != a.queue || j["sla"] != "breached" {
		t.Fatalf("followed: %v", j)
	}
	a.expect("GET", "/api/v1/jobs/"+old+"/history", a.producer, "", 200, "")
	// Not to whom may not read it there: no word of where it went.
	if _, out := a.call("GET", "/api/v1/jobs/"+old, a.operator, ""); !strings.Contains(fmt.Sprint(out), "job_not_found") {
		t.Fatalf("an operator not its holder asked its old id: %v", out)
	}
	// An enqueue again with its key answers it where it is.
	again := a.expect("POST", "/api/v1/queues/"+a.queue+"/jobs", a.producer, enqueue, 200, "")["job"].(map[string]any)
	if again["id"] != moved {
		t.Fatalf("enqueue again = %v", again)
	}
	if c := a.expect("DELETE", "/api/v1/jobs/"+old, a.producer, "", 200, ""); c["state"] != "canceled" || c["id"] != moved {
		t.Fatalf("canceled = %v", c)
	}
	a.expect("GET", "/api/v1/jobs/"+strings.TrimSuffix(old, a.queue)+"nowhere", a.super, "", 404, "job_not_found")
}
