package audit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"claimdesk/internal/keys"
	"claimdesk/internal/tasks"
	"claimdesk/internal/tasks/taskstest"

	"github.com/redis/go-redis/v9"
)

func TestRecordAndList(t *testing.T) {
	srv := taskstest.Redis(t)
	l := New(srv.Client())
	ctx := context.Background()
	before := time.Now().Add(-time.Second)
	for i := range 5 {
		if err := l.Record(ctx, "sam", QueuePaused, fmt.Sprintf("q%d", i), ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Record(ctx, CommandLine, UserAdded, "dora", strings.Repeat("x", 2000)); err != nil {
		t.Fatal(err)
	}
	page, next, err := l.List(ctx, "", 4, Filter{})
	if err != nil || len(page) != 4 || next == "" {
		t.Fatalf("first page = %v, %q, %v", page, next, err)
	}
	if page[0].Action != UserAdded || page[0].Actor != CommandLine || len(page[0].Detail) > detailMaxBytes+3 || page[1].Target != "q4" {
		t.Fatalf("newest first, detail bounded: %+v", page[:2])
	}
	if page[0].At.Before(before) || page[0].At.After(time.Now().Add(time.Second)) {
		t.Fatalf("at = %v", page[0].At)
	}
	rest, next, err := l.List(ctx, next, 4, Filter{})
	if err != nil || len(rest) != 2 || next != "" || rest[0].Target != "q1" || rest[1].Target != "q0" {
		t.Fatalf("second page = %+v, %q, %v", rest, next, err)
	}
	if _, _, err := l.List(ctx, "nonsense", 4, Filter{}); !errors.Is(err, ErrBadCursor) {
		t.Fatalf("bad cursor: %v", err)
	}
}

// A listing filtered by actor, action and time keeps only their entries,
// pages through them with their filters, and reads a bounded number of
// entries per call however few match.
func TestListFiltered(t *testing.T) {
	rdb := taskstest.Redis(t).Client()
	l := New(rdb)
	ctx := context.Background()
	add := func(ms int64, actor, action, target string) {
		t.Helper()
		if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: keys.Audit, ID: fmt.Sprintf("%d-0", ms),
			Values: []any{"actor", actor, "action", action, "target", target, "detail", ""}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// Entry i at second i: sam cancels at 1, 3 and 5, dora pauses at 2 and
	// 4; then scanMax+500 entries of the command line's.
	for i := int64(1); i <= 5; i++ {
		if i%2 == 1 {
			add(i*1000, "sam", JobCanceled, fmt.Sprint("job-", i))
		} else {
			add(i*1000, "dora", QueuePaused, fmt.Sprint("queue-", i))
		}
	}
	for i := range int64(scanMax + 500) {
		add(10_000+i, CommandLine, UserChanged, "erin")
	}
	targets := func(es []Entry) string {
		var out []string
		for _, e := range es {
			out = append(out, e.Target)
		}
		return strings.Join(out, " ")
	}
	at := func(s int64) time.Time { return time.UnixMilli(s * 1000) }
	for _, tc := range []struct {
		name string
		f    Filter
		want string
	}{
		{"by actor", Filter{Actor: "sam", Until: at(9)}, "job-5 job-3 job-1"},
		{"by action", Filter{Action: QueuePaused, Until: at(9)}, "queue-4 queue-2"},
		{"by actor and action", Filter{Actor: "dora", Action: JobCanceled, Until: at(9)}, ""},
		{"by time", Filter{Since: at(2), Until: at(4)}, "job-3 queue-2"},
		{"by actor and time", Filter{Actor: "sam", Since: at(2), Until: at(9)}, "job-5 job-3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, next, err := l.List(ctx, "", 10, tc.f)
			if err != nil || targets(got) != tc.want || next != "" {
				t.Fatalf("List = %q, next %q, %v; want %q and no next page", targets(got), next, err, tc.want)
			}
		})
	}
	// Paged with the filter: sam's entries one at a time.
	var pages []string
	cursor := ""
	for range 4 {
		got, next, err := l.List(ctx, cursor, 1, Filter{Actor: "sam", Until: at(9)})
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, targets(got))
		if cursor = next; cursor == "" {
			break
		}
	}
	if strings.Join(pages, ",") != "job-5,job-3,job-1" {
		t.Fatalf("sam's entries a page at a time: %q", pages)
	}
	// From the newest, sam's entries lie beyond scanMax others: the first
	// page reads scanMax entries, finds none, and says where to go on.
	got, next, err := l.List(ctx, "", 10, Filter{Actor: "sam"})
	if err != nil || len(got) != 0 || next == "" {
		t.Fatalf("first filtered page past the bound: %q, next %q, %v; want none and a next page", targets(got), next, err)
	}
	if n := idTime(next).UnixMilli(); n != 10_000+500 {
		t.Fatalf("the first page went on to %s, want the %dth newest entry", next, scanMax)
	}
	got, next, err = l.List(ctx, next, 10, Filter{Actor: "sam"})
	if err != nil || targets(got) != "job-5 job-3 job-1" || next != "" {
		t.Fatalf("second filtered page: %q, next %q, %v", targets(got), next, err)
	}
	// Bad filters change nothing and say what is wrong.
	for _, f := range []Filter{{Action: "job.vanished"}, {Since: at(5), Until: at(5)}} {
		if _, _, err := l.List(ctx, "", 10, f); !errors.Is(err, ErrBadFilter) {
			t.Errorf("List with %+v: %v, want ErrBadFilter", f, err)
		}
	}
}

// An entry about a job or batch names its title, quotes and all.
func TestEntryTitle(t *testing.T) {
	job := &tasks.Job{Title: `Refund “ACME” in full`, Queue: "invoice-review"}
	for _, tc := range []struct{ detail, want string }{
		{JobDetail(job, "dana"), job.Title},
		{JobDetail(&tasks.Job{Title: "Check", Queue: "q"}, ""), "Check"},
		{BatchDetail(&tasks.Batch{Title: "Morning", Queue: "addresses", Total: 3}), "Morning"},
		{"max held 0 → 3", ""},
		{"“unclosed", ""},
	} {
		if got := (Entry{Detail: tc.detail}).Title(); got != tc.want {
			t.Errorf("Title of %q = %q, want %q", tc.detail, got, tc.want)
		}
	}
}

// The log keeps about Keep entries, dropping the oldest.
func TestBounded(t *testing.T) {
	srv := taskstest.Redis(t)
	l := New(srv.Client())
	ctx := context.Background()
	for i := range Keep + 1000 {
		if err := l.Record(ctx, "sam", JobRequeued, fmt.Sprint(i), ""); err != nil {
			t.Fatal(err)
		}
	}
	n, err := srv.Client().XLen(ctx, keys.Audit).Result()
	if err != nil || n < Keep || n > Keep+200 {
		t.Fatalf("entries kept = %d, %v; want about %d", n, err, Keep)
	}
	page, _, _ := l.List(ctx, "", 1, Filter{})
	if page[0].Target != fmt.Sprint(Keep+999) {
		t.Fatalf("newest = %+v", page[0])
	}
}

// A change of settings is logged as what changed, from what to what; a
// new queue as every setting.
func TestSettingsChange(t *testing.T) {
	was := tasks.Queue{LeaseSeconds: 300, MaxAttempts: 3, MaxExtensions: 2, MaxHoldSeconds: 3600, WarnFraction: 0.8, Order: tasks.OrderRank}
	if got, want := SettingsDetail(was), "lease 300s, max attempts 3, max extensions 2, max hold 3600s, ageing 0s, max held 0, outcome form none, reason required no, due when a job says, at risk after 80%, claim order rank, on breach nothing"; got != want {
		t.Errorf("SettingsDetail = %q, want %q", got, want)
	}
	if got := SettingsChange(was, was); got != "nothing changed" {
		t.Errorf("the same settings: %q", got)
	}
	now := was
	now.LeaseSeconds, now.MaxHeld = 600, 2
	now.Outcome = &tasks.Outcome{Choices: []string{"yes", "no"}}
	if got, want := SettingsChange(was, now), "lease 300s → 600s, max held 0 → 2, outcome form none → 2 choices, 0 fields"; got != want {
		t.Errorf("SettingsChange = %q, want %q", got, want)
	}
	other := now
	other.Outcome = &tasks.Outcome{Choices: []string{"approve", "reject"}}
	if got, want := SettingsChange(now, other), "outcome form changed (2 choices, 0 fields)"; got != want {
		t.Errorf("another form of as many choices: %q, want %q", got, want)
	}
	strict := other
	strict.RequireReason = true
	if got, want := SettingsChange(other, strict), "reason required no → yes"; got != want {
		t.Errorf("a reason required: %q, want %q", got, want)
	}
	promised := strict
	promised.SLASeconds, promised.WarnFraction, promised.Order, promised.BreachPriority = 3600, 0.75, tasks.OrderDue, 90
	if got, want := SettingsChange(strict, promised), "due when a job says → 3600s after enqueue, at risk after 80% → 75%, claim order rank → due, on breach nothing → priority 90"; got != want {
		t.Errorf("due times: %q, want %q", got, want)
	}
}

// A reason given for an action on jobs follows the entry's detail.
func TestWithReason(t *testing.T) {
	j := &tasks.Job{Title: "Check (urgent)", Queue: "q"}
	if got, want := WithReason(JobDetail(j, "ann"), "customer called"), "“Check (urgent)” in q, held by ann, because “customer called”"; got != want {
		t.Errorf("with a reason: %q, want %q", got, want)
	}
	if got, want := WithReason(JobDetail(j, ""), ""), "“Check (urgent)” in q"; got != want {
		t.Errorf("without: %q, want %q", got, want)
	}
}
