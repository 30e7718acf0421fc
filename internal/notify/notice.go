// Package notify carries notices of state changes to every web instance and
// on to the browsers that may see them. Notices are hints, never the source
// of truth: a browser that misses one heals on the next, or on the snapshot
// it gets when it (re)connects.
//
// Each instance registers itself with a heartbeat and blocks on its own
// Redis list (Bus.Listen). The process's Announcer turns the transitions
// the engine's scripts return into notices and pushes them to every live
// instance's list. Each instance's Hub fans notices out to its websocket
// clients, filtered by who they are, and wakes the requests waiting for a
// job or batch to finish.
package notify

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"claimdesk/internal/tasks"
)

// The types of notices.
const (
	// QueueChanged carries a queue's new counts.
	QueueChanged = "queue.changed"
	// JobAvailable says a job became ready to claim.
	JobAvailable = "job.available"
	// ReservationCreated says an operator claimed a job.
	ReservationCreated = "reservation.created"
	// ReservationReleased says a reservation ended without completion: given
	// back, skipped, failed, force-released or canceled.
	ReservationReleased = "reservation.released"
	// ReservationExtended says the holder moved the deadline.
	ReservationExtended = "reservation.extended"
	// ReservationCompleted says the holder completed the job.
	ReservationCompleted = "reservation.completed"
	// ReservationExpired says a reservation's deadline passed and the job
	// was taken back.
	ReservationExpired = "reservation.expired"
	// ReservationExpiring warns the holder that the deadline is near.
	ReservationExpiring = "reservation.expiring"
	// JobSLA says an unfinished job came at risk of missing its due time,
	// or missed it (Action: at_risk or breached; Operator: its holder, if
	// reserved), or, overdue, left the queue for its breach queue (Action:
	// moved; State: the state it had). Pages showing the queue's due times
	// fetch afresh; requests waiting on a job that moved wake up, to
	// follow it.
	JobSLA = "job.sla"
	// JobFinished says a job reached a terminal state (completed, dead,
	// canceled); producers waiting on it wake up.
	JobFinished = "job.finished"
	// BatchChanged carries a batch's new counts (to supervisors).
	BatchChanged = "batch.changed"
	// BatchFinished says a batch ended: every job of it ended, and it was
	// sealed or canceled. Producers waiting on it wake up.
	BatchFinished = "batch.finished"
	// QueueSettings says a queue's settings changed: paused or resumed, a
	// limit changed, or the queue deleted. Pages showing the queue fetch
	// afresh; Paused says whether it now claims.
	QueueSettings = "queue.settings"
	// Resync tells browsers that notices may have been lost: fetch afresh.
	Resync = "resync"
	// UserChanged says a user changed (role, queues, password, disabled)
	// or logged out of a session: each instance looks the user and the
	// sessions up again for the websockets it has open for them
	// (Client.Stale). It is for instances only, never forwarded
	// to browsers.
	UserChanged = "user.changed"
)

// Notice is one message to browsers. Fields that do not apply are empty.
type Notice struct {
	Type     string     `json:"type"`
	Queue    string     `json:"queue,omitempty"`
	JobID    string     `json:"job_id,omitempty"`
	BatchID  string     `json:"batch_id,omitempty"`
	Title    string     `json:"title,omitempty"`
	Priority *int       `json:"priority,omitempty"`
	Operator string     `json:"operator,omitempty"`
	Deadline *time.Time `json:"deadline,omitempty"`
	State    string     `json:"state,omitempty"`
	// Action and Actor say what changed a job and who did it (a user, or
	// "system"), so a page can say why a reservation ended.
	Action string `json:"action,omitempty"`
	Actor  string `json:"actor,omitempty"`
	// Reason is why the actor ended a reservation, if they said (a
	// supervisor's take-back or cancel), for its holder's page.
	Reason    string `json:"reason,omitempty"`
	Ready     *int64 `json:"ready,omitempty"`
	Reserved  *int64 `json:"reserved,omitempty"`
	Scheduled *int64 `json:"scheduled,omitempty"`
	// Held counts ready jobs waiting for a slot of their batch: part of
	// Ready, but not claimable.
	Held *int64 `json:"held,omitempty"`
	// Claimable counts what a claim may take now: Ready less Held
	// (tasks.Counts.Claimable), so that a page only shows it.
	Claimable *int64 `json:"claimable,omitempty"`
	Dead      *int64 `json:"dead,omitempty"`
	// Paused says whether the queue of a queue.settings notice is paused.
	Paused *bool `json:"paused,omitempty"`
	// Batch is the batch of a batch.changed or batch.finished notice.
	Batch *tasks.Batch `json:"batch,omitempty"`
	// User is the user a user.changed notice is about.
	User string `json:"user,omitempty"`
	// At is when the change whose counts a queue.changed carries was made,
	// in ms by the Redis clock: a hub shows no counts older than those it
	// showed last (counts from several instances may cross on the way).
	At int64 `json:"at,omitempty"`

	// encoded is the notice as JSON, made once by the hub for every
	// connection it goes to (Encoded).
	encoded []byte
}

// Encoded returns the notice as JSON: as the hub encoded it once for all
// the connections it fans out to, or else encoded now.
func (n *Notice) Encoded() ([]byte, error) {
	if n.encoded != nil {
		return n.encoded, nil
	}
	return json.Marshal(n)
}

// Viewer is who a browser connection belongs to.
type Viewer struct {
	Name string
	// All is set for supervisors, who see every notice.
	All bool
	// Queues are the queues an operator works.
	Queues []string
	// Away is set while the operator is away: no new-job notices.
	Away bool
}

// equal reports whether v and w see the same notices.
func (v Viewer) equal(w Viewer) bool {
	return v.Name == w.Name && v.key() == w.key()
}

// key says what the viewer sees of the notices every viewer alike may see:
// viewers of one key share a group in the hub, and its frames.
func (v Viewer) key() string {
	return fmt.Sprintf("%t %t %q", v.All, v.Away, slices.Sorted(slices.Values(v.Queues)))
}

// Sees reports whether the viewer may receive the notice: supervisors see
// everything but the warning that a reservation runs out, which is its
// holder's alone; operators see their queues' counts and new jobs, and
// their own reservations.
func (v Viewer) Sees(n Notice) bool {
	return v.seesAlike(n) || v.seesAlone(n)
}

// seesAlike reports whether the viewer sees the notice as every viewer of
// its key does, whoever they are.
func (v Viewer) seesAlike(n Notice) bool {
	switch {
	case n.Type == ReservationExpiring:
		return false
	case v.All || n.Type == Resync:
		return true
	case n.Type == JobAvailable && v.Away:
		return false
	}
	switch n.Type {
	case QueueChanged, JobAvailable, QueueSettings, JobSLA:
		return slices.Contains(v.Queues, n.Queue)
	}
	return false
}

// seesAlone reports whether the viewer sees the notice because it is
// about them: the warning that their reservation runs out, and, for an
// operator, a change to their own reservation.
func (v Viewer) seesAlone(n Notice) bool {
	if n.Operator != v.Name || n.Operator == "" {
		return false
	}
	return n.Type == ReservationExpiring || !v.All && aboutReservation(n)
}

// aboutReservation reports whether the notice is of a reservation's change.
func aboutReservation(n Notice) bool {
	switch n.Type {
	case ReservationCreated, ReservationExtended, ReservationReleased, ReservationCompleted, ReservationExpired:
		return true
	}
	return false
}
