// Package views holds claimdesk's pages as templ components. Handlers give
// them plain data; nothing here talks to Redis.
package views

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"claimdesk/internal/numfmt"
	"claimdesk/internal/tasks"
)

// Page is what every page's layout needs.
type Page struct {
	Title string
	// User and Role are empty on the login page.
	User string
	Role string
	// CSRF goes into every form and htmx request.
	CSRF string
	// Path is the request path, to mark the current navigation entry.
	Path string
	// Flash is a one-time message that the previous action succeeded;
	// Note, one that it did nothing, and why.
	Flash string
	Note  string
	// DisabledWebhooks counts, for a supervisor, the webhooks their
	// receivers got disabled: the navigation marks them.
	DisabledWebhooks int
	// Locale is how the viewer writes numbers.
	Locale numfmt.Locale
}

// Supervisor reports whether the page's user is a supervisor.
func (p Page) Supervisor() bool { return p.Role == "supervisor" }

// ago says how long ago t was, for people: "just now", "4 min", "3 h 5 min".
func ago(t time.Time, now time.Time) string {
	return span(now.Sub(t))
}

func span(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "under a minute"
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h %d min", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%d days", int(d.Hours()/24))
}

// dueWords says where a job stands against its due time, for people:
// "due in 3 h 20 min", "overdue by 12 min", "completed on time",
// "finished after its due time"; "" for a job without one, or one that
// died or was canceled before it.
func dueWords(j *tasks.Job, now time.Time) string {
	switch {
	case j.DueAt == nil || j.SLA == "":
		return ""
	case j.State == tasks.StateCompleted && j.SLA == tasks.SLAOnTime:
		return "completed on time"
	case j.State.Terminal():
		return "finished after its due time"
	case j.DueAt.After(now):
		return "due in " + span(j.DueAt.Sub(now))
	}
	return "overdue by " + span(now.Sub(*j.DueAt))
}

// iso formats a time for machines (data attributes, <time datetime>).
func iso(t *time.Time) string {
	if t == nil {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// countdown renders the time left until t as m:ss, as the script does.
func countdown(t *time.Time, now time.Time) string {
	if t == nil {
		return ""
	}
	left := t.Sub(now)
	if left <= 0 {
		return "expired"
	}
	return clock(left)
}

// clock writes a duration as a countdown shows it: m:ss, h:mm:ss from an
// hour.
func clock(d time.Duration) string {
	secs := int(d.Round(time.Second).Seconds())
	if secs >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", secs/3600, secs/60%60, secs%60)
	}
	return fmt.Sprintf("%d:%02d", secs/60, secs%60)
}

// inputPattern is a regular expression as an input's pattern attribute
// takes it: browsers read it with the v flag, under which a '-' that ends
// a character class must be escaped.
func inputPattern(re string) string { return strings.ReplaceAll(re, "-]", `\-]`) }

func itoa(n int) string  { return strconv.Itoa(n) }
func i64(n int64) string { return strconv.FormatInt(n, 10) }

// segment is one stretch of a batch's progress bar, in thousandths.
type segment struct {
	Kind string
	X, W int
}

// progressSegments splits a bar of 1000 units among a batch's jobs by
// state, in the order they are drawn.
func progressSegments(b *tasks.Batch) []segment {
	if b.Total == 0 {
		return nil
	}
	parts := []struct {
		kind string
		n    int
	}{{"completed", b.Completed}, {"dead", b.Dead}, {"canceled", b.Canceled}, {"reserved", b.Reserved}, {"moved", b.Moved}, {"waiting", b.Ready}}
	var out []segment
	sum := 0
	for _, p := range parts {
		if p.n == 0 {
			continue
		}
		// Edges from running totals, so the widths add up to exactly 1000.
		x, end := sum*1000/b.Total, (sum+p.n)*1000/b.Total
		out = append(out, segment{Kind: p.kind, X: x, W: end - x})
		sum += p.n
	}
	return out
}

// progressLabel says in words what the bar shows.
func progressLabel(b *tasks.Batch) string {
	moved := ""
	if b.Moved > 0 {
		moved = fmt.Sprintf("%d moved on when overdue, ", b.Moved)
	}
	return fmt.Sprintf("%d of %d done, %d dead, %d canceled, %d in progress, %s%d waiting",
		b.Completed, b.Total, b.Dead, b.Canceled, b.Reserved, moved, b.Ready)
}

// Plural says "1 job" or "3 jobs".
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// cancelQuestion is the confirmation asked before canceling a batch.
func cancelQuestion(b *tasks.Batch) string {
	verb := "are"
	if b.Ready == 1 {
		verb = "is"
	}
	return fmt.Sprintf("Cancel the batch “%s”? Its %s %s canceled; jobs in progress may finish.",
		b.Title, Plural(b.Ready, "waiting job"), verb)
}

// batchStateLabel names a batch's state for people.
func batchStateLabel(b *tasks.Batch) string {
	switch b.State {
	case tasks.BatchOpen:
		return "open"
	case tasks.BatchSealed:
		return "running"
	case tasks.BatchCompleted:
		return "completed"
	case tasks.BatchCompletedWithFailures:
		return "completed with failures"
	case tasks.BatchCanceled:
		if b.Ended() {
			return "canceled"
		}
		return "canceling"
	}
	return string(b.State)
}
