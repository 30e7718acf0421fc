package views

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"claimdesk/internal/tasks"
	"claimdesk/internal/webhooks"

	"github.com/a-h/templ"
)

// WebhooksView is every webhook, and the form for a new one.
type WebhooksView struct {
	Endpoints []webhooks.Endpoint
	// Queues are every queue's name, to choose from.
	Queues []string
	// Sealed is whether the secrets are sealed at rest.
	Sealed bool
	// Form is the new webhook's form as typed, and Problem what was
	// refused of it.
	Form    WebhookForm
	Problem WebhookProblem
}

// WebhookForm is the form for a new webhook, as typed.
type WebhookForm struct {
	URL    string
	Events []tasks.EventType
	// Every is set for every queue, those made later too; else the
	// webhook receives the events of Queues.
	Every  bool
	Queues []string
}

// NewWebhookForm is the form as a page first shows it: every event, of
// every queue.
func NewWebhookForm() WebhookForm {
	return WebhookForm{Events: tasks.EventTypes, Every: true}
}

// WebhookProblem is what was refused of the form for a new webhook, in
// words, and the field to blame: url, events, queues, or "" when none is
// alone.
type WebhookProblem struct{ Field, Message string }

// WebhookView is one webhook and its latest deliveries.
type WebhookView struct {
	Endpoint   webhooks.Endpoint
	Deliveries []webhooks.Delivery
	// Secret is a signing secret just made, shown this once: Added says
	// the webhook was just added, else its secret was rotated.
	Secret string
	Added  bool
}

// disabledByReceiver reports whether the endpoint was disabled by what
// its receiver did (answered 410 Gone, or failed for days), not paused.
func disabledByReceiver(e webhooks.Endpoint) bool {
	return !e.Enabled && e.DisabledReason != webhooks.DisabledPaused
}

// hookState names an endpoint's state, and the class that colors it.
func hookState(e webhooks.Endpoint) (words, class string) {
	switch {
	case e.Enabled && e.FailingSince != nil:
		return "Enabled, failing", "state-failing"
	case e.Enabled:
		return "Enabled", "state-enabled"
	case e.DisabledReason == webhooks.DisabledGone:
		return "Disabled: answered 410 Gone", "state-disabled"
	case e.DisabledReason == webhooks.DisabledFailing:
		return "Disabled: failing for " + failingLimit(), "state-disabled"
	}
	return "Paused", "state-paused"
}

// failingLimit says how long an endpoint may fail before it is disabled.
func failingLimit() string { return Seconds(int(webhooks.FailingLimit.Seconds())) }

// disabledWhy says why the receiver's endpoint was disabled, and what to
// do about it.
func disabledWhy(e webhooks.Endpoint) string {
	why := "Every attempt to deliver to it failed for " + failingLimit()
	if e.DisabledReason == webhooks.DisabledGone {
		why = "Its receiver answered 410 Gone, which asks for no more events"
	}
	return why + ". Fix the receiver, then resume the webhook: the events since wait for it (up to " +
		thousands(webhooks.Backlog) + "). Then replay the deliveries that failed."
}

// listed spaces out a comma-separated list (an endpoint's EventList or
// QueueList) for reading: "job.completed, job.dead".
func listed(list string) string { return strings.ReplaceAll(list, ",", ", ") }

// hookHost is the host an endpoint's URL names, to title its page.
func hookHost(e webhooks.Endpoint) string {
	if u, err := url.Parse(e.URL); err == nil && u.Host != "" {
		return u.Host
	}
	return e.ID
}

// WebhookTitle is the title of an endpoint's page.
func WebhookTitle(e webhooks.Endpoint) string { return "Webhook to " + hookHost(e) }

// lastAnswer says how a delivery's last attempt was answered: its status,
// or why none came.
func lastAnswer(d webhooks.Delivery) string {
	if d.LastStatus == 0 {
		return d.LastError
	}
	s := strconv.Itoa(d.LastStatus) + " " + http.StatusText(d.LastStatus)
	if d.LastError != "" && d.LastError != "answered "+strconv.Itoa(d.LastStatus) {
		s += ": " + d.LastError
	}
	return s
}

// answerShown is how much of an answer's body a delivery's row shows.
const answerShown = 120

// excerpt is the first n characters of s, and "…" when there were more.
func excerpt(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// replayable reports whether a delivery may be replayed from its page:
// any but one whose attempt is under way.
func replayable(d webhooks.Delivery) bool { return d.State != webhooks.StateDelivering }

// aboutJob reports whether the delivery's event is about a job (else a
// batch).
func aboutJob(d webhooks.Delivery) bool { return d.Event != tasks.EventBatchFinished }

// checkedEvent reports whether the form has the event ticked.
func checkedEvent(f WebhookForm, t tasks.EventType) bool { return slices.Contains(f.Events, t) }

// thousands writes n ≥ 0 with a comma between each three digits: 10,000.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// hookBlame marks the URL field of the new webhook form when the problem
// is its: the page opens on it, and it says what is wrong.
func hookBlame(p WebhookProblem) templ.Attributes {
	if p.Field != "url" {
		return nil
	}
	return templ.Attributes{"aria-invalid": "true", "aria-describedby": "problem-url", "autofocus": true}
}

// groupBlame points a group of the new webhook form (events, queues) to
// the problem when it is its.
func groupBlame(p WebhookProblem, field string) templ.Attributes {
	if p.Field != field {
		return nil
	}
	return templ.Attributes{"aria-describedby": "problem-" + field}
}
