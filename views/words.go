package views

import (
	"strconv"
	"strings"

	"claimdesk/internal/audit"
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

// SettingsProblem is what is wrong with a queue's settings form: in words,
// and the form's field to blame ("" when none is alone).
type SettingsProblem struct{ Field, Message string }

// SettingProblem says in words what is wrong with a queue setting ("Lease
// must be between 1 second and 1 day"), and blames its field.
func SettingProblem(v *tasks.ValidationError) SettingsProblem {
	if v.Field == "name" {
		return SettingsProblem{"name", "Name must be 1 to 64 lower-case letters, digits, - or _, starting with a letter or digit."}
	}
	if strings.HasPrefix(v.Field, "outcome") {
		return SettingsProblem{"outcome", "Outcome form: " + v.Field + " " + v.Message + "."}
	}
	label, ok := settingLabels[v.Field]
	if !ok {
		return SettingsProblem{Message: v.Field + " " + v.Message}
	}
	if !v.Ranged {
		return SettingsProblem{v.Field, v.Field + " " + v.Message}
	}
	say := strconv.Itoa
	if durationSettings[v.Field] {
		say = Seconds
	}
	return SettingsProblem{v.Field, label + " must be between " + say(v.Min) + " and " + say(v.Max) + "."}
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

// ReadSetting reads a queue setting as its form's field holds it: a
// duration as ParseDuration does, any other as a whole number; or says,
// in words, why it cannot.
func ReadSetting(field, text string) (n int, problem SettingsProblem) {
	if durationSettings[field] {
		if n, ok := ParseDuration(text); ok {
			return n, SettingsProblem{}
		}
		return 0, SettingsProblem{field, SettingLabel(field) + " must be a duration such as 90s, 10m or 1h30m."}
	}
	n, err := strconv.Atoi(strings.TrimSpace(text))
	if err != nil {
		return 0, SettingsProblem{field, SettingLabel(field) + " must be a whole number."}
	}
	return n, SettingsProblem{}
}

// durationUnits are the units a setting's duration is written in, largest
// first.
var durationUnits = []struct {
	unit byte
	size int
}{{'d', 24 * 3600}, {'h', 3600}, {'m', 60}, {'s', 1}}

// Duration writes n seconds as the settings form shows a duration: "10m",
// "4h", "1h30m", "7d", "45s"; "0s" for none.
func Duration(n int) string {
	if n <= 0 {
		return "0s"
	}
	var b strings.Builder
	for _, u := range durationUnits {
		if n >= u.size {
			b.WriteString(strconv.Itoa(n / u.size))
			b.WriteByte(u.unit)
			n %= u.size
		}
	}
	return b.String()
}

// ParseDuration reads a duration as the settings form takes it: whole
// seconds ("600"), or amounts of days, hours, minutes and seconds in that
// order ("10m", "1h 30m", "2d", "90s"; letters in either case). ok is
// false for anything else, or more than 10 years.
func ParseDuration(text string) (seconds int, ok bool) {
	t := strings.ToLower(strings.ReplaceAll(strings.TrimSpace(text), " ", ""))
	if n, err := strconv.Atoi(t); err == nil {
		return n, n >= 0
	}
	next := 0 // the first unit the rest may use: each once, largest first
	for t != "" {
		i := 0
		for i < len(t) && i < 7 && '0' <= t[i] && t[i] <= '9' {
			i++
		}
		if i == 0 || i == len(t) {
			return 0, false
		}
		n, _ := strconv.Atoi(t[:i])
		u := next
		for u < len(durationUnits) && durationUnits[u].unit != t[i] {
			u++
		}
		if u == len(durationUnits) {
			return 0, false
		}
		seconds += n * durationUnits[u].size
		next, t = u+1, t[i+1:]
	}
	return seconds, next > 0 && seconds <= 10*365*24*3600
}

// auditWords say each action of the audit log as the Audit page shows it.
var auditWords = map[string]string{
	audit.UserAdded:       "Added a person",
	audit.UserChanged:     "Changed a person",
	audit.UserDisabled:    "Disabled a person",
	audit.UserEnabled:     "Enabled a person",
	audit.UserUnlocked:    "Ended a login delay",
	audit.TokenAdded:      "Made an API token",
	audit.TokenRevoked:    "Revoked an API token",
	audit.QueueCreated:    "Created a queue",
	audit.QueueChanged:    "Changed a queue",
	audit.QueuePaused:     "Paused a queue",
	audit.QueueResumed:    "Resumed a queue",
	audit.QueueDeleted:    "Deleted a queue",
	audit.JobRequeued:     "Requeued a dead job",
	audit.JobReleased:     "Took a job back",
	audit.JobCanceled:     "Canceled a job",
	audit.JobsCanceled:    "Canceled jobs at once",
	audit.DeadRequeued:    "Requeued a queue's dead jobs",
	audit.BatchCanceled:   "Canceled a batch",
	audit.WebhookCreated:  "Added a webhook",
	audit.WebhookChanged:  "Changed a webhook",
	audit.WebhookDeleted:  "Removed a webhook",
	audit.WebhookRotated:  "Rotated a webhook's secret",
	audit.WebhookReplayed: "Replayed a webhook delivery",
}

// AuditAction says an action of the audit log in words; one it has no
// words for, as it is recorded.
func AuditAction(action string) string {
	if w, ok := auditWords[action]; ok {
		return w
	}
	return action
}
