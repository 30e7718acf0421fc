package faults

import (
	"strings"
	"testing"
	"time"
)

// The history check finds what the fault tests look for.
func TestCheckHistory(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	e := func(s int, action, from, to string) historyEntry {
		return historyEntry{At: at(s), Action: action, Actor: "op1", From: from, To: to}
	}
	for _, c := range []struct {
		name    string
		history []historyEntry
		want    string
	}{
		{"claimed, expired, claimed, completed", []historyEntry{
			e(0, "enqueued", "", "ready"), e(1, "claimed", "ready", "reserved"), e(11, "expired", "reserved", "ready"),
			e(12, "claimed", "ready", "reserved"), e(13, "completed", "reserved", "completed")}, ""},
		{"claimed twice at once", []historyEntry{
			e(0, "enqueued", "", "ready"), e(1, "claimed", "ready", "reserved"), e(2, "claimed", "ready", "reserved"),
			e(3, "completed", "reserved", "completed")}, "while reserved"},
		{"completed twice", []historyEntry{
			e(0, "enqueued", "", "ready"), e(1, "claimed", "ready", "reserved"), e(2, "completed", "reserved", "completed"),
			e(3, "completed", "reserved", "completed")}, "completed 2 times"},
		{"never completed", []historyEntry{e(0, "enqueued", "", "ready")}, "completed 0 times"},
		{"back in time", []historyEntry{
			e(5, "enqueued", "", "ready"), e(1, "claimed", "ready", "reserved")}, "back in time"},
	} {
		got := checkHistory(c.history)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: checkHistory = %q, want %q", c.name, got, c.want)
		}
	}
}

// An outage is measured from the fault to the first claim after the
// broken part was back.
func TestOutageOf(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	claimed := []time.Time{ms(-50), ms(100), ms(1500), ms(2100), ms(2200)}
	o := outageOf("x", claimed, ms(0), ms(2000))
	if o.stopped != 1400*time.Millisecond || o.resume != 100*time.Millisecond {
		t.Fatalf("outage = %+v, want stopped 1.4s, resumed 100ms after", o)
	}
	if o := outageOf("x", claimed[:3], ms(0), ms(2000)); o.resume >= 0 {
		t.Fatalf("no claim after the part was back, yet it resumed: %+v", o)
	}
}
