package views

import (
	"testing"

	"claimdesk/internal/tasks"
)

func TestSettingProblem(t *testing.T) {
	for _, c := range []struct {
		v    tasks.ValidationError
		want string
	}{
		{tasks.ValidationError{Field: "lease_seconds", Min: 1, Max: 86400, Ranged: true}, "Lease must be between 1 second and 1 day."},
		{tasks.ValidationError{Field: "max_hold_seconds", Min: 600, Max: 604800, Ranged: true}, "Max hold must be between 10 minutes and 7 days."},
		{tasks.ValidationError{Field: "max_held", Min: 0, Max: 1000, Ranged: true}, "Max held per person must be between 0 and 1000."},
		{tasks.ValidationError{Field: "retention_seconds", Min: 60, Max: 315360000, Ranged: true}, "Completed jobs kept must be between 1 minute and 10 years."},
		{tasks.ValidationError{Field: "aging_seconds", Min: 0, Max: 100000000, Ranged: true}, "Ageing must be between 0 seconds and 100000000 seconds."},
		{tasks.ValidationError{Field: "name", Message: "must match"}, "Name must be 1 to 64 lower-case letters, digits, - or _, starting with a letter or digit."},
		{tasks.ValidationError{Field: "title", Message: "must not be empty"}, "title must not be empty"},
	} {
		if got := SettingProblem(&c.v); got.Message != c.want {
			t.Errorf("SettingProblem(%+v) = %q, want %q", c.v, got.Message, c.want)
		}
	}
	// The field to blame is the form's: the outcome form's box for any of
	// its parts; none for what the form has no field for.
	for field, want := range map[string]string{"lease_seconds": "lease_seconds", "outcome.fields[0].name": "outcome", "title": ""} {
		if got := SettingProblem(&tasks.ValidationError{Field: field, Message: "is wrong"}); got.Field != want {
			t.Errorf("SettingProblem blames %q for %s, want %q", got.Field, field, want)
		}
	}
	if got := Seconds(5400); got != "90 minutes" {
		t.Errorf("Seconds(5400) = %q", got)
	}
}

// A duration setting is shown in the largest units that fit, and read in
// those or in seconds; what it shows reads back as the same.
func TestDurations(t *testing.T) {
	for n, want := range map[int]string{0: "0s", 45: "45s", 90: "1m30s", 600: "10m", 5400: "1h30m", 14400: "4h", 604800: "7d", 90061: "1d1h1m1s"} {
		if got := Duration(n); got != want {
			t.Errorf("Duration(%d) = %q, want %q", n, got, want)
		}
		if back, ok := ParseDuration(want); !ok || back != n {
			t.Errorf("ParseDuration(%q) = %d, %v; want %d", want, back, ok, n)
		}
	}
	for text, want := range map[string]int{"600": 600, " 10m ": 600, "1h 30m": 5400, "2D": 172800, "1H30M": 5400, "0": 0} {
		if got, ok := ParseDuration(text); !ok || got != want {
			t.Errorf("ParseDuration(%q) = %d, %v; want %d", text, got, ok, want)
		}
	}
	for _, bad := range []string{"", "ten minutes", "10 min", "1h30", "30m1h", "1h1h", "-5", "m", "1.5h", "99999999d", "4w"} {
		if got, ok := ParseDuration(bad); ok {
			t.Errorf("ParseDuration(%q) = %d, want refused", bad, got)
		}
	}
}
