package views

import (
	"strings"
	"testing"
	"time"

	"claimdesk/internal/tasks"
)

func TestDaySeries(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 7, 0, 0, time.UTC)
	ms := []tasks.Minute{
		{At: now.Add(-25 * time.Hour), Ready: 99, Claims: 99},                            // older than the day: left out
		{At: now.Add(-24 * time.Hour), Ready: 98, Claims: 98},                            // before the first quarter hour (12:15): left out
		{At: now.Add(-23*time.Hour - 50*time.Minute), Ready: 7, Claims: 2, Completed: 1}, // 12:17, the first
		{At: now.Add(-10 * time.Minute), Ready: 3, Claims: 4, Completed: 5, Dead: 1, OldestWait: 20 * time.Minute},
		{At: now.Add(-9 * time.Minute), Ready: 2, Claims: 1, Completed: 1, OldestWait: 8 * time.Minute},
		{At: now.Add(-time.Minute), Ready: 9, Claims: 1},
	}
	since := now.Add(-9 * time.Minute)
	d := DaySeries(ms, tasks.Stats{Ready: 10, OldestWaitingSince: &since}, now)
	if !d.Start.Equal(time.Date(2026, 11, 24, 12, 15, 0, 0, time.UTC)) || !d.Now.Equal(now) {
		t.Fatalf("day from %v to %v", d.Start, d.Now)
	}
	s := d.Series
	if len(s) != 5 || s[1].Total != "8 in 24 h" || s[2].Total != "7 in 24 h" || s[3].Total != "1 in 24 h" {
		t.Fatalf("series = %+v", s)
	}
	last := daySlots - 1
	// The quarter hour under way (12:00) ends with the counts shown beside
	// the chart, not the minute sampled last.
	if s[0].Total != "10 now" || s[0].Values[last] != 10 || s[0].Points[last] != "10 ready" {
		t.Fatalf("ready = %q, %d, %q; want the counts' 10", s[0].Total, s[0].Values[last], s[0].Points[last])
	}
	// 11:45 to 12:00: the ready jobs sampled last in it, the claims within.
	if s[0].Values[0] != 7 || s[0].Values[last-1] != 2 || s[1].Values[last-1] != 5 || s[1].Values[last] != 1 || s[1].Values[0] != 2 || s[3].Values[last-1] != 1 {
		t.Fatalf("slots: ready %v, claims %v", s[0].Values, s[1].Values)
	}
	if s[1].Points[0] != "2 claims" || s[1].Points[last] != "1 claim" || s[3].Points[last-1] != "1 died" || s[3].Points[0] != "0 died" {
		t.Fatalf("points: claims %q…%q, dead %q", s[1].Points[0], s[1].Points[last], s[3].Points[last-1])
	}
	// The oldest wait: the longest of each quarter hour, and now the counts'.
	if s[4].Values[last-1] != 1200 || s[4].Values[0] != 0 || s[4].Values[last] != 540 || s[4].Total != "9 min now" || s[4].Peak != "20 min" || s[1].Peak != "5" {
		t.Fatalf("oldest waiting = %+v", s[4])
	}
	if s[4].Points[0] != "nothing waiting" || s[4].Points[last-1] != "oldest waited 20 min" {
		t.Fatalf("oldest waiting points %q, %q", s[4].Points[0], s[4].Points[last-1])
	}
	ticks := d.Ticks()
	if len(ticks) != 2 || !ticks[0].Equal(d.Start.Add(8*time.Hour)) || !ticks[1].Equal(d.Start.Add(16*time.Hour)) || d.tickX(ticks[1]) != "64" {
		t.Fatalf("ticks = %v", ticks)
	}
	points := sparkPoints(s[1].Values)
	if !strings.HasPrefix(points, "0.5,17.8 1.5,29.0") || !strings.HasSuffix(points, "94.5,1.0 95.5,23.4") {
		t.Fatalf("points = %s", points)
	}
	if sparkPoints(make([]int64, 3)) != "0.5,29.0 1.5,29.0 2.5,29.0" {
		t.Fatal("all zero is not a line along the bottom")
	}
}

// A queue whose jobs had due times gains a chart of the completions after
// them, its total the share before them in the 24 hours.
func TestDaySeriesOfDueTimes(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 7, 0, 0, time.UTC)
	ms := []tasks.Minute{
		{At: now.Add(-10 * time.Minute), Completed: 5, DueCompleted: 4, OnTime: 3},
		{At: now.Add(-9 * time.Minute), Completed: 1, DueCompleted: 1, OnTime: 0},
		{At: now.Add(-time.Minute), Completed: 2, DueCompleted: 3, OnTime: 3},
	}
	s := DaySeries(ms, tasks.Stats{}, now).Series
	if len(s) != 6 || s[5].Label != "Late" || s[5].Total != "75% on time" || s[5].Peak != "2" {
		t.Fatalf("series = %+v", s)
	}
	last := daySlots - 1
	if s[5].Values[last-1] != 2 || s[5].Values[last] != 0 || s[5].Points[last-1] != "2 late of 5 due" ||
		s[5].Points[last] != "0 late of 3 due" || s[5].Points[0] != "none due" {
		t.Fatalf("late: %v, points %q, %q, %q", s[5].Values[last-1:], s[5].Points[last-1], s[5].Points[last], s[5].Points[0])
	}
	if s := DaySeries(ms[:0], tasks.Stats{}, now).Series; len(s) != 5 {
		t.Fatalf("a queue without due times has %d charts", len(s))
	}
}
