package handlers_test

import (
	"context"
	"errors"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"claimdesk/internal/notify"
	"claimdesk/internal/tasks"
	"claimdesk/internal/users"
)

// Only supervisors change queues, through PATCH, pause, resume and delete.
func TestQueueAdminIsForSupervisors(t *testing.T) {
	a := newApp(t)
	q := "/api/v1/queues/" + a.queue
	for _, token := range []string{a.operator, a.producer} {
		a.expect("PATCH", q, token, `{"max_held":1}`, 403, "forbidden")
		a.expect("POST", q+"/pause", token, "", 403, "forbidden")
		a.expect("POST", q+"/resume", token, "", 403, "forbidden")
		a.expect("DELETE", q, token, "", 403, "forbidden")
	}
	a.expect("PATCH", q, "", `{"max_held":1}`, 401, "unauthenticated")
	got := a.expect("PATCH", q, a.super, `{}`, 200, "")
	if got["max_held"] != 0.0 || got["paused"] != false {
		t.Fatalf("queue = %v, want no hold cap, not paused", got)
	}
}

// PATCH changes only the fields given, and refuses bad values and unknown
// fields.
func TestPatchQueueAPI(t *testing.T) {
	a := newApp(t)
	q := "/api/v1/queues/" + a.queue
	before := a.expect("PATCH", q, a.super, `{}`, 200, "")
	got := a.expect("PATCH", q, a.super, `{"lease_seconds":120,"max_held":2}`, 200, "")
	if got["lease_seconds"] != 120.0 || got["max_held"] != 2.0 || got["max_attempts"] != before["max_attempts"] {
		t.Fatalf("patched = %v (before %v)", got, before)
	}
	a.expect("PATCH", q, a.super, `{"lease_seconds":0}`, 400, "invalid_field")
	a.expect("PATCH", q, a.super, `{"max_held":-1}`, 400, "invalid_field")
	a.expect("PATCH", q, a.super, `{"name":"other"}`, 400, "invalid_json")
	a.expect("PATCH", q, a.super, `{"paused":true}`, 400, "invalid_json")
	a.expect("PATCH", q+"-none", a.super, `{"max_held":1}`, 404, "queue_not_found")
	list := a.expect("GET", "/api/v1/queues", a.operator, "", 200, "")
	if mine := list["queues"].([]any)[0].(map[string]any); mine["max_held"] != 2.0 || mine["paused"] != false {
		t.Fatalf("listed = %v", mine)
	}
}

// A paused queue answers claims 409 queue_paused; Complete & next
// completes and says why nothing came next; the pages of those who work
// the queue hear of it at once, and say so.
func TestPauseAPI(t *testing.T) {
	a := newApp(t)
	q := "/api/v1/queues/" + a.queue
	first := a.enqueue("first")
	_, token := a.claim()
	_, b := a.person(users.Operator, a.queue)
	feed, _ := a.live("operator", b)

	if got := a.expect("POST", q+"/pause", a.super, "", 200, ""); got["paused"] != true {
		t.Fatalf("pause answered %v", got)
	}
	feed.until(func(n notify.Notice) bool {
		return n.Type == notify.QueueSettings && n.Queue == a.queue && n.Paused != nil && *n.Paused
	}, func(notify.Notice) bool { return true })
	a.enqueue("second")
	a.expect("POST", q+"/claim", a.operator, "", 409, "queue_paused")
	a.expect("POST", "/api/v1/claim", a.operator, "", 409, "queue_paused")
	out := a.expect("POST", "/api/v1/jobs/"+first+"/complete?next=true", a.operator, `{"token":"`+token+`"}`, 200, "")
	why, _ := out["next_error"].(map[string]any)
	if out["next"] != nil || why == nil || why["code"] != "queue_paused" {
		t.Fatalf("complete and next in a paused queue = %v", out)
	}
	if list := a.expect("GET", "/api/v1/queues", a.operator, "", 200, ""); list["queues"].([]any)[0].(map[string]any)["paused"] != true {
		t.Fatalf("listed = %v, want paused", list)
	}
	// The operator's page says so, and claiming from it explains.
	b.do("GET", "/", nil)
	if !strings.Contains(b.body, "Paused") {
		t.Fatal("the home page does not say the queue is paused")
	}
	b.do("POST", "/queues/"+a.queue+"/claim", url.Values{"_csrf": {b.csrf}})
	b.do("GET", "/", nil)
	if !strings.Contains(b.body, "is paused") {
		t.Fatal("a claim from a paused queue's card does not say why nothing came")
	}

	if got := a.expect("POST", q+"/resume", a.super, "", 200, ""); got["paused"] != false || got["name"] != a.queue {
		t.Fatalf("resume answered %v", got)
	}
	a.expect("POST", q+"-none/resume", a.super, "", 404, "queue_not_found")
}

// max_held caps what one person holds of a queue: the claim beyond it
// answers 409 hold_limit, and the page says why.
func TestHoldLimitAPI(t *testing.T) {
	a := newApp(t)
	q := "/api/v1/queues/" + a.queue
	a.expect("PATCH", q, a.super, `{"max_held":1}`, 200, "")
	a.enqueue("one")
	a.enqueue("two")
	a.claim()
	a.expect("POST", q+"/claim", a.operator, "", 409, "hold_limit")
	a.expect("POST", "/api/v1/claim", a.operator, "", 409, "hold_limit")

	_, b := a.person(users.Operator, a.queue)
	b.do("GET", "/", nil)
	b.do("POST", "/claim", url.Values{"_csrf": {b.csrf}})
	if !strings.HasPrefix(b.body, "/jobs/") {
		t.Fatalf("another operator's claim went to %s, want a job", b.body)
	}
	b.do("GET", "/", nil)
	b.do("POST", "/claim", url.Values{"_csrf": {b.csrf}})
	b.do("GET", "/", nil)
	if !strings.Contains(b.body, "as one person may at once") {
		t.Fatal("a claim at the hold limit does not say why nothing came")
	}
}

// Only an empty queue is deleted.
func TestDeleteQueueAPI(t *testing.T) {
	a := newApp(t)
	q := "/api/v1/queues/" + a.queue
	id := a.enqueue("left")
	a.expect("DELETE", q, a.super, "", 409, "queue_not_empty")
	a.expect("DELETE", "/api/v1/jobs/"+id, a.producer, "", 200, "")
	if code, _ := a.call("DELETE", q, a.super, ""); code != 204 {
		t.Fatalf("delete of an emptied queue: %d, want 204", code)
	}
	a.expect("DELETE", q, a.super, "", 404, "queue_not_found")
}

// The supervisor's forms: a taken name or a bad setting is refused in
// words, as a problem (never in the success style), with what was typed
// kept and nothing saved; pause, resume and delete say what they did.
func TestQueueForms(t *testing.T) {
	a := newApp(t)
	_, b := a.person(users.Supervisor)
	b.do("GET", "/supervisor/queues/new", nil)
	// The new queue form starts from the defaults, every one a value the
	// form takes as it is (a warn point of 0% would not be sent).
	for _, want := range []string{`name="warn_fraction" type="number" min="1" max="100" value="80"`, `value="rank" selected`, `name="sla_seconds" value="0s"`,
		`<option value="" selected>Nowhere: it stays</option>`, `<option value="` + a.queue + `">` + a.queue + `</option>`} {
		if !strings.Contains(b.body, want) {
			t.Fatalf("the new queue form lacks %s", want)
		}
	}
	// A breach queue deleted since is shown as gone, not as none.
	gone, sends := a.queue+"-gone", a.queue+"-sends"
	for _, q := range []tasks.Queue{{Name: gone}, {Name: sends, BreachQueue: gone}} {
		if _, err := a.tasks.CreateQueue(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.tasks.DeleteQueue(context.Background(), gone); err != nil {
		t.Fatal(err)
	}
	b.do("GET", "/supervisor/queues/"+sends, nil)
	if want := `<option value="` + gone + `" selected>` + gone + ` (no such queue)</option>`; !strings.Contains(b.body, want) {
		t.Fatalf("the settings of a queue whose breach queue is gone lack %s", want)
	}
	form := func(name string, lease, hold string) url.Values {
		return url.Values{"_csrf": {b.csrf}, "name": {name}, "lease_seconds": {lease}, "max_attempts": {"3"},
			"max_extensions": {"10"}, "max_hold_seconds": {hold}, "aging_seconds": {"0"}, "max_held": {"2"}}
	}
	b.do("POST", "/supervisor/queues", form(a.queue, "600", "14400"))
	if b.status != 409 || !strings.Contains(b.body, "A queue named "+a.queue+" already exists") ||
		!strings.Contains(b.body, `class="problem"`) || strings.Contains(b.body, `class="flash"`) || !strings.Contains(b.body, `value="600"`) {
		t.Fatalf("create with a taken name: %d, want 409 saying so as a problem, with the typed lease kept:\n%s", b.status, b.body)
	}
	if q, _ := a.tasks.Queue(context.Background(), a.queue); q.LeaseSeconds != 300 || q.MaxHeld != 0 {
		t.Fatalf("the existing queue changed: %+v", q)
	}
	name := a.queue + "-made"
	b.do("POST", "/supervisor/queues", form(name, "0", "14400"))
	if b.status != 400 || !strings.Contains(b.body, "Lease must be between 1 second and 1 day.") {
		t.Fatalf("create with lease 0: %d\n%s", b.status, b.body)
	}
	// Due times: each refused in words, nothing made; then made.
	for _, bad := range []struct{ field, value, says string }{
		{"sla_seconds", "soon", "Due after must be a duration such as 90s, 10m or 1h30m."},
		{"sla_seconds", "400d", "Due after must be between 0 seconds and 1 year."},
		{"warn_fraction", "0", "At risk after must be a whole percentage from 1 to 100."},
		{"order", "fifo", "order must be"},
		{"breach_priority", "101", "Priority when overdue must be between 0 and 100."},
		{"breach_queue", "no-such-queue", "Overdue jobs can only move to another queue, one that exists."},
		{"breach_queue", name, "Overdue jobs can only move to another queue, one that exists."},
	} {
		f := form(name, "600", "14400")
		f.Set(bad.field, bad.value)
		b.do("POST", "/supervisor/queues", f)
		if b.status != 400 || !strings.Contains(b.body, bad.says) {
			t.Fatalf("create with %s %q: %d, want 400 saying %q\n%s", bad.field, bad.value, b.status, bad.says, b.body)
		}
	}
	if _, err := a.tasks.Queue(context.Background(), name); !errors.Is(err, tasks.ErrQueueNotFound) {
		t.Fatalf("a refused form made the queue: %v", err)
	}
	due := form(name, "600", "14400")
	for k, v := range map[string]string{"sla_seconds": "4h", "warn_fraction": "75", "order": "due", "breach_priority": "90", "breach_queue": a.queue} {
		due.Set(k, v)
	}
	b.do("POST", "/supervisor/queues", due)
	if b.status != 303 || b.body != "/supervisor/queues/"+name {
		t.Fatalf("create: %d %s", b.status, b.body)
	}
	if q, _ := a.tasks.Queue(context.Background(), name); q.SLASeconds != 4*3600 || q.WarnFraction != 0.75 || q.Order != tasks.OrderDue || q.BreachPriority != 90 || q.BreachQueue != a.queue {
		t.Fatalf("created with due times %+v", q)
	}
	if q, _ := a.tasks.Queue(context.Background(), name); q.LeaseSeconds != 600 || q.MaxAttempts != 3 || q.MaxHeld != 2 {
		t.Fatalf("created %+v", q)
	}

	// Every setting is typed on the form: a zero typed is meant, not a
	// call for the default (no extensions, not 10).
	none := form(a.queue+"-fixed", "600", "14400")
	none.Set("max_extensions", "0")
	b.do("POST", "/supervisor/queues", none)
	if q, err := a.tasks.Queue(context.Background(), a.queue+"-fixed"); b.status != 303 || err != nil || q.MaxExtensions != 0 {
		t.Fatalf("create with max extensions 0: %d, stored %+v %v", b.status, q, err)
	}

	// The settings form of the queue's page.
	b.do("GET", "/supervisor/queues/"+name, nil)
	b.do("POST", "/supervisor/queues/"+name+"/settings", form("", "700000", "14400"))
	if b.status != 400 || !strings.Contains(b.body, "Lease must be between 1 second and 1 day.") || !strings.Contains(b.body, `value="700000"`) ||
		strings.Contains(b.body, `class="flash"`) {
		t.Fatalf("settings with a lease of 700000 s: %d\n%s", b.status, b.body)
	}
	b.do("POST", "/supervisor/queues/"+name+"/settings", form("", "20000", "14400"))
	if b.status != 400 || !strings.Contains(b.body, "Max hold must be between 20000 seconds and 7 days.") {
		t.Fatalf("settings with a lease past the max hold: %d\n%s", b.status, b.body)
	}
	if q, _ := a.tasks.Queue(context.Background(), name); q.LeaseSeconds != 600 {
		t.Fatalf("a refused form saved: %+v", q)
	}
	// Durations are typed as durations, or as seconds.
	b.do("POST", "/supervisor/queues/"+name+"/settings", form("", "ten minutes", "14400"))
	if b.status != 400 || !strings.Contains(b.body, "Lease must be a duration such as 90s, 10m or 1h30m.") || !strings.Contains(b.body, `value="ten minutes"`) {
		t.Fatalf("settings with a lease in words: %d\n%s", b.status, b.body)
	}
	// The field to blame is marked, and points to the problem.
	for name, blamed := range map[string]bool{"lease_seconds": true, "max_hold_seconds": false} {
		box := regexp.MustCompile(`<input name="` + name + `"[^>]*>`).FindString(b.body)
		if marked := strings.Contains(box, `aria-invalid="true"`) && strings.Contains(box, `aria-describedby="settings-problem"`); marked != blamed {
			t.Fatalf("the %s box, blamed %v, is %s", name, blamed, box)
		}
	}
	b.do("POST", "/supervisor/queues/"+name+"/settings", form("", "15m", "4h"))
	if q, _ := a.tasks.Queue(context.Background(), name); b.status != 303 || q.LeaseSeconds != 900 || q.MaxHoldSeconds != 14400 {
		t.Fatalf("settings of 15m and 4h: %d, stored %+v", b.status, q)
	}
	b.do("GET", "/supervisor/queues/"+name, nil)
	if !strings.Contains(b.body, `name="lease_seconds" value="15m"`) || !strings.Contains(b.body, `name="max_hold_seconds" value="4h"`) {
		t.Fatal("the settings form does not show the durations as durations")
	}
	b.do("POST", "/supervisor/queues/"+name+"/settings", form("", "900", "14400"))
	if b.status != 303 {
		t.Fatalf("settings: %d %s", b.status, b.body)
	}
	b.do("GET", "/supervisor/queues/"+name, nil)
	if !strings.Contains(b.body, "Saved the settings of "+name) || !strings.Contains(b.body, `value="15m"`) {
		t.Fatal("the saved settings are not shown with the success message")
	}

	b.do("POST", "/supervisor/queues/"+name+"/pause", url.Values{"_csrf": {b.csrf}})
	b.do("GET", "/supervisor/queues/"+name, nil)
	if !strings.Contains(b.body, "Paused "+name) || !strings.Contains(b.body, `data-testid="queue-resume"`) {
		t.Fatal("the page after pausing does not say so, or offers no resume")
	}
	b.do("POST", "/supervisor/queues/"+name+"/resume", url.Values{"_csrf": {b.csrf}})
	if q, _ := a.tasks.Queue(context.Background(), name); q.Paused {
		t.Fatal("still paused after resuming")
	}

	// Delete: refused while a job waits, done once empty.
	id := a.enqueue("kept")
	b.do("POST", "/supervisor/queues/"+a.queue+"/delete", url.Values{"_csrf": {b.csrf}})
	b.do("GET", "/supervisor/queues/"+a.queue, nil)
	if b.status != 200 || !strings.Contains(b.body, "only an empty queue can be deleted") || !strings.Contains(b.body, `class="flash note"`) {
		t.Fatalf("delete of a queue with a job: %d\n%s", b.status, b.body)
	}
	if _, err := a.tasks.Get(context.Background(), id); err != nil {
		t.Fatalf("the job of a queue not deleted: %v", err)
	}
	b.do("POST", "/supervisor/queues/"+name+"/delete", url.Values{"_csrf": {b.csrf}})
	if b.status != 303 || b.body != "/supervisor" {
		t.Fatalf("delete: %d %s", b.status, b.body)
	}
	if _, err := a.tasks.Queue(context.Background(), name); err == nil {
		t.Fatal("the queue is still there")
	}
}

// A queue's numbers of the day, as the cron job samples them.
func TestNumbersAPI(t *testing.T) {
	a := newApp(t)
	a.enqueue("counted")
	a.claim()
	a.enqueue("waiting")
	a.passTime(a.now().Add(30 * time.Second)) // the job has waited 30 s
	if err := a.tasks.SampleNumbers(context.Background(), a.queue); err != nil {
		t.Fatal(err)
	}
	out := a.expect("GET", "/api/v1/queues/"+a.queue+"/numbers", a.super, "", 200, "")
	ms := out["minutes"].([]any)
	if len(ms) != 1 || ms[0].(map[string]any)["ready"] != 1.0 || ms[0].(map[string]any)["at"] == nil {
		t.Fatalf("numbers = %v", out)
	}
	if wait, _ := ms[0].(map[string]any)["oldest_wait_seconds"].(float64); wait < 30 || wait > 60 {
		t.Fatalf("oldest wait = %v, want the moment since the job came", ms[0])
	}
	a.expect("GET", "/api/v1/queues/"+a.queue+"/numbers", a.operator, "", 403, "forbidden")
	a.expect("GET", "/api/v1/queues/nope-"+a.queue+"/numbers", a.super, "", 404, "queue_not_found")
	_, b := a.person(users.Supervisor)
	if b.do("GET", "/supervisor/queues/"+a.queue, nil); !strings.Contains(b.body, `data-testid="spark-Claims"`) {
		t.Fatal("the queue's page draws no day")
	}
}

// A queue's tabs and charts say the same counts, read once, on the page
// and in the fragment that fetches them again; dead jobs are red where
// some died today, and the total of them neutral.
func TestQueueNumbers(t *testing.T) {
	a := newApp(t)
	if _, _, err := a.tasks.PatchQueue(context.Background(), a.queue, tasks.QueuePatch{MaxAttempts: ptr(1)}); err != nil {
		t.Fatal(err)
	}
	for _, title := range []string{"one", "two", "three"} {
		a.enqueue(title)
	}
	// The minute's sample says 3 ready; the queue has 4 when the page
	// reads it.
	if err := a.tasks.SampleNumbers(context.Background(), a.queue); err != nil {
		t.Fatal(err)
	}
	a.enqueue("four")
	_, b := a.person(users.Supervisor)
	tab := func(state string) string {
		t.Helper()
		m := regexp.MustCompile(`data-testid="tab-` + state + `"[^>]*>\s*` + state + ` <span class="badge" data-testid="tab-count">(\d+)</span>`).FindStringSubmatch(b.body)
		if m == nil {
			t.Fatalf("no %s tab in %s", state, b.body)
		}
		return m[1]
	}
	total := func(series string) string {
		t.Helper()
		m := regexp.MustCompile(`data-testid="spark-` + series + `"><figcaption><span>` + series + `</span> <strong data-testid="spark-total">([^<]+)<`).FindStringSubmatch(b.body)
		if m == nil {
			t.Fatalf("no %s chart in %s", series, b.body)
		}
		return m[1]
	}
	fragment := "/supervisor/fragments/queues/" + a.queue + "/numbers?state=dead"
	for _, path := range []string{"/supervisor/queues/" + a.queue, fragment} {
		if b.do("GET", path, nil); b.status != 200 || tab("ready") != "4" || total("Ready") != "4 now" {
			t.Fatalf("%s: %d, ready tab %s, chart %s; want 4 and 4", path, b.status, tab("ready"), total("Ready"))
		}
	}
	if strings.Contains(b.body, `data-testid="dead-today"`) {
		t.Fatal("nothing died, yet the dead tab says some did today")
	}

	id, token := a.claim()
	a.expect("POST", "/api/v1/jobs/"+id+"/fail", a.operator, `{"token":"`+token+`","reason":"no"}`, 200, "")
	deadToday := regexp.MustCompile(`data-testid="dead-today"><a class="bad count-link" href="/supervisor/queues/` + a.queue + `\?state=dead">1</a>`)
	if b.do("GET", fragment, nil); tab("dead") != "1" || tab("ready") != "3" || !strings.Contains(b.body, `data-testid="dead-today">1 today</span>`) {
		t.Fatalf("one died: %s", b.body)
	}
	if b.do("GET", "/supervisor/fragments/stats", nil); !deadToday.MatchString(b.body) {
		t.Fatalf("the overview does not say in red that one died today: %s", b.body)
	}
	// The next day it is dead still, in neutral words. (A job added drops
	// the counts the instance's pages share, read a moment ago.)
	a.passTime(a.now().Add(24 * time.Hour))
	a.enqueue("five")
	if b.do("GET", fragment, nil); tab("dead") != "1" || strings.Contains(b.body, `data-testid="dead-today"`) {
		t.Fatalf("a day later: %s", b.body)
	}
	b.do("GET", "/supervisor/fragments/stats", nil)
	row := regexp.MustCompile(`data-testid="stats-` + a.queue + `"[\s\S]*?</tr>`).FindString(b.body)
	if !strings.Contains(row, `data-testid="dead-today"><span class="muted">0</span>`) || !strings.Contains(row, `data-count="dead">1<`) || strings.Contains(row, "bad") {
		t.Fatalf("a day later, the overview's row: %s", row)
	}

	// The fragment is a supervisor's, of a queue that is, in a state that is.
	if b.do("GET", "/supervisor/fragments/queues/"+a.queue+"/numbers?state=lost", nil); b.status != 400 {
		t.Fatalf("a state that is not: %d", b.status)
	}
	if b.do("GET", "/supervisor/fragments/queues/nope-"+a.queue+"/numbers", nil); b.status != 404 {
		t.Fatalf("a queue that is not: %d", b.status)
	}
	_, op := a.person(users.Operator, a.queue)
	if op.do("GET", fragment, nil); op.status != 403 {
		t.Fatalf("an operator: %d", op.status)
	}
}
