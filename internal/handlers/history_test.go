package handlers_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"claimdesk/internal/tasks"
	"claimdesk/internal/users"
)

// A long history keeps its first entries and its latest; the supervisor's
// timeline (newest first) says how many are missing, where they were.
func TestTimelineNotesTrimmedEntriesAtTheGap(t *testing.T) {
	a := newApp(t)
	id := a.enqueue("given back again and again")
	const rounds = 30 // a claim and a release each: 1 + 60 entries
	for range rounds {
		got, token := a.claim()
		if got != id {
			t.Fatalf("claimed %s, want %s", got, id)
		}
		a.expect("POST", "/api/v1/jobs/"+id+"/release", a.operator, fmt.Sprintf(`{"token":%q}`, token), 200, "")
	}
	h := a.expect("GET", "/api/v1/jobs/"+id+"/history", a.super, "", 200, "")
	entries, _ := h["history"].([]any)
	if len(entries) != 50 || h["trimmed"] != 11.0 {
		t.Fatalf("history has %d entries, trimmed %v; want 50 and 11", len(entries), h["trimmed"])
	}

	_, boss := a.person(users.Supervisor)
	page := boss.do("GET", "/jobs/"+id, nil).body
	if boss.status != 200 {
		t.Fatalf("job page: %d", boss.status)
	}
	start, end := strings.Index(page, `data-testid="timeline"`), strings.Index(page, "</ol>")
	if start < 0 || end < start {
		t.Fatal("job page has no timeline")
	}
	// The timeline's items, newest first, as actions and the gap.
	var items []string
	for _, m := range regexp.MustCompile(`<li (?:data-action="([a-z_]+)"|class="gap[^"]*"[^>]*>([^<]*))`).FindAllStringSubmatch(page[start:end], -1) {
		if m[1] != "" {
			items = append(items, m[1])
		} else {
			items = append(items, "gap: "+m[2])
		}
	}
	if len(items) != 51 {
		t.Fatalf("timeline has %d items, want 50 entries and the gap: %v", len(items), items)
	}
	gap := 50 - tasks.HistoryHead
	if want := "gap: 11 entries in between not kept: a job keeps its first 5 entries and its latest."; items[gap] != want {
		t.Fatalf("timeline item %d is %q, want %q (all: %v)", gap, items[gap], want, items)
	}
	// Below the gap, the first entries: enqueued, then claims and releases.
	if first, want := strings.Join(items[gap+1:], " "), "released claimed released claimed enqueued"; first != want {
		t.Fatalf("entries below the gap: %s, want the first five, oldest last: %s", first, want)
	}
	if items[0] != "released" || items[1] != "claimed" {
		t.Fatalf("entries above the gap: %v, want the latest, newest first", items[:gap])
	}
}
