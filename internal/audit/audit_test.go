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
	page, next, err := l.List(ctx, "", 4)
	if err != nil || len(page) != 4 || next == "" {
		t.Fatalf("first page = %v, %q, %v", page, next, err)
	}
	if page[0].Action != UserAdded || page[0].Actor != CommandLine || len(page[0].Detail) > detailMaxBytes+3 || page[1].Target != "q4" {
		t.Fatalf("newest first, detail bounded: %+v", page[:2])
	}
	if page[0].At.Before(before) || page[0].At.After(time.Now().Add(time.Second)) {
		t.Fatalf("at = %v", page[0].At)
	}
	rest, next, err := l.List(ctx, next, 4)
	if err != nil || len(rest) != 2 || next != "" || rest[0].Target != "q1" || rest[1].Target != "q0" {
		t.Fatalf("second page = %+v, %q, %v", rest, next, err)
	}
	if _, _, err := l.List(ctx, "nonsense", 4); !errors.Is(err, ErrBadCursor) {
		t.Fatalf("bad cursor: %v", err)
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
	page, _, _ := l.List(ctx, "", 1)
	if page[0].Target != fmt.Sprint(Keep+999) {
		t.Fatalf("newest = %+v", page[0])
	}
}

// A change of settings is logged as what changed, from what to what; a
// new queue as every setting.
func TestSettingsChange(t *testing.T) {
	was := tasks.Queue{LeaseSeconds: 300, MaxAttempts: 3, MaxExtensions: 2, MaxHoldSeconds: 3600}
	if got, want := SettingsDetail(was), "lease 300s, max attempts 3, max extensions 2, max hold 3600s, ageing 0s, max held 0, outcome form none, reason required no"; got != want {
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
