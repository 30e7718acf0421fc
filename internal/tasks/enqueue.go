package tasks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"claimdesk/internal/skills"
	"claimdesk/internal/strictjson"
)

// NewJob is what a producer gives to create a job.
type NewJob struct {
	// Title says in a line what to do: 1 to 200 characters.
	Title string `json:"title"`
	// Payload is a JSON object of at most 64 KiB; empty means {}.
	Payload json.RawMessage `json:"payload"`
	// Priority is 0 to 100, higher first; nil means 50.
	Priority *int `json:"priority"`
	// RunAt, if in the future, schedules the job for then.
	RunAt *time.Time `json:"run_at"`
	// DelaySeconds, if above 0, schedules the job that long after now (by
	// the Redis clock). It may not be given with RunAt.
	DelaySeconds int `json:"delay_seconds"`
	// LeaseSeconds overrides the queue's lease for this job (1 to 86400);
	// 0 is the queue's.
	LeaseSeconds int `json:"lease_seconds"`
	// MaxAttempts overrides the queue's max attempts for this job (1 to
	// 1000); 0 is the queue's.
	MaxAttempts int `json:"max_attempts"`
	// IdempotencyKey, when set, makes a repeat of the same request return the
	// job first created with that key instead of creating another: 1 to 200
	// printable ASCII characters, no spaces.
	IdempotencyKey string `json:"idempotency_key"`
	// DueAt, within a year of now, is when the job is due.
	DueAt *time.Time `json:"due_at"`
	// DueInSeconds, if above 0, makes the job due that long after now (by
	// the Redis clock), at most 365 days. It may not be given with DueAt.
	// With neither, the queue's SLASeconds say when the job is due, if set.
	DueInSeconds int `json:"due_in_seconds"`
	// Skills are what the job asks of whoever claims it: each a skill's
	// name, or name and level ("de", "contracts:3"); only people who have
	// each at that level or above may claim it. At most skills.Most.
	Skills []string `json:"skills"`
	// Assignee, if set, is the one person who may claim the job.
	Assignee string `json:"assignee"`
	// Preferred, if set, are the people (at most MaxPreferred) who alone
	// may claim the job until FallbackAfterSeconds have passed; then
	// anyone in the queue with its skills may. Not with Assignee.
	Preferred            []string `json:"preferred"`
	FallbackAfterSeconds int      `json:"fallback_after_seconds"`
}

// MaxPreferred is how many people a job may prefer.
const MaxPreferred = 10

// Enqueued is one job that Enqueue returns.
type Enqueued struct {
	Job *Job
	// Created is false when the idempotency key named an existing job.
	Created bool
}

// enqueueHead is how many script arguments come before the jobs'
// (enqueue.lua).
const enqueueHead = 6

// Enqueue adds jobs to the queue for actor (the producer), all or none: up
// to MaxBatch in one atomic script, which may also carry other callers'
// jobs (enqueueCombined). Invalid input gives a *ValidationError naming the job
// and field, and changes nothing.
func (s *Store) Enqueue(ctx context.Context, queue, actor string, jobs []NewJob) ([]Enqueued, error) {
	if !validQueueName(queue) {
		return nil, ErrQueueNotFound
	}
	req, err := s.enqueueRequest(queue, actor, false, jobs)
	if err != nil {
		return nil, err
	}
	return s.enqueueCombined(ctx, queue, actor, req)
}

// enqueue runs enqueue.lua for actor: the jobs, and the batch they join
// (batchID) with its new record (newBatch, or "" to join an open one). It
// answers the batch's id and record after the change (the earlier batch
// when the request repeats one).
func (s *Store) enqueue(ctx context.Context, queue, actor, batchID, newBatch string, jobs []NewJob) (batch, record string, _ []Enqueued, _ error) {
	req, err := s.enqueueRequest(queue, actor, true, jobs)
	if err == nil && len(jobs) == 0 && newBatch == "" {
		err = invalid("jobs", "must hold at least one job")
	}
	if err != nil {
		return "", "", nil, err
	}
	if batchID != "" {
		batchID = localID(batchID)
	}
	args := make([]any, 0, enqueueHead+len(req.args))
	args = append(args, s.nowArg(), strictStepMs, batchID, newBatch, actor, len(jobs))
	return s.runEnqueue(ctx, queue, append(args, req.args...), req.payloads)
}

// enqueueRequest validates the jobs that actor enqueues, into a batch or
// not (whose jobs are named by their place when they are more than one),
// and returns their script arguments and payloads.
func (s *Store) enqueueRequest(queue, actor string, batched bool, jobs []NewJob) (*enqueueRequest, error) {
	switch {
	case len(jobs) == 0 && !batched:
		return nil, invalid("jobs", "must hold at least one job")
	case len(jobs) > MaxBatch:
		return nil, tooLarge("jobs", "must hold at most %d jobs", MaxBatch)
	}
	if err := validName("actor", actor); err != nil {
		return nil, err
	}
	req := &enqueueRequest{args: make([]any, 0, len(jobs)*jobPlainArgs), payloads: make([]string, 0, len(jobs))}
	now := s.now()
	for i, j := range jobs {
		jobArgs, payload, err := j.args(queue, now)
		if err != nil {
			if len(jobs) > 1 || batched {
				var v *ValidationError
				if errors.As(err, &v) {
					v.Field = fmt.Sprintf("jobs[%d].%s", i, v.Field)
				}
			}
			return nil, err
		}
		req.args = append(req.args, jobArgs...)
		req.payloads = append(req.payloads, payload)
		if req.bytes += len(payload); req.bytes > maxBatchBytes {
			return nil, tooLarge("jobs", "payloads must total at most %d bytes in one request", maxBatchBytes)
		}
	}
	return req, nil
}

// jobPlainArgs is how many script arguments a job takes that has nothing
// but a title, a priority and a payload (NewJob.args).
const jobPlainArgs = 5

// args validates the job and returns its script arguments (enqueue.lua),
// its id, title, priority and payload, then "" for a job with nothing
// else, or "+" and the rest, which most jobs leave 0 or empty; and its
// payload.
func (j NewJob) args(queue string, now time.Time) (_ []any, payload string, _ error) {
	title, err := validTitle(j.Title)
	if err != nil {
		return nil, "", err
	}
	payload, err = jsonObject("payload", j.Payload)
	if err != nil {
		return nil, "", err
	}
	if payload == "" {
		payload = "{}"
	}
	priority, err := validPriority(j.Priority, DefaultPriority)
	if err != nil {
		return nil, "", err
	}
	var runAt int64
	if j.RunAt != nil {
		if j.DelaySeconds != 0 {
			return nil, "", invalid("run_at", "give run_at or delay_seconds, not both")
		}
		if j.RunAt.After(now.AddDate(1, 0, 0)) {
			return nil, "", invalid("run_at", "must be within a year")
		}
		runAt = ms(*j.RunAt)
	}
	if j.DelaySeconds < 0 || j.DelaySeconds > 365*day {
		return nil, "", invalid("delay_seconds", "must be between 0 and %d", 365*day)
	}
	if j.LeaseSeconds < 0 || j.LeaseSeconds > day {
		return nil, "", invalid("lease_seconds", "must be between 1 and %d, or 0 for the queue's", day)
	}
	if j.MaxAttempts < 0 || j.MaxAttempts > 1000 {
		return nil, "", invalid("max_attempts", "must be between 1 and 1000, or 0 for the queue's")
	}
	if err := ValidIdempotencyKey(j.IdempotencyKey); err != nil {
		return nil, "", err
	}
	var dueAt int64
	if j.DueAt != nil {
		if j.DueInSeconds != 0 {
			return nil, "", invalid("due_at", "give due_at or due_in_seconds, not both")
		}
		if j.DueAt.After(now.AddDate(1, 0, 0)) || j.DueAt.Before(now.AddDate(-1, 0, 0)) {
			return nil, "", invalid("due_at", "must be within a year of now")
		}
		dueAt = max(ms(*j.DueAt), 1)
	}
	if j.DueInSeconds < 0 || j.DueInSeconds > 365*day {
		return nil, "", invalid("due_in_seconds", "must be between 1 and %d, or 0 for none", 365*day)
	}
	asked, routeTo, fallback, err := j.routing()
	if err != nil {
		return nil, "", err
	}
	args := []any{localID(newID(queue, now)), title, priority, payload, ""}
	if runAt == 0 && j.DelaySeconds == 0 && j.LeaseSeconds == 0 && j.MaxAttempts == 0 && dueAt == 0 &&
		j.DueInSeconds == 0 && asked == "" && routeTo == "" && fallback == 0 && j.IdempotencyKey == "" {
		return args, payload, nil
	}
	args[4] = "+"
	return append(args, runAt, int64(j.DelaySeconds)*1000, j.LeaseSeconds, j.MaxAttempts, dueAt,
		int64(j.DueInSeconds)*1000, asked, routeTo, fallback, j.IdempotencyKey), payload, nil
}

// routing validates whom the job is for and returns it as enqueue.lua
// takes it: the skills asked (canonical), the people it is routed to (one
// per line) and in how many ms it falls back (0: never).
func (j NewJob) routing() (asked, routeTo string, fallbackMs int64, _ error) {
	set, err := skills.FromList(j.Skills)
	if err != nil {
		return "", "", 0, invalid("skills", "%v", err)
	}
	switch {
	case j.Assignee != "" && j.Preferred != nil:
		return "", "", 0, invalid("assignee", "give assignee or preferred, not both")
	case j.Assignee != "":
		if j.FallbackAfterSeconds != 0 {
			return "", "", 0, invalid("fallback_after_seconds", "is for preferred people; an assignee's job waits for them")
		}
		if err := validPerson("assignee", j.Assignee); err != nil {
			return "", "", 0, err
		}
		return set.String(), j.Assignee, 0, nil
	case j.Preferred != nil:
		if len(j.Preferred) == 0 || len(j.Preferred) > MaxPreferred {
			return "", "", 0, invalid("preferred", "must name 1 to %d people", MaxPreferred)
		}
		for i, p := range j.Preferred {
			if err := validPerson(fmt.Sprintf("preferred[%d]", i), p); err != nil {
				return "", "", 0, err
			}
			if slices.Contains(j.Preferred[:i], p) {
				return "", "", 0, invalid("preferred", "names %s twice", p)
			}
		}
		if j.FallbackAfterSeconds < 1 || j.FallbackAfterSeconds > 30*day {
			return "", "", 0, invalid("fallback_after_seconds", "must be between 1 and %d with preferred people", 30*day)
		}
		return set.String(), strings.Join(j.Preferred, "\n"), int64(j.FallbackAfterSeconds) * 1000, nil
	case j.FallbackAfterSeconds != 0:
		return "", "", 0, invalid("fallback_after_seconds", "is for preferred people: give preferred too")
	}
	return set.String(), "", 0, nil
}

// validPerson checks the name of a person a job is routed to, for the
// given field: a user name as the engine stores it, without "|", which
// separates the parts of a line's members (lua/lib.lua, Routing).
func validPerson(field, name string) error {
	if err := validName(field, name); err != nil {
		return err
	}
	if strings.Contains(name, "|") {
		return invalid(field, "must not contain |")
	}
	return nil
}

// validTitle checks a job's or batch's title and returns it trimmed: 1 to
// 200 characters of UTF-8 text on one line, and none of the invisible
// characters that make a title read other than it is (titleSpoofing).
func validTitle(title string) (string, error) {
	title = strings.TrimSpace(title)
	if !utf8.ValidString(title) {
		return "", invalid("title", "must be valid UTF-8")
	}
	if n := utf8.RuneCountInString(title); n < 1 || n > 200 {
		return "", invalid("title", "must be 1 to 200 characters")
	}
	if strings.ContainsFunc(title, unicode.IsControl) {
		return "", invalid("title", "must not contain control characters")
	}
	if i := strings.IndexFunc(title, titleSpoofing); i >= 0 {
		r, _ := utf8.DecodeRuneInString(title[i:])
		return "", invalid("title", "must not contain the invisible formatting character %U", r)
	}
	return title, nil
}

// titleSpoofing reports whether r may not appear in a title: a Unicode
// format character (category Cf: the bidirectional embeddings, overrides,
// isolates and marks U+061C, U+200E, U+200F, U+202A–U+202E,
// U+2066–U+2069, the zero-width characters U+200B–U+200D, U+2060–U+2064
// and U+FEFF, the soft hyphen, tag characters and the rest), or a line or
// paragraph separator (U+2028, U+2029). Each shows nothing, or moves the
// text around it, so a title with one could read as another.
func titleSpoofing(r rune) bool {
	return unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)
}

// validPriority checks a priority given as *int and returns it, or def
// when none is given.
func validPriority(p *int, def int) (int, error) {
	if p == nil {
		return def, nil
	}
	if *p < 0 || *p > 100 {
		return 0, invalid("priority", "must be between 0 and 100")
	}
	return *p, nil
}

// ValidIdempotencyKey checks an idempotency key: up to 200 printable
// ASCII characters, no spaces; "" is no key.
func ValidIdempotencyKey(key string) error {
	if len(key) > 200 {
		return invalid("idempotency_key", "must be at most 200 characters")
	}
	for _, c := range []byte(key) {
		if c <= ' ' || c > '~' {
			return invalid("idempotency_key", "must be printable ASCII without spaces")
		}
	}
	return nil
}

// validName checks a user name as the engine stores it (an operator, or
// the actor of a change), for the given field.
func validName(field, name string) error {
	if name == "" || len(name) > 64 || !utf8.ValidString(name) || strings.ContainsFunc(name, unicode.IsControl) {
		return invalid(field, "must be 1 to 64 bytes of UTF-8, no control characters")
	}
	return nil
}

// jsonObject checks that raw is a JSON object (or empty, or null) of at most
// MaxPayloadBytes, strict (strictjson.Check: valid UTF-8, no escaped half
// of a surrogate pair, no key twice in one object), and returns it
// compacted ("" when empty or null).
func jsonObject(field string, raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if len(raw) > 4*MaxPayloadBytes {
		return "", tooLarge(field, "must be at most %d bytes", MaxPayloadBytes)
	}
	if raw[0] != '{' {
		return "", invalid(field, "must be a JSON object")
	}
	if e := strictjson.Check(raw, nil); e != nil {
		return "", invalid(e.In(field), "%s", e.Problem)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return "", invalid(field, "must be a JSON object")
	}
	if buf.Len() > MaxPayloadBytes {
		return "", tooLarge(field, "must be at most %d bytes", MaxPayloadBytes)
	}
	return buf.String(), nil
}
