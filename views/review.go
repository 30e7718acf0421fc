package views

import (
	"net/url"
	"strings"
	"time"
	_ "time/tzdata" // the viewer's zone of Finished, on machines without a zone database

	"claimdesk/internal/tasks"
)

// Finished is the time range that a queue page's finished jobs are kept
// to, as its filter form sent it: When is "today", "24h", "7d", or "" for
// From and To (as a datetime-local input sends them, either may be empty);
// times are in the zone TZ (the viewer's, "" for UTC).
type Finished struct {
	When, From, To, TZ string
}

// Empty reports whether the range keeps every finished job.
func (f Finished) Empty() bool { return f.When == "" && f.From == "" && f.To == "" }

// set adds the range to q.
func (f Finished) set(q url.Values) {
	for k, v := range map[string]string{"when": f.When, "from": f.From, "to": f.To, "tz": f.TZ} {
		if v != "" && (k != "tz" || !f.Empty()) {
			q.Set(k, v)
		}
	}
}

// Bounds are the times the range keeps finished jobs between, now, a zero
// time no bound; ok is false when TZ names no zone or From or To is no
// time.
func (f Finished) Bounds(now time.Time) (since, until time.Time, ok bool) {
	zone, err := time.LoadLocation(f.TZ)
	if err != nil {
		return since, until, false
	}
	switch f.When {
	case "today":
		y, m, d := now.In(zone).Date()
		return time.Date(y, m, d, 0, 0, 0, 0, zone), time.Time{}, true
	case "24h":
		return now.Add(-24 * time.Hour), time.Time{}, true
	case "7d":
		return now.Add(-7 * 24 * time.Hour), time.Time{}, true
	case "":
	default:
		return since, until, false
	}
	for _, b := range []struct {
		text string
		to   *time.Time
	}{{f.From, &since}, {f.To, &until}} {
		if b.text == "" {
			continue
		}
		if *b.to, err = time.ParseInLocation("2006-01-02T15:04", b.text, zone); err != nil {
			return since, until, false
		}
	}
	if !until.IsZero() {
		until = until.Add(time.Minute - time.Millisecond) // to the end of its minute
	}
	return since, until, true
}

// listQuery is the query of a queue page's listing of the state: its
// filter, and for a finished state the time range.
func listQuery(v QueueView, s tasks.State) url.Values {
	q := url.Values{"state": {string(s)}}
	if s == "" && v.SLA != "" {
		q = url.Values{"sla": {string(v.SLA)}}
	}
	for k, val := range map[string]string{"person": v.Filter.Person, "batch": v.Filter.Batch, "q": v.Filter.Text} {
		if val != "" {
			q.Set(k, val)
		}
	}
	if v.Filter.Priority != nil {
		q.Set("priority", itoa(*v.Filter.Priority))
	}
	if s.Terminal() {
		v.Finished.set(q)
	}
	return q
}

// listURL is the address of the queue page listing the state.
func listURL(v QueueView, s tasks.State) string {
	return queueURL(v.Queue.Name) + "?" + listQuery(v, s).Encode()
}

// slaListURL is the address of the queue page listing the unfinished
// jobs that stand so against their due time, with the filter as it is.
func slaListURL(v QueueView, sla tasks.SLA) string {
	v.SLA = sla
	return queueURL(v.Queue.Name) + "?" + listQuery(v, "").Encode()
}

// clearURL is the address of the listing without its filter.
func clearURL(v QueueView) string {
	if v.SLA != "" {
		return queueURL(v.Queue.Name) + "?sla=" + string(v.SLA)
	}
	return queueURL(v.Queue.Name) + "?state=" + string(v.State)
}

// noJobsWords says that a listing holds no jobs: "No ready jobs", "No
// jobs at risk", "No overdue jobs".
func noJobsWords(v QueueView) string {
	switch v.SLA {
	case tasks.SLAAtRisk:
		return "No jobs at risk"
	case tasks.SLABreached:
		return "No overdue jobs"
	}
	return "No " + string(v.State) + " jobs"
}

// nextPageURL is the address of the listing's next page.
func nextPageURL(v QueueView) string {
	q := listQuery(v, v.State)
	if v.State.Terminal() {
		q.Set("order", map[bool]string{true: "desc", false: "asc"}[v.Newest])
	}
	q.Set("cursor", v.NextCursor)
	return queueURL(v.Queue.Name) + "?" + q.Encode()
}

// holderLabel heads the column of who finished a finished state's jobs.
func holderLabel(s tasks.State) string {
	if s == tasks.StateCompleted {
		return "Completed by"
	}
	return "Last held by"
}

// outcomeLength bounds the outcome a list shows in short.
const outcomeLength = 120

// outcomeText says in full what a finished job came to: a completed job's
// result as "Label: value" of its fields in the order given, a dead or
// canceled job's last error.
func outcomeText(j *tasks.Job) string {
	if j.State != tasks.StateCompleted {
		return j.LastError
	}
	if len(j.Result) == 0 {
		return ""
	}
	var parts []string
	for _, f := range ParsePayload(j.Result) {
		v := f.Value
		switch f.Kind {
		case "object":
			v = Plural(len(f.Items), "field")
		case "array":
			v = Plural(len(f.Items), "item")
		}
		parts = append(parts, f.Label()+": "+strings.Join(strings.Fields(v), " "))
	}
	return strings.Join(parts, " · ")
}

// queueURL is the address of the queue's page.
func queueURL(queue string) string { return "/supervisor/queues/" + url.PathEscape(queue) }

// batchJobsURL is the address of the batch's jobs in the state, on its
// queue's page.
func batchJobsURL(queue, batch string, s tasks.State) string {
	return queueURL(queue) + "?" + url.Values{"state": {string(s)}, "batch": {batch}}.Encode()
}
