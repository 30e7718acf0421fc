package views

import (
	"testing"
	"time"

	"claimdesk/internal/webhooks"
)

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 10_000: "10,000", 1_234_567: "1,234,567"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// A delivery's last answer is its status in words, with why it failed
// when that says more; or why no answer came.
func TestLastAnswer(t *testing.T) {
	for _, c := range []struct {
		d    webhooks.Delivery
		want string
	}{
		{webhooks.Delivery{LastStatus: 204}, "204 No Content"},
		{webhooks.Delivery{LastStatus: 500, LastError: "answered 500"}, "500 Internal Server Error"},
		{webhooks.Delivery{LastStatus: 200, LastError: "the answer was cut short"}, "200 OK: the answer was cut short"},
		{webhooks.Delivery{LastError: "no answer within 15s"}, "no answer within 15s"},
	} {
		if got := lastAnswer(c.d); got != c.want {
			t.Errorf("lastAnswer(%+v) = %q, want %q", c.d, got, c.want)
		}
	}
}

func TestExcerpt(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"database is down", 120, "database is down"},
		{"Größe überschritten", 5, "Größe…"},
		{"12345", 5, "12345"},
	} {
		if got := excerpt(c.s, c.n); got != c.want {
			t.Errorf("excerpt(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}

// An endpoint's state says why it is not enabled, and only the receiver's
// doing counts as disabled.
func TestHookState(t *testing.T) {
	for _, c := range []struct {
		e        webhooks.Endpoint
		want     string
		disabled bool
	}{
		{webhooks.Endpoint{Enabled: true}, "Enabled", false},
		{webhooks.Endpoint{Enabled: true, FailingSince: new(time.Time)}, "Enabled, failing", false},
		{webhooks.Endpoint{DisabledReason: webhooks.DisabledPaused}, "Paused", false},
		{webhooks.Endpoint{DisabledReason: webhooks.DisabledGone}, "Disabled: answered 410 Gone", true},
		{webhooks.Endpoint{DisabledReason: webhooks.DisabledFailing}, "Disabled: failing for 5 days", true},
	} {
		if got, _ := hookState(c.e); got != c.want || disabledByReceiver(c.e) != c.disabled {
			t.Errorf("%+v: %q, disabled %t; want %q, %t", c.e, got, disabledByReceiver(c.e), c.want, c.disabled)
		}
	}
}
