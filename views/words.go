package views

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

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
	"sla_seconds":            "Due after",
	"breach_priority":        "Priority when overdue",
	"breach_queue":           "Move overdue jobs to",
	"warn_fraction":          "At risk after",
	"order":                  "Claim order",
	"overlap":                "People per job",
	"review_fraction":        "Reviewed share",
	"min_agreement":          "Least agreement",
}

// takenBack says to the holder whose reservation a supervisor ended, in
// neutral words, who took the job and why, if they said: "sam took this
// job back: <reason>", "sam canceled this job."; "" for any other ending
// (one of their own, the deadline, a canceled batch).
func takenBack(a tasks.Action, actor, reason string) string {
	var s string
	switch {
	case actor == tasks.System:
		return ""
	case a == tasks.ActionForceReleased:
		s = actor + " took this job back"
	case a == tasks.ActionTransferred:
		s = actor + " transferred this job"
	case a == tasks.ActionCanceled:
		s = actor + " canceled this job"
	default:
		return ""
	}
	if reason == "" {
		return s + "."
	}
	return s + ": " + reason
}

// ReasonRequired says that a supervisor's change was refused for want of
// the reason its queue requires (tasks.ErrReasonRequired).
const ReasonRequired = "Nothing was done: this queue asks for a reason for every cancel, requeue and force release. Say why, and try again."

// SettingLabel names a queue setting as its form does.
func SettingLabel(field string) string { return settingLabels[field] }

// durationSettings are the settings counted in seconds.
var durationSettings = map[string]bool{
	"lease_seconds": true, "max_hold_seconds": true, "aging_seconds": true,
	"retention_seconds": true, "dead_retention_seconds": true, "sla_seconds": true,
}

// SettingsProblem is what is wrong with a queue's settings form: in words,
// and the form's field to blame ("" when none is alone); for the outcome
// form's editor, every problem at once by its input
// (OutcomeProblemKey).
type SettingsProblem struct {
	Field, Message string
	Outcome        map[string]string
}

// SettingProblem says in words what is wrong with a queue setting ("Lease
// must be between 1 second and 1 day"), and blames its field.
func SettingProblem(v *tasks.ValidationError) SettingsProblem {
	if v.Field == "name" {
		return SettingsProblem{Field: "name", Message: "Name must be 1 to 64 lower-case letters, digits, - or _, starting with a letter or digit."}
	}
	if strings.HasPrefix(v.Field, "outcome") {
		return SettingsProblem{Field: "outcome", Message: "Outcome form: " + v.Field + " " + v.Message + "."}
	}
	label, ok := settingLabels[v.Field]
	if !ok {
		return SettingsProblem{Message: v.Field + " " + v.Message}
	}
	if v.Field == "breach_queue" {
		return SettingsProblem{Field: v.Field, Message: "Overdue jobs can only move to another queue, one that exists."}
	}
	if !v.Ranged {
		return SettingsProblem{Field: v.Field, Message: v.Field + " " + v.Message}
	}
	say := strconv.Itoa
	if durationSettings[v.Field] {
		say = Seconds
	}
	return SettingsProblem{Field: v.Field, Message: label + " must be between " + say(v.Min) + " and " + say(v.Max) + "."}
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

// ReadWarnPercent reads the settings form's "at risk after" field, a
// whole percentage of the time to a job's due time, as a warn fraction.
func ReadWarnPercent(text string) (float64, SettingsProblem) {
	n, err := strconv.Atoi(strings.TrimSpace(text))
	if err != nil || n < 1 || n > 100 {
		return 0, SettingsProblem{Field: "warn_fraction", Message: SettingLabel("warn_fraction") + " must be a whole percentage from 1 to 100."}
	}
	return float64(n) / 100, SettingsProblem{}
}

// warnPercent shows a warn fraction as the settings form takes it.
func warnPercent(f float64) string { return strconv.Itoa(int(math.Round(f * 100))) }

// ReadSharePercent reads a share setting (review_fraction, min_agreement)
// as the settings form takes it: a whole percentage from 0 to 100.
func ReadSharePercent(field, text string) (float64, SettingsProblem) {
	n, err := strconv.Atoi(strings.TrimSpace(text))
	if err != nil || n < 0 || n > 100 {
		return 0, SettingsProblem{Field: field, Message: SettingLabel(field) + " must be a whole percentage from 0 to 100."}
	}
	return float64(n) / 100, SettingsProblem{}
}

// ReadSetting reads a queue setting as its form's field holds it: a
// duration as ParseDuration does, any other as a whole number; or says,
// in words, why it cannot.
func ReadSetting(field, text string) (n int, problem SettingsProblem) {
	if durationSettings[field] {
		if n, ok := ParseDuration(text); ok {
			return n, SettingsProblem{}
		}
		return 0, SettingsProblem{Field: field, Message: SettingLabel(field) + " must be a duration such as 90s, 10m or 1h30m."}
	}
	n, err := strconv.Atoi(strings.TrimSpace(text))
	if err != nil {
		return 0, SettingsProblem{Field: field, Message: SettingLabel(field) + " must be a whole number."}
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

// Amount says an amount of time added, for More time's choices: "5 min",
// "2 min 30 s", "45 s".
func Amount(d time.Duration) string {
	secs := int(d / time.Second)
	switch {
	case secs < 60:
		return fmt.Sprintf("%d s", secs)
	case secs%60 == 0:
		return fmt.Sprintf("%d min", secs/60)
	}
	return fmt.Sprintf("%d min %d s", secs/60, secs%60)
}

// moreTimeLeft says how many more times More time may be asked.
func moreTimeLeft(n int) string {
	if n == 1 {
		return "You may ask once more"
	}
	return fmt.Sprintf("You may ask %d more times", n)
}

// noMoreTimeWords says why More time offers nothing.
func noMoreTimeWords(m tasks.MoreTime) string {
	if m.Left == 0 {
		return "No more time can be added: this job has had every extension its queue allows."
	}
	return "No more time can be added: the deadline is the latest its queue allows a job to be held."
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
	audit.JobAssigned:     "Assigned a job",
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
