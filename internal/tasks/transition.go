package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Action names what made a job change: the action of a history entry and
// of a transition (api/openapi.yaml, Action).
type Action string

// The actions. lua/lib.lua stores them by number (actionByCode).
const (
	ActionEnqueued      Action = "enqueued"
	ActionPromoted      Action = "promoted" // a scheduled job came due
	ActionAdmitted      Action = "admitted" // a batch slot let it into line
	ActionClaimed       Action = "claimed"
	ActionExtended      Action = "extended"
	ActionReleased      Action = "released" // given back by its holder
	ActionSkipped       Action = "skipped"
	ActionFailed        Action = "failed"
	ActionExpired       Action = "expired" // its reservation ran out
	ActionRequeued      Action = "requeued"
	ActionForceReleased Action = "force_released" // taken from its holder
	ActionCanceled      Action = "canceled"
	ActionCompleted     Action = "completed"
	// ActionDrafted is a history entry only, never a transition: the
	// holder saved the reservation's first draft (SaveDraft).
	ActionDrafted Action = "drafted"
	// ActionAtRisk and ActionBreached leave the job in its state: its
	// warn point came, then its due time (WatchDue).
	ActionAtRisk   Action = "at_risk"
	ActionBreached Action = "breached"
	// ActionMoved moves a breached job to its queue's breach queue
	// (MoveBreached): its transition out of the old queue goes to no
	// state (To ""), its transition into the new one from none (From
	// ""); the job's history, which it keeps, has the second, with the
	// old queue's name as its reason.
	ActionMoved Action = "moved"
	// ActionAssigned routes a waiting job to one person (Assign), and
	// ActionTransferred a held one, whose reservation it ends; the history
	// entry's reason names the person. ActionFellBack leaves the job in
	// its state: the time of the people it preferred ran out, and anyone
	// with its skills may claim it now.
	ActionAssigned    Action = "assigned"
	ActionTransferred Action = "transferred"
	ActionFellBack    Action = "fell_back"
	// ActionAnswered ends a reservation of a job with overlap with one of
	// its answers, before the last (which completes it): the job goes
	// back in line for the next person.
	ActionAnswered Action = "answered"
	// ActionSubmitted ends a reservation with a result that waits for
	// review (its reason says why: ReviewTraining, ReviewSample,
	// ReviewDisagreement); ActionApproved completes a job its reviewer
	// approved, and ActionSentBack ends the review, with the reviewer's
	// note as its reason: the job goes back to be done again.
	ActionSubmitted Action = "submitted"
	ActionApproved  Action = "approved"
	ActionSentBack  Action = "sent_back"
)

// actionByCode and stateByCode are the numbers under which lua/lib.lua
// stores actions and states in a job's history: its ACTION_CODE and
// STATE_CODE are made from them (luaConstants).
var (
	actionByCode = []Action{"", ActionEnqueued, ActionPromoted, ActionAdmitted, ActionClaimed,
		ActionExtended, ActionReleased, ActionSkipped, ActionFailed, ActionExpired, ActionRequeued,
		ActionForceReleased, ActionCanceled, ActionCompleted, ActionDrafted, ActionAtRisk, ActionBreached, ActionMoved,
		ActionAssigned, ActionTransferred, ActionFellBack, ActionAnswered, ActionSubmitted, ActionApproved, ActionSentBack}
	stateByCode = []State{"", StateScheduled, StateReady, StateReserved, StateCompleted, StateDead, StateCanceled}
)

// System is the actor of what nobody did in person: reclaiming an expired
// reservation, promoting a due job, admitting a job into a batch slot.
const System = "system"

// Transition is one change of one job's state, as the script that made it
// answered it. Everything that follows a change (notices, waking waiters,
// metrics, a person's recent work) is built from transitions alone.
type Transition struct {
	JobID   string
	Queue   string
	BatchID string // "" for none
	Action  Action
	// From is the state before ("" when the job was just made), To after.
	From, To State
	// Actor is the user who acted, or System.
	Actor string
	// Attempt is which attempt a reservation is (1 for the first), for the
	// changes of a reservation; otherwise the attempts spent so far.
	Attempt int
	// Holder is whose reservation the change ended or extended, if any
	// (the actor too, when holders end their own).
	Holder string
	At     time.Time
	// Deadline is the reservation's: the one the change began or
	// extended, or the one it ended.
	Deadline *time.Time
	// Title and Priority say what the job is, for notices.
	Title    string
	Priority int
	// Reason is why, as the job's history keeps it: the holder's, for a
	// failure; the supervisor's, for a change they gave one.
	Reason string
	// Assignee is the person an assignment or transfer routed the job to.
	Assignee string
}

// EndsReservation reports whether the change ended its holder's
// reservation: one out of reserved, or one of several reservations of a
// job held at once ending while others stay (lua/lib.lua, Seats).
func (t Transition) EndsReservation() bool { return endsReservation(t.From, t.To, t.Action) }

// EndsReservation reports whether the entry ended a reservation
// (Transition.EndsReservation).
func (e Entry) EndsReservation() bool { return endsReservation(e.From, e.To, e.Action) }

// keepsReservation are the actions that leave a reservation as it was,
// or begin one.
var keepsReservation = map[Action]bool{ActionClaimed: true, ActionExtended: true, ActionDrafted: true,
	ActionAtRisk: true, ActionBreached: true, ActionFellBack: true}

func endsReservation(from, to State, a Action) bool {
	return from == StateReserved && (to != StateReserved || !keepsReservation[a])
}

// Counts are a queue's numbers of jobs per state, after a change.
type Counts struct {
	// Ready counts every ready job, Held included.
	Ready     int64 `json:"ready"`
	Held      int64 `json:"held"`
	Scheduled int64 `json:"scheduled"`
	Reserved  int64 `json:"reserved"`
	Dead      int64 `json:"dead"`
}

// Effects are what one script call did to one queue.
type Effects struct {
	Queue string
	// At is when, by the Redis clock (every transition of the call has it).
	At          time.Time
	Transitions []Transition
	// Counts are the queue's after the call.
	Counts Counts
	// Batches are the batches the call changed, as they are after it.
	Batches []*Batch
}

// Observer is told the effects of every script call that changed
// something, right after it. It must not block: it runs on the caller's
// path (a request, a cron run).
type Observer func(ctx context.Context, fx Effects)

// Observe adds fn to the observers of every change the Store makes, from
// its next change on.
func (s *Store) Observe(fn Observer) {
	s.observeMu.Lock()
	defer s.observeMu.Unlock()
	var os []Observer
	if old := s.observers.Load(); old != nil {
		os = slices.Clone(*old)
	}
	os = append(os, fn)
	s.observers.Store(&os)
}

// decodeEffects reads the effects part of a script's answer on queue:
// "" when nothing changed, else MessagePack values (answer in
// lua/lib.lua): now, the counts, the changed batches, the transitions.
func decodeEffects(queue string, raw any) (Effects, bool, error) {
	packed, ok := raw.(string)
	if !ok {
		return Effects{}, false, fmt.Errorf("%w: effects are %T, not a string", errReply, raw)
	}
	if packed == "" {
		return Effects{}, false, nil
	}
	r := &msgpackReader{b: packed}
	var err error
	// next reads the next value into dst, a *string, *int64 or *int,
	// unless an earlier one failed.
	next := func(dst any) {
		if err != nil {
			return
		}
		switch d := dst.(type) {
		case *string:
			err = r.text(d)
		case *int64:
			err = r.int64(d)
		case *int:
			err = r.small(d)
		}
	}
	var now int64
	var c Counts
	var batches int
	for _, dst := range []any{&now, &c.Ready, &c.Held, &c.Scheduled, &c.Reserved, &c.Dead, &batches} {
		next(dst)
	}
	fx := Effects{Queue: queue, At: msTime(now), Counts: c}
	for range batches {
		var id, record string
		next(&id)
		next(&record)
		if err != nil {
			break
		}
		b, err := decodeBatch(globalID(id, queue), record)
		if err != nil {
			return Effects{}, false, err
		}
		fx.Batches = append(fx.Batches, b)
	}
	for err == nil && r.i < len(r.b) {
		// In the order record packs them, left to right: the job's, then
		// the entry the transition added to its history.
		var id, batch string
		var deadline int64
		t := Transition{Queue: queue, At: fx.At}
		for _, dst := range []any{&id, &t.Holder, &deadline, &t.Title, &t.Priority, &batch} {
			next(dst)
		}
		var e Entry
		if err == nil {
			e, err = r.entry(0)
		}
		t.JobID, t.Action, t.From, t.To = globalID(id, queue), e.Action, e.From, e.To
		t.Actor, t.Attempt, t.Reason, t.Assignee = e.Actor, e.Attempt, e.Reason, e.Assignee
		t.Deadline, t.BatchID = optTime(deadline), globalID(batch, queue)
		fx.Transitions = append(fx.Transitions, t)
	}
	if err != nil {
		return Effects{}, false, fmt.Errorf("%w: effects: %w", errReply, err)
	}
	return fx, true, nil
}

// Entry is one entry of a job's history: a transition as the job keeps it.
// Its JSON form is the history entry of the HTTP API.
type Entry struct {
	At     time.Time `json:"at"`
	Action Action    `json:"action"`
	// Actor is the user who acted, or "system".
	Actor string `json:"actor"`
	// From is absent for the entry that made the job.
	From    State `json:"from,omitempty"`
	To      State `json:"to"`
	Attempt int   `json:"attempt"`
	// Deadline is the reservation's, for claimed and extended.
	Deadline *time.Time `json:"deadline,omitempty"`
	// Reason is the holder's, for failed; the supervisor's, for a cancel,
	// requeue or force release given one.
	Reason string `json:"reason,omitempty"`
	// Result is the job's result, for completed.
	Result json.RawMessage `json:"result,omitempty"`
	// Holder is whose reservation someone else ended (a supervisor, or the
	// system when it expired).
	Holder string `json:"holder,omitempty"`
	// Assignee is the person the job was assigned or transferred to.
	Assignee string `json:"assignee,omitempty"`
}

// How a job's history is stored; lua/lib.lua gets these as HISTORY_ENTRY,
// HISTORY_CAP and HISTORY_HEAD (luaConstants).
const (
	// historyValues is how many values each entry is stored as.
	historyValues = 9
	// historyCap is how many entries a job keeps at most.
	historyCap = 50
	// HistoryHead is how many of a job's first entries are always kept:
	// entries trimmed from a full history are those right after them.
	HistoryHead = 5
)

// luaConstants is Lua that defines, for lib.lua, the history's sizes and
// code tables, the drafts kept per job (draft.go), the tallies' days and
// buckets (tally.go), a queue's warn fraction unless set (queue.go), the
// review and seat lines' names (review.go), and how a job's metadata is packed
// (metaFields), from their definitions in Go.
func luaConstants() string {
	var b strings.Builder
	fmt.Fprintf(&b, "local HISTORY_ENTRY, HISTORY_CAP, HISTORY_HEAD = %d, %d, %d\n", historyValues, historyCap, HistoryHead)
	fmt.Fprintf(&b, "local OUTBOX_CAP = %d\n", OutboxCap)
	fmt.Fprintf(&b, "local DRAFTS_KEPT = %d\n", DraftsKept)
	fmt.Fprintf(&b, "local TALLY_DAYS, HANDLING_BASE_MS, HANDLING_PER_DOUBLING = %d, %d, %d\n", tallyDays, handlingBase.Milliseconds(), handlingPerDoubling)
	fmt.Fprintf(&b, "local TALLY_ON_TIME, TALLY_LATE = %d, %d\n", tallyOnTime, tallyLate)
	fmt.Fprintf(&b, "local DEFAULT_WARN_FRACTION = %g\n", DefaultWarnFraction)
	fmt.Fprintf(&b, "local REVIEW_LINE, SEAT_LINE = %q, %q\n", "!"+reviewLine, seatLine)
	table := func(name string, words []string) {
		fmt.Fprintf(&b, "local %s = {", name)
		for code, w := range words[1:] {
			fmt.Fprintf(&b, "%s = %d, ", w, code+1)
		}
		b.WriteString("}\n")
	}
	var states, actions []string
	for _, st := range stateByCode {
		states = append(states, string(st))
	}
	for _, a := range actionByCode {
		actions = append(actions, string(a))
	}
	table("STATE_CODE", states)
	table("ACTION_CODE", actions)
	// A job's metadata, by metaFields: how many fields follow, then the
	// fields. unpack_meta returns where the history after them starts
	// (cmsgpack's offset, -1 at the end) and the fields as a table: it
	// reads the count from the first byte (a record of format 2 has none:
	// decodeMeta), then the fields in one go; pack_meta packs the fields
	// of one.
	var vars, fields, later, values []string
	for i, f := range metaFields {
		v := fmt.Sprintf("v%d", i+1)
		vars = append(vars, v)
		if i < format2Fields {
			fields = append(fields, f.name+" = "+v)
		} else {
			later = append(later, fmt.Sprintf("    if %[2]s ~= nil then m.%[1]s = %[2]s end\n", f.name, v))
		}
		values = append(values, "m."+f.name)
	}
	all := strings.Join(vars, ", ")
	fmt.Fprintf(&b, "local META, META_FORMAT2 = %d, %d\n", len(metaFields), format2Fields)
	// The table is made with the fields of format 2, and those added since
	// only when set: most jobs have none of them, and a key set to nil
	// still costs a table its slot.
	fmt.Fprintf(&b, `local function unpack_meta(raw)
  local n, at = string.byte(raw, 1), 1
  if n > 0x7f then n, at = META_FORMAT2, 0 end
  -- Fields a record lacks are nil; those it has beyond META are dropped.
  local next_at, %[1]s = cmsgpack.unpack_limit(raw, n, at)
  local m = {%[2]s}
  if n > META_FORMAT2 then
%[3]s  end
  return next_at, m
end
`, all, strings.Join(fields, ", "), strings.Join(later, ""))
	// The fields added since format 2 are left out from the last one set
	// on: a job without them costs no byte more than the count.
	b.WriteString("local function pack_meta(m)\n")
	for n := len(metaFields); n > format2Fields; n-- {
		fmt.Fprintf(&b, "  if m.%s ~= nil then return cmsgpack.pack(%d, %s) end\n", metaFields[n-1].name, n, strings.Join(values[:n], ", "))
	}
	fmt.Fprintf(&b, "  return cmsgpack.pack(%d, %s)\nend\n", format2Fields, strings.Join(values[:format2Fields], ", "))
	return b.String()
}

// decodeHistory reads a job's history as the scripts store it after its
// metadata: entries of historyValues values, times relative to created.
func decodeHistory(raw string, created int64) ([]Entry, error) {
	r := &msgpackReader{b: raw}
	var out []Entry
	for r.i < len(r.b) {
		e, err := r.entry(created)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// entry reads one history entry of a job created at created (ms).
func (r *msgpackReader) entry(created int64) (Entry, error) {
	var v [historyValues]any
	for i := range v {
		if r.i >= len(r.b) {
			return Entry{}, errMsgpack
		}
		if r.b[r.i] == 0xc0 { // nil
			r.i++
		} else if t := r.b[r.i]; t&0xe0 == 0xa0 || t >= 0xd9 && t <= 0xdb {
			s, err := r.str()
			if err != nil {
				return Entry{}, err
			}
			v[i] = s
		} else {
			n, err := r.integer()
			if err != nil {
				return Entry{}, err
			}
			v[i] = n
		}
	}
	str := func(x any) string { s, _ := x.(string); return s }
	num := func(x any) int64 { n, _ := x.(int64); return n }
	code := func(x any, n int) int {
		c := int(num(x))
		if c < 0 || c >= n {
			return 0
		}
		return c
	}
	at := created + num(v[0])
	e := Entry{
		At: msTime(at), Action: actionByCode[code(v[1], len(actionByCode))], Actor: str(v[2]),
		From: stateByCode[code(v[3], len(stateByCode))], To: stateByCode[code(v[4], len(stateByCode))],
		Attempt: int(num(v[5])), Holder: str(v[7]), Reason: str(v[8]),
	}
	if e.Actor == "" {
		e.Actor = System
	}
	if e.Action == ActionAssigned || e.Action == ActionTransferred {
		// The reason names the person, then why (lua/assign.lua).
		e.Assignee, e.Reason, _ = strings.Cut(e.Reason, "\n")
	}
	if e.Action == ActionExtended {
		// An extension's entry keeps the idempotency key it was asked
		// with (lua/extend.lua) where others keep a reason: the
		// client's own, never shown.
		e.Reason = ""
	}
	if v[6] != nil {
		e.Deadline = optTime(at + num(v[6]))
	}
	return e, nil
}
