package views

import (
	"strings"
	"testing"
	"time"

	"claimdesk/internal/tasks"
)

func TestDaySeries(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	ms := []tasks.Minute{
		{At: now.Add(-25 * time.Hour), Ready: 99, Claims: 99}, // older than the day: left out
		{At: now.Add(-23*time.Hour - 50*time.Minute), Ready: 7, Claims: 2, Completed: 1},
		{At: now.Add(-10 * time.Minute), Ready: 3, Claims: 4, Completed: 5, Dead: 1, OldestWait: 20 * time.Minute},
		{At: now.Add(-9 * time.Minute), Ready: 2, Claims: 1, Completed: 1, OldestWait: 8 * time.Minute},
	}
	s := DaySeries(ms, now)
	if len(s) != 5 || s[0].Total != "2 now" || s[1].Total != "7 in 24 h" || s[2].Total != "7 in 24 h" || s[3].Total != "1 in 24 h" {
		t.Fatalf("series = %+v", s)
	}
	last := daySlots - 1
	if s[0].Values[0] != 7 || s[0].Values[last] != 2 || s[1].Values[last] != 5 || s[1].Values[0] != 2 || s[3].Values[last] != 1 {
		t.Fatalf("slots: ready %v, claims %v", s[0].Values, s[1].Values)
	}
	// The oldest wait: the longest of the slot, and the latest now.
	if s[4].Values[last] != 1200 || s[4].Values[0] != 0 || s[4].Total != "8 min now" || s[4].Peak != "20 min" || s[1].Peak != "5" {
		t.Fatalf("oldest waiting = %+v", s[4])
	}
	points := sparkPoints(s[1].Values)
	if !strings.HasPrefix(points, "0,17.8 1,29.0") || !strings.HasSuffix(points, "95,1.0") {
		t.Fatalf("points = %s", points)
	}
	if sparkPoints(make([]int64, 3)) != "0,29.0 1,29.0 2,29.0" {
		t.Fatal("all zero is not a line along the bottom")
	}
}
