package views

import (
	"strconv"
	"strings"

	"claimdesk/internal/tasks"
)

// settingLabels name a queue's settings as its form does.
var settingLabels = map[string]string{
	"lease_seconds":          "Lease",
	"max_attempts":           "Max attempts",
	"max_extensions":         "Max extensions",
	"max_hold_seconds":       "Max hold",
	"aging_seconds":          "Ageing",
	"retention_seconds":      "Completed jobs kept",
	"dead_retention_seconds": "Dead jobs kept",
	"max_held":               "Max held per person",
}

// SettingLabel names a queue setting as its form does.
func SettingLabel(field string) string { return settingLabels[field] }

// durationSettings are the settings counted in seconds.
var durationSettings = map[string]bool{
	"lease_seconds": true, "max_hold_seconds": true, "aging_seconds": true,
	"retention_seconds": true, "dead_retention_seconds": true,
}

// SettingProblem says in words what is wrong with a queue setting: "Lease
// must be between 1 second and 1 day".
func SettingProblem(v *tasks.ValidationError) string {
	if v.Field == "name" {
		return "Name must be 1 to 64 lower-case letters, digits, - or _, starting with a letter or digit."
	}
	if strings.HasPrefix(v.Field, "outcome") {
		return "Outcome form: " + v.Field + " " + v.Message + "."
	}
	label, ok := settingLabels[v.Field]
	if !ok || !v.Ranged {
		return v.Field + " " + v.Message
	}
	say := strconv.Itoa
	if durationSettings[v.Field] {
		say = Seconds
	}
	return label + " must be between " + say(v.Min) + " and " + say(v.Max) + "."
}

// Seconds says a number of seconds in the largest unit that divides it:
// "1 second", "90 seconds", "5 minutes", "7 days", "10 years".
func Seconds(n int) string {
	units := []struct {
		noun string
		size int
	}{{"year", 365 * 24 * 3600}, {"day", 24 * 3600}, {"hour", 3600}, {"minute", 60}}
	for _, u := range units {
		if n != 0 && n%u.size == 0 {
			return Plural(n/u.size, u.noun)
		}
	}
	return Plural(n, "second")
}
