package tasks

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"claimdesk/internal/skills"
)

// State is where a job is in its life. Every job is in exactly one state and
// in exactly one of its queue's indexes.
type State string

// The states of a job.
const (
	StateScheduled State = "scheduled" // waits for its run time
	StateReady     State = "ready"     // waits to be claimed
	StateReserved  State = "reserved"  // held by an operator until a deadline
	StateCompleted State = "completed" // done, with a result
	StateDead      State = "dead"      // failed or abandoned too often
	StateCanceled  State = "canceled"  // withdrawn before it was done
)

// States lists every state, in the order of a job's life.
var States = []State{StateScheduled, StateReady, StateReserved, StateCompleted, StateDead, StateCanceled}

// Valid reports whether s is one of the states.
func (s State) Valid() bool {
	for _, v := range States {
		if s == v {
			return true
		}
	}
	return false
}

// Check returns nil for one of the states, else an ErrInvalid that says
// which are.
func (s State) Check() error {
	if !s.Valid() {
		return invalid("state", "must be one of scheduled, ready, reserved, completed, dead, canceled")
	}
	return nil
}

// Terminal reports whether a job in state s is finished for good (a dead
// job may still be requeued by a supervisor).
func (s State) Terminal() bool {
	return s == StateCompleted || s == StateDead || s == StateCanceled
}

// Job is a unit of work for a person. Its JSON form is the job object of the
// HTTP API. The reservation token is never part of it.
type Job struct {
	ID           string          `json:"id"`
	Queue        string          `json:"queue"`
	Title        string          `json:"title"`
	Payload      json.RawMessage `json:"payload"`
	Priority     int             `json:"priority"`
	State        State           `json:"state"`
	Attempts     int             `json:"attempts"`
	MaxAttempts  int             `json:"max_attempts"`
	LeaseSeconds int             `json:"lease_seconds"`
	CreatedAt    time.Time       `json:"created_at"`
	RunAt        time.Time       `json:"run_at"`
	ReservedBy   string          `json:"reserved_by,omitempty"`
	// CompletedBy is who completed the job.
	CompletedBy string          `json:"completed_by,omitempty"`
	ReservedAt  *time.Time      `json:"reserved_at,omitempty"`
	Deadline    *time.Time      `json:"deadline,omitempty"`
	Extensions  int             `json:"extensions,omitempty"`
	CompletedAt *time.Time      `json:"completed_at,omitempty"`
	FinishedAt  *time.Time      `json:"finished_at,omitempty"`
	Result      json.RawMessage `json:"result,omitempty"`
	LastError   string          `json:"last_error,omitempty"`
	// IdempotencyKey is the producer's key that created the job, if any.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	// SkippedBy lists the operators who skipped the job and are not offered
	// it again.
	SkippedBy []string `json:"skipped_by,omitempty"`
	// BatchID is the batch the job belongs to, if any.
	BatchID string `json:"batch_id,omitempty"`
	// DueAt is when the job is due, if it has a due time.
	DueAt *time.Time `json:"due_at,omitempty"`
	// SLA is where the job stands against its due time, when it has one.
	SLA SLA `json:"sla,omitempty"`
	// MovedFrom is the queue the job was enqueued in, if it moved since
	// to a breach queue (Queue.BreachQueue): its producers may still read
	// and cancel it.
	MovedFrom string `json:"moved_from,omitempty"`
	// Skills are those it asks for: only people who have each at its
	// level or above may claim it ("de", "contracts:3").
	Skills []string `json:"skills,omitempty"`
	// Assignee is the one person who may claim it.
	Assignee string `json:"assignee,omitempty"`
	// Preferred are the people who alone may claim it until FallbackAt;
	// then anyone in the queue with its skills may.
	Preferred  []string   `json:"preferred,omitempty"`
	FallbackAt *time.Time `json:"fallback_at,omitempty"`
	// Overlap is how many people answer the job, when its queue asks more
	// than one (Queue.Overlap); Answers are the answers given so far, and
	// Agreement, once the last is in, how far they agree on each field
	// (Outcome.Agree). Result is then what they agree on.
	Overlap   int               `json:"overlap,omitempty"`
	Answers   []Answer          `json:"answers,omitempty"`
	Agreement map[string]Agreed `json:"agreement,omitempty"`
	// Review is the completion that waits for review, while one does.
	Review *Review `json:"review,omitempty"`
	// Holders are its reservations, earliest first (then by name), while more than one
	// person holds it at once (a job with overlap: lua/lib.lua, Seats);
	// ReservedBy, ReservedAt, Deadline and Extensions are one of them.
	Holders []Holder `json:"holders,omitempty"`

	rank float64 // place in line: lower is claimed first
	// lastHolder holds it, or held it last (Filter.Person).
	lastHolder string
	token      string // live reservation token, kept inside the engine
	// history is the job's history as stored (decodeHistory), and
	// historyDropped how many of its entries were trimmed.
	history        string
	historyDropped int
	// shared marks one reservation of a job several hold (Each).
	shared bool
}

// meta is the job metadata as the scripts store it (lua/lib.lua; decoded by
// decodeMeta): times in Unix milliseconds, absent fields zero.
type meta struct {
	State          State
	Title          string
	Priority       int
	Attempts       int
	MaxAttempts    int
	LeaseSeconds   int
	CreatedAt      int64
	RunAt          int64
	Rank           float64
	ReservedBy     string
	ReservedAt     int64
	Deadline       int64
	Token          string
	Extensions     int
	FinishedAt     int64
	LastError      string
	IdempotencyKey string
	SkippedBy      []string
	Batch          string
	// ClaimKey is the idempotency key of the live claim, if it had one.
	ClaimKey string
	// HistoryCount is how many history entries the job has had; History is
	// what is kept of them, encoded (decodeHistory).
	HistoryCount int
	History      string
	// DueAt is when the job is due (0: no due time), WarnAt when it is
	// at risk of missing it.
	DueAt, WarnAt int64
	// MovedFrom is the queue the job was enqueued in, once it moved, and
	// BatchFrom its batch there, if it had one.
	MovedFrom, BatchFrom string
	// Skills are the skills the job asks for, canonical (skills.Set.String);
	// RouteTo the people it is routed to, one per line, until FallbackAt
	// (ms; 0: for good), when it goes to anyone with its skills (lua/lib.lua,
	// Routing).
	Skills, RouteTo string
	FallbackAt      int64
	// Overlap is how many people answer the job (0: one, who completes
	// it), as its queue said at its latest claim; Answers how many have
	// (lua/lib.lua, Overlap).
	Overlap, Answers int
	// Review is why the job waits for review, if it does, and Author whose
	// result waits (lua/lib.lua, Review).
	Review, Author string
	// Seats are the job's other reservations (lua/lib.lua, Seats).
	Seats []string
}

// SLA is where a job with a due time stands against it.
type SLA string

const (
	// SLAOnTime: unfinished and not yet at risk, or completed before its
	// due time.
	SLAOnTime SLA = "on_time"
	// SLAAtRisk: unfinished, past the moment its queue's warn fraction
	// set, not yet due.
	SLAAtRisk SLA = "at_risk"
	// SLABreached: unfinished at or past its due time, or finished then.
	SLABreached SLA = "breached"
)

// slaAt says where the job m stands against its due time at now (ms): ""
// without one, or for a job that died or was canceled before it.
func slaAt(m meta, now int64) SLA {
	switch {
	case m.DueAt == 0:
		return ""
	case m.FinishedAt != 0 && m.FinishedAt >= m.DueAt:
		return SLABreached
	case m.FinishedAt != 0 && m.State == StateCompleted:
		return SLAOnTime
	case m.FinishedAt != 0:
		return ""
	case now >= m.DueAt:
		return SLABreached
	case now >= m.WarnAt:
		return SLAAtRisk
	}
	return SLAOnTime
}

// decodeJob builds a Job from a script's answer: its id, metadata and
// payload (payload may be empty when the caller fills it in), and where
// it stands against its due time at now.
func decodeJob(id, rawMeta, payload string, now time.Time) (*Job, error) {
	m, err := decodeMeta(rawMeta)
	if err != nil {
		return nil, fmt.Errorf("decode job %s: %w", id, err)
	}
	q, _ := queueOf(id)
	j := &Job{
		ID: id, Queue: q, Title: m.Title, Priority: m.Priority, State: m.State,
		Attempts: m.Attempts, MaxAttempts: m.MaxAttempts, LeaseSeconds: m.LeaseSeconds,
		CreatedAt: msTime(m.CreatedAt), RunAt: msTime(m.RunAt),
		ReservedAt: optTime(m.ReservedAt), Deadline: optTime(m.Deadline),
		Extensions: m.Extensions, FinishedAt: optTime(m.FinishedAt), LastError: m.LastError,
		IdempotencyKey: m.IdempotencyKey, SkippedBy: m.SkippedBy, BatchID: globalID(m.Batch, q),
		rank: m.Rank, lastHolder: m.ReservedBy, history: m.History, historyDropped: max(0, m.HistoryCount-historyCap),
		DueAt: optTime(m.DueAt), SLA: slaAt(m, ms(now)), MovedFrom: m.MovedFrom,
		Overlap: m.Overlap,
	}
	if m.Review != "" {
		j.Review = &Review{Reason: m.Review, Author: m.Author}
	}
	if m.BatchFrom != "" {
		// Its batch stays in the queue it was enqueued in.
		j.BatchID = globalID(m.BatchFrom, m.MovedFrom)
	}
	if m.Skills != "" {
		asked, err := skills.Parse(m.Skills)
		if err != nil {
			return nil, fmt.Errorf("decode job %s: skills: %w", id, err)
		}
		j.Skills = asked.List()
	}
	if m.RouteTo != "" {
		people := strings.Split(m.RouteTo, "\n")
		if m.FallbackAt == 0 {
			j.Assignee = people[0]
		} else {
			j.Preferred, j.FallbackAt = people, optTime(m.FallbackAt)
		}
	}
	if payload != "" {
		j.Payload = json.RawMessage(payload)
	}
	// The last holder and token stay after a reservation ends (lib.lua).
	switch m.State {
	case StateReserved:
		j.ReservedBy, j.token = m.ReservedBy, m.Token
		if len(m.Seats) > 0 {
			if j.Holders, err = holdersOf(j, m.Seats); err != nil {
				return nil, fmt.Errorf("decode job %s: %w", id, err)
			}
		}
	case StateCompleted:
		j.CompletedAt, j.CompletedBy = j.FinishedAt, m.ReservedBy
	}
	return j, nil
}

// Holder is one of several reservations of a job held at once
// (Job.Holders).
type Holder struct {
	By         string    `json:"by"`
	ReservedAt time.Time `json:"reserved_at"`
	Deadline   time.Time `json:"deadline"`
	Extensions int       `json:"extensions,omitempty"`
	token      string
}

// holdersOf returns the reservations of job j, whose own is one, and
// seats the others as stored: "<holder>\n<token>\n<reserved at>\n
// <deadline>\n<extensions>\n<claim key>" (lua/lib.lua, Seats).
func holdersOf(j *Job, seats []string) ([]Holder, error) {
	hs := []Holder{{By: j.ReservedBy, ReservedAt: *j.ReservedAt, Deadline: *j.Deadline, Extensions: j.Extensions, token: j.token}}
	for _, s := range seats {
		f := strings.SplitN(s, "\n", 6)
		if len(f) != 6 {
			return nil, fmt.Errorf("seat %q: %w", s, errMsgpack)
		}
		at, err1 := strconv.ParseInt(f[2], 10, 64)
		deadline, err2 := strconv.ParseInt(f[3], 10, 64)
		ext, err3 := strconv.Atoi(f[4])
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, fmt.Errorf("seat %q: %w", s, err)
		}
		hs = append(hs, Holder{By: f[0], ReservedAt: msTime(at), Deadline: msTime(deadline), Extensions: ext, token: f[1]})
	}
	slices.SortFunc(hs, func(a, b Holder) int { return cmp.Or(a.ReservedAt.Compare(b.ReservedAt), strings.Compare(a.By, b.By)) })
	return hs, nil
}

// HeldBy returns the job as person's reservation of it shows it, nil if
// person holds none: the job itself, or, held by several, a copy whose
// reservation fields are person's, without the others' (as).
func (j *Job) HeldBy(person string) *Job {
	if j.State != StateReserved {
		return nil
	}
	if len(j.Holders) == 0 {
		if j.ReservedBy == person {
			return j
		}
		return nil
	}
	for _, h := range j.Holders {
		if h.By == person {
			// (Who else holds it is not the holder's to read.)
			v := j.as(h)
			v.Holders = nil
			return v
		}
	}
	return nil
}

// HolderNames names who holds the job, earliest first: its Holders, or
// its one holder (none if it is not reserved).
func (j *Job) HolderNames() []string {
	if len(j.Holders) == 0 {
		if j.State == StateReserved && j.ReservedBy != "" {
			return []string{j.ReservedBy}
		}
		return nil
	}
	names := make([]string, len(j.Holders))
	for i, h := range j.Holders {
		names[i] = h.By
	}
	return names
}

// Shared reports whether the job is one reservation of a job several
// people hold at once, as Each gives it: its Holders are all of them.
func (j *Job) Shared() bool { return j.shared }

// as returns a copy of the job whose reservation fields are h's: one
// reservation of it (Shared).
func (j *Job) as(h Holder) *Job {
	v := *j
	at, deadline := h.ReservedAt, h.Deadline
	v.ReservedBy, v.ReservedAt, v.Deadline, v.Extensions, v.token = h.By, &at, &deadline, h.Extensions, h.token
	v.lastHolder, v.shared = h.By, true
	return &v
}

// seenBy returns the job as a holder's action answers it to them: their
// reservation of it (HeldBy), or, when they hold none, without the
// reservations of whoever else holds it.
func (j *Job) seenBy(holder string) *Job {
	if j == nil || j.State != StateReserved {
		return j
	}
	if v := j.HeldBy(holder); v != nil {
		return v
	}
	v := *j
	v.ReservedBy, v.ReservedAt, v.Deadline, v.Extensions, v.token, v.Holders = "", nil, nil, 0, "", nil
	return &v
}

// Each returns the job once per reservation of it, as each shows it
// (HeldBy): the job itself unless several people hold it.
func (j *Job) Each() []*Job {
	if len(j.Holders) == 0 {
		return []*Job{j}
	}
	out := make([]*Job, len(j.Holders))
	for i, h := range j.Holders {
		out[i] = j.as(h)
	}
	return out
}

// LastHolder is who holds the job, or held it last: who completed it, or
// whose reservation ended when it died.
func (j *Job) LastHolder() string { return j.lastHolder }

// History returns the job's history, oldest first, and how many entries
// were trimmed from its middle: after the first HistoryHead entries, when
// it has historyCap.
// The completed entry carries the job's result.
func (j *Job) History() ([]Entry, int, error) {
	h, err := decodeHistory(j.history, ms(j.CreatedAt))
	if err != nil {
		return nil, 0, fmt.Errorf("decode history of %s: %w", j.ID, err)
	}
	for i := range h {
		if h[i].Action == ActionCompleted {
			h[i].Result = j.Result
		}
	}
	return h, j.historyDropped, nil
}

func msTime(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

func optTime(ms int64) *time.Time {
	if ms == 0 {
		return nil
	}
	t := msTime(ms)
	return &t
}

func ms(t time.Time) int64 { return t.UnixMilli() }
