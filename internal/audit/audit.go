// Package audit keeps the log of administrative actions: who changed
// people, their grants and tokens, queues and their settings, and who
// requeued, force-released or canceled jobs and batches, and when. It is
// bounded (about Keep entries, the oldest dropped first), readable by
// supervisors, and never holds a secret (no password, no token).
package audit

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"claimdesk/internal/keys"
	"claimdesk/internal/tasks"
	"claimdesk/internal/users"

	"github.com/redis/go-redis/v9"
)

// Keep is about how many entries the log keeps: Redis trims the oldest
// beyond it (MAXLEN ~), a few more at times.
const Keep = 10000

// Actions recorded.
const (
	UserAdded     = "user.added"
	UserChanged   = "user.changed"
	UserDisabled  = "user.disabled"
	UserEnabled   = "user.enabled"
	UserUnlocked  = "user.unlocked"
	TokenAdded    = "token.added"
	TokenRevoked  = "token.revoked"
	QueueCreated  = "queue.created"
	QueueChanged  = "queue.changed"
	QueuePaused   = "queue.paused"
	QueueResumed  = "queue.resumed"
	QueueDeleted  = "queue.deleted"
	JobRequeued   = "job.requeued"
	JobReleased   = "job.force_released"
	JobCanceled   = "job.canceled"
	JobAssigned   = "job.assigned"
	BatchCanceled = "batch.canceled"
	DeadRequeued  = "queue.dead_requeued"
	JobsCanceled  = "jobs.canceled"

	WebhookCreated  = "webhook.created"
	WebhookChanged  = "webhook.changed"
	WebhookDeleted  = "webhook.deleted"
	WebhookRotated  = "webhook.rotated"
	WebhookReplayed = "webhook.replayed"
)

// CommandLine is the actor of what the command line did.
const CommandLine = "command line"

// detailMaxBytes bounds an entry's detail.
const detailMaxBytes = 500

// Entry is one administrative action.
type Entry struct {
	// ID is the entry's stream id: its time in ms and a sequence number.
	ID string    `json:"id"`
	At time.Time `json:"at"`
	// Actor is who acted: a user's name, or "command line".
	Actor string `json:"actor"`
	// Action is what they did (the constants above).
	Action string `json:"action"`
	// Target is what they did it to: a user, a queue, a token id, a job
	// or batch id.
	Target string `json:"target"`
	// Detail says more, in words: the settings given, the grants, whose
	// reservation ended.
	Detail string `json:"detail,omitempty"`
}

// Log is the audit log in Redis.
type Log struct {
	rdb redis.UniversalClient
}

// New returns the log over rdb.
func New(rdb redis.UniversalClient) *Log { return &Log{rdb: rdb} }

// Record adds an entry, its time Redis's own.
func (l *Log) Record(ctx context.Context, actor, action, target, detail string) error {
	if len(detail) > detailMaxBytes {
		detail = detail[:detailMaxBytes] + "…"
	}
	err := l.rdb.XAdd(ctx, &redis.XAddArgs{
		Stream: keys.Audit, MaxLen: Keep, Approx: true,
		Values: []any{"actor", actor, "action", action, "target", target, "detail", detail},
	}).Err()
	if err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	return nil
}

// ErrBadCursor means a cursor is not one that List gave.
var ErrBadCursor = errors.New("not a cursor of the audit log")

// ErrBadFilter means a filter names no action the log records, or a time
// span that ends before it starts.
var ErrBadFilter = errors.New("not a filter of the audit log")

var idRE = regexp.MustCompile(`^\d{1,20}-\d{1,20}$`)

// Actions are every action the log records, in the order the Audit page
// offers them.
var Actions = []string{
	UserAdded, UserChanged, UserDisabled, UserEnabled, UserUnlocked, TokenAdded, TokenRevoked,
	QueueCreated, QueueChanged, QueuePaused, QueueResumed, QueueDeleted,
	JobRequeued, JobReleased, JobAssigned, JobCanceled, JobsCanceled, DeadRequeued, BatchCanceled,
	WebhookCreated, WebhookChanged, WebhookDeleted, WebhookRotated, WebhookReplayed,
}

// Filter narrows a listing of the log; its zero value lists everything.
type Filter struct {
	// Actor keeps the entries of one actor: a user's name, or "command
	// line".
	Actor string
	// Action keeps the entries of one action (Actions).
	Action string
	// Since and Until keep the entries from Since and before Until; zero:
	// no bound.
	Since, Until time.Time
}

// filtered reports whether the filter may leave entries out by their
// fields (the time bounds are the range read).
func (f Filter) filtered() bool { return f.Actor != "" || f.Action != "" }

func (f Filter) keeps(actor, action string) bool {
	return (f.Actor == "" || f.Actor == actor) && (f.Action == "" || f.Action == action)
}

// Bounds of a listing's reads: a filtered List reads at most scanMax
// entries (or the limit's, if more), scanChunk at a time, and then answers
// what it found with the cursor of the last entry read, so that no filter
// makes it read the whole log at once.
const (
	scanMax   = 2000
	scanChunk = 500
)

// List returns at most limit entries that the filter keeps, newest first,
// older than the cursor (empty: from the newest), and the cursor of the
// next page (empty at the end). A filtered page may hold fewer than limit
// entries, none even, and still have a next page: the reads of one List
// are bounded.
func (l *Log) List(ctx context.Context, cursor string, limit int, f Filter) ([]Entry, string, error) {
	if f.Action != "" && !slices.Contains(Actions, f.Action) {
		return nil, "", fmt.Errorf("%w: no action %q", ErrBadFilter, f.Action)
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Until.After(f.Since) {
		return nil, "", fmt.Errorf("%w: the span ends before it starts", ErrBadFilter)
	}
	end := "+"
	if cursor != "" {
		if !idRE.MatchString(cursor) {
			return nil, "", ErrBadCursor
		}
		end = "(" + cursor
	}
	if !f.Until.IsZero() {
		until := strconv.FormatInt(f.Until.UnixMilli(), 10) + "-0"
		if cursor == "" || olderID(until, cursor) {
			end = "(" + until
		}
	}
	start := "-"
	if !f.Since.IsZero() {
		start = strconv.FormatInt(f.Since.UnixMilli(), 10) + "-0"
	}
	budget := limit + 1
	if f.filtered() {
		budget = max(budget, scanMax)
	}
	out := []Entry{}
	for read := 0; read < budget; {
		chunk := budget - read
		if f.filtered() {
			chunk = min(chunk, scanChunk)
		}
		msgs, err := l.rdb.XRevRangeN(ctx, keys.Audit, end, start, int64(chunk)).Result()
		if err != nil {
			return nil, "", fmt.Errorf("redis: %w", err)
		}
		read += len(msgs)
		for _, m := range msgs {
			field := func(k string) string { v, _ := m.Values[k].(string); return v }
			if !f.keeps(field("actor"), field("action")) {
				continue
			}
			if len(out) == limit {
				// One more than the page: there is a next page.
				return out, out[limit-1].ID, nil
			}
			out = append(out, Entry{ID: m.ID, At: idTime(m.ID), Actor: field("actor"), Action: field("action"),
				Target: field("target"), Detail: field("detail")})
		}
		if len(msgs) < chunk {
			return out, "", nil // the start of the span: nothing older
		}
		end = "(" + msgs[len(msgs)-1].ID
	}
	// The reads' bound: the next page goes on from the last entry read.
	return out, strings.TrimPrefix(end, "("), nil
}

// olderID reports whether stream id a is older than b; both are ids.
func olderID(a, b string) bool {
	am, as, _ := strings.Cut(a, "-")
	bm, bs, _ := strings.Cut(b, "-")
	ami, _ := strconv.ParseUint(am, 10, 64)
	bmi, _ := strconv.ParseUint(bm, 10, 64)
	if ami != bmi {
		return ami < bmi
	}
	asi, _ := strconv.ParseUint(as, 10, 64)
	bsi, _ := strconv.ParseUint(bs, 10, 64)
	return asi < bsi
}

// Title is the title of the job or batch an entry's detail names (“Title”
// in queue, …), or "" when it names none.
func (e Entry) Title() string {
	rest, ok := strings.CutPrefix(e.Detail, "“")
	if !ok {
		return ""
	}
	// The title ends at the first closing quote followed by " in " and a
	// queue's name: a title may hold quotes of its own.
	for i := 0; i < len(rest); {
		j := strings.Index(rest[i:], "” in ")
		if j < 0 {
			return ""
		}
		title, after := rest[:i+j], rest[i+j+len("” in "):]
		q, _, _ := strings.Cut(after, ",")
		if keys.ValidQueue(q) {
			return title
		}
		i += j + 1
	}
	return ""
}

// setting is one of a queue's settings as an entry's detail says it: its
// name and its value in words; raw tells apart values the words do not
// (two outcome forms of as many choices and fields).
type setting struct{ name, words, raw string }

// settingsOf lists a queue's settings, always in the same order.
func settingsOf(q tasks.Queue) []setting {
	form, raw := "none", ""
	if o := q.Outcome; !o.Empty() {
		form, raw = count(len(o.Choices), "choice")+", "+count(len(o.Fields), "field"), o.String()
	}
	secs := func(n int) string { return strconv.Itoa(n) + "s" }
	due, breach := "when a job says", "nothing"
	if q.SLASeconds > 0 {
		due = secs(q.SLASeconds) + " after enqueue"
	}
	if q.BreachPriority > 0 {
		breach = "priority " + strconv.Itoa(q.BreachPriority)
	}
	if q.BreachQueue != "" {
		breach = strings.TrimPrefix(breach+", move to "+q.BreachQueue, "nothing, ")
	}
	return []setting{
		{"lease", secs(q.LeaseSeconds), ""},
		{"max attempts", strconv.Itoa(q.MaxAttempts), ""},
		{"max extensions", strconv.Itoa(q.MaxExtensions), ""},
		{"max hold", secs(q.MaxHoldSeconds), ""},
		{"ageing", secs(q.AgingSeconds), ""},
		{"max held", strconv.Itoa(q.MaxHeld), ""},
		{"outcome form", form, raw},
		{"reason required", yesNo(q.RequireReason), ""},
		{"due", due, ""},
		{"at risk after", strconv.FormatFloat(q.WarnFraction*100, 'f', -1, 64) + "%", ""},
		{"claim order", q.Order, ""},
		{"on breach", breach, ""},
	}
}

// yesNo says a setting that is on or off.
func yesNo(on bool) string {
	if on {
		return "yes"
	}
	return "no"
}

// count says n things: "1 field", "2 fields".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return strconv.Itoa(n) + " " + thing + "s"
}

// SettingsDetail says a queue's settings, as an entry's detail: "lease
// 300s, max attempts 5, …, outcome form none".
func SettingsDetail(q tasks.Queue) string {
	parts := make([]string, 0, 8)
	for _, s := range settingsOf(q) {
		parts = append(parts, s.name+" "+s.words)
	}
	return strings.Join(parts, ", ")
}

// SettingsChange says what a change of a queue's settings changed, as an
// entry's detail: "lease 300s → 600s, max held 0 → 2"; "nothing changed"
// when nothing did.
func SettingsChange(was, now tasks.Queue) string {
	var parts []string
	after := settingsOf(now)
	for i, b := range settingsOf(was) {
		a := after[i]
		switch {
		case a.words != b.words:
			parts = append(parts, a.name+" "+b.words+" → "+a.words)
		case a.raw != b.raw:
			parts = append(parts, a.name+" changed ("+a.words+")")
		}
	}
	if len(parts) == 0 {
		return "nothing changed"
	}
	return strings.Join(parts, ", ")
}

// PersonDetail says a user's role and grants, and whether the password
// was set, as an entry's detail (never the password).
func PersonDetail(u users.User, newPassword bool) string {
	d := "role " + string(u.Role) + ", queues " + strings.Join(u.Queues, ",")
	if len(u.Queues) == 0 {
		d = "role " + string(u.Role) + ", no queues"
	}
	if newPassword {
		d += ", new password"
	}
	return d
}

// idTime reads the time out of a stream id.
func idTime(id string) time.Time {
	ms, _, _ := strings.Cut(id, "-")
	n, _ := strconv.ParseInt(ms, 10, 64)
	return time.UnixMilli(n).UTC()
}

// JobDetail says which job an action on a job was about, and whose
// reservation it ended (holder, "" for none), as an entry's detail:
// “Title” in queue, held by ann.
func JobDetail(j *tasks.Job, holder string) string {
	d := quote(j.Title) + " in " + j.Queue
	if holder != "" {
		d += ", held by " + holder
	}
	return d
}

// AssignedDetail says which job went to whom, as an entry's detail:
// “Title” in queue, to ann (, taken from bo, when it was held).
func AssignedDetail(j *tasks.Job, person, holder string) string {
	d := quote(j.Title) + " in " + j.Queue + ", to " + person
	if holder != "" {
		d += ", taken from " + holder
	}
	return d
}

// WithReason adds to an entry's detail why the actor acted, if they said
// (reason, "" for not): detail, because “reason”.
func WithReason(detail, reason string) string {
	if reason == "" {
		return detail
	}
	return detail + ", because " + quote(reason)
}

// BatchDetail says which batch an action on a batch was about, as an
// entry's detail: “Title” in queue, 12 jobs.
func BatchDetail(b *tasks.Batch) string {
	return quote(b.Title) + " in " + b.Queue + ", " + count(b.Total, "job")
}

// DeadRequeuedDetail says how many dead jobs went back in line, as an
// entry's detail.
func DeadRequeuedDetail(n int) string { return count(n, "dead job") + " back in line" }

// JobsCanceledDetail says how many jobs were canceled at once, as an
// entry's detail.
func JobsCanceledDetail(n int) string { return count(n, "job") + " canceled at once" }

// quote sets a title off in running text, in quotation marks: a title may
// hold parentheses of its own.
func quote(title string) string { return "“" + title + "”" }
