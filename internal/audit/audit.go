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

var idRE = regexp.MustCompile(`^\d{1,20}-\d{1,20}$`)

// List returns at most limit entries, newest first, older than the cursor
// (empty: from the newest), and the cursor of the next page (empty at the
// end).
func (l *Log) List(ctx context.Context, cursor string, limit int) ([]Entry, string, error) {
	end := "+"
	if cursor != "" {
		if !idRE.MatchString(cursor) {
			return nil, "", ErrBadCursor
		}
		end = "(" + cursor
	}
	msgs, err := l.rdb.XRevRangeN(ctx, keys.Audit, end, "-", int64(limit)+1).Result()
	if err != nil {
		return nil, "", fmt.Errorf("redis: %w", err)
	}
	next := ""
	if len(msgs) > limit {
		msgs = msgs[:limit]
		next = msgs[limit-1].ID
	}
	out := make([]Entry, len(msgs))
	for i, m := range msgs {
		field := func(k string) string { v, _ := m.Values[k].(string); return v }
		out[i] = Entry{ID: m.ID, At: idTime(m.ID), Actor: field("actor"), Action: field("action"),
			Target: field("target"), Detail: field("detail")}
	}
	return out, next, nil
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
	return []setting{
		{"lease", secs(q.LeaseSeconds), ""},
		{"max attempts", strconv.Itoa(q.MaxAttempts), ""},
		{"max extensions", strconv.Itoa(q.MaxExtensions), ""},
		{"max hold", secs(q.MaxHoldSeconds), ""},
		{"ageing", secs(q.AgingSeconds), ""},
		{"max held", strconv.Itoa(q.MaxHeld), ""},
		{"outcome form", form, raw},
		{"reason required", yesNo(q.RequireReason), ""},
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
