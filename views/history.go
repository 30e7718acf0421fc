package views

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"claimdesk/internal/notify"
	"claimdesk/internal/tasks"
)

// EndedBecause says, to the operator me, why their latest reservation of a
// job ended, from the entry that ended it (desk.Opened's Ended), on a page
// opened after it ended, as the work page's sentence: "sam took this job
// back: <reason>", "This reservation ended: your time ran out.", "This
// reservation ended: you skipped it." (whenever, wherever they did).
func EndedBecause(e tasks.Entry, me string) string {
	if e.Actor == me {
		return endedSentence(yourOwn(e.Action))
	}
	if s := takenBack(e.Action, e.Actor, e.Reason); s != "" {
		return s
	}
	return endedSentence(outcome(e.Action, e.Actor, me))
}

// yourOwn says what the holder did that ended their reservation.
func yourOwn(a tasks.Action) string {
	switch a {
	case tasks.ActionCompleted:
		return "you completed it"
	case tasks.ActionReleased:
		return "you gave it back"
	case tasks.ActionSkipped:
		return "you skipped it"
	case tasks.ActionFailed:
		return "you reported it as not doable"
	}
	return "you " + string(a) + " it"
}

// outcome says how a reservation of me's ended, while their page is open:
// by action of actor ("completed in another tab" when me acted). The work
// page's script says it as "This reservation ended: <outcome>." from
// outcomePhrases, as endedSentence would.
func outcome(a tasks.Action, actor, me string) string {
	if actor == me {
		switch a {
		case tasks.ActionCompleted:
			return "completed in another tab"
		case tasks.ActionReleased:
			return "given back in another tab"
		case tasks.ActionSkipped:
			return "skipped in another tab"
		case tasks.ActionFailed:
			return "reported as not doable in another tab"
		}
	}
	switch a {
	case tasks.ActionExpired:
		return "your time ran out"
	case tasks.ActionForceReleased:
		return "taken back by " + actor
	case tasks.ActionTransferred:
		return "transferred by " + actor
	case tasks.ActionCanceled:
		if actor == tasks.System {
			return "canceled with its batch"
		}
		return "canceled by " + actor
	}
	return string(a) + " by " + actor
}

// endedSentence is what a work page says when the viewer's reservation
// ended, given outcome's words ("" when unknown); outcomePhrases gives the
// page's script the same sentences.
func endedSentence(why string) string {
	if why == "" {
		return "This reservation ended."
	}
	return "This reservation ended: " + why + "."
}

// actorMark stands for the actor's name in outcomePhrases, and reasonMark
// for their reason.
const (
	actorMark  = "{actor}"
	reasonMark = "{reason}"
)

// endingActions are the actions that can end a reservation.
var endingActions = []tasks.Action{tasks.ActionCompleted, tasks.ActionReleased, tasks.ActionSkipped,
	tasks.ActionFailed, tasks.ActionExpired, tasks.ActionForceReleased, tasks.ActionTransferred, tasks.ActionCanceled}

// outcomePhrases is endedSentence of outcome's words for the viewer me, as
// JSON, for the work page's script to say why a reservation ended when a
// notice tells it (so the words live in one place): per action, "own" when
// me acted, "system" when nobody did, "other" when someone else did, with
// actorMark for their name, and "other_why" for someone else who said why
// (takenBack), with reasonMark for the reason.
func outcomePhrases(me string) string {
	p := map[string]map[tasks.Action]string{"own": {}, "system": {}, "other": {}, "other_why": {}}
	for _, a := range endingActions {
		p["own"][a] = endedSentence(outcome(a, me, me))
		p["system"][a] = endedSentence(outcome(a, tasks.System, me))
		p["other"][a] = endedSentence(outcome(a, actorMark, me))
		if s := takenBack(a, actorMark, ""); s != "" {
			p["other"][a] = s
			p["other_why"][a] = takenBack(a, actorMark, reasonMark)
		}
	}
	b, _ := json.Marshal(p) // maps of strings always encode
	return string(b)
}

// RecentOutcome says how an item of the operator me's recent work ended, in
// the words of their "My recent work" list: "Completed", "Gave it back",
// "Taken back by sam".
func RecentOutcome(w notify.Work, me string) string {
	switch w.Action {
	case tasks.ActionCompleted:
		return "Completed"
	case tasks.ActionReleased:
		return "Gave it back"
	case tasks.ActionSkipped:
		return "Skipped"
	case tasks.ActionFailed:
		if w.State == tasks.StateDead {
			return "Can't be done (no attempts left)"
		}
		return "Can't be done"
	case tasks.ActionExpired:
		return "Time ran out"
	case tasks.ActionForceReleased:
		return "Taken back by " + w.Actor
	case tasks.ActionTransferred:
		return "Transferred by " + w.Actor
	case tasks.ActionCanceled:
		if w.Actor == tasks.System {
			return "Canceled with its batch"
		}
		return "Canceled by " + w.Actor
	}
	return capitalize(string(w.Action)) + " by " + w.Actor
}

// RecentBrief is the outcome of an item of "My recent work" in short:
// what a completion answered (its notes, or its first fields), or why the
// reservation ended when a reason was given; "" when there is nothing to
// add to RecentOutcome. result is the job's result, if still kept.
func RecentBrief(w notify.Work, result json.RawMessage) string {
	if w.Action != tasks.ActionCompleted {
		return short(w.Reason, briefRunes)
	}
	if len(result) == 0 {
		return ""
	}
	notes, rest := resultNotes(result)
	if notes != "" {
		return short(notes, briefRunes)
	}
	var parts []string
	for _, f := range rest {
		if f.Kind != "object" && f.Kind != "array" && len(parts) < 3 {
			parts = append(parts, f.Label()+": "+f.Value)
		}
	}
	return short(strings.Join(parts, " · "), briefRunes)
}

// briefRunes is how long a brief may be before it is cut.
const briefRunes = 80

// short cuts text to one line of n characters at most, marking the cut.
func short(text string, n int) string {
	text = strings.Join(strings.Fields(text), " ")
	if r := []rune(text); len(r) > n {
		return strings.TrimSpace(string(r[:n-1])) + "…"
	}
	return text
}

// recentTone sorts an outcome of RecentOutcome into good (done), neutral
// (handed on) or bad (lost), for its colour.
func recentTone(a tasks.Action) string {
	switch a {
	case tasks.ActionCompleted:
		return "good"
	case tasks.ActionReleased, tasks.ActionSkipped:
		return "neutral"
	}
	return "bad"
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// attemptsLabel says where a job is in its attempts, never past the last:
// "attempt 2 of 3" while one is under way or when it succeeded, else "1 of
// 3 attempts used", and "all 3 attempts used" once they are.
func attemptsLabel(j *tasks.Job) string {
	n, m := j.Attempts, j.MaxAttempts
	switch {
	case j.State == tasks.StateReserved || j.State == tasks.StateCompleted:
		return fmt.Sprintf("attempt %d of %d", min(n+1, m), m)
	case n >= m && m == 1:
		return "its only attempt used"
	case n >= m:
		return fmt.Sprintf("all %d attempts used", m)
	}
	return fmt.Sprintf("%d of %d attempts used", n, m)
}

// entryWords says what a history entry records, without its time and
// deadline: "claimed by ann (attempt 1)", "failed by ann: <reason>",
// "taken back by sam from ann: <reason>", "expired (held by ann)".
func entryWords(e tasks.Entry) string {
	by := " by " + e.Actor
	var s string
	switch e.Action {
	case tasks.ActionEnqueued:
		s = "enqueued" + by
		if e.To == tasks.StateScheduled {
			s += ", to run later"
		}
	case tasks.ActionPromoted:
		s = "due: ready to claim"
	case tasks.ActionAdmitted:
		s = "let into line: a slot of its batch came free"
	case tasks.ActionClaimed:
		s = fmt.Sprintf("claimed%s (attempt %d)", by, e.Attempt)
	case tasks.ActionExtended:
		s = "more time for " + e.Actor
	case tasks.ActionReleased:
		s = "given back" + by
	case tasks.ActionSkipped:
		s = "skipped" + by
	case tasks.ActionFailed:
		s = "failed" + by
		if e.Reason != "" {
			s += ": " + e.Reason
		}
		if e.Holder != "" && e.Holder != e.Actor {
			// The end of another's reservation of a job several held:
			// the failure left no attempts.
			s += " (held by " + e.Holder + ")"
		}
	case tasks.ActionExpired:
		s = "expired"
		if e.Holder != "" {
			s += " (held by " + e.Holder + ")"
		}
	case tasks.ActionRequeued:
		s = "requeued" + by
	case tasks.ActionForceReleased:
		s = "taken back" + by
		if e.Holder != "" {
			s += " from " + e.Holder
		}
	case tasks.ActionCanceled:
		if e.Actor == tasks.System {
			s = "canceled with its batch"
		} else {
			s = "canceled" + by
		}
		if e.Holder != "" {
			s += " (held by " + e.Holder + ")"
		}
	case tasks.ActionCompleted:
		s = "completed" + by
	case tasks.ActionDrafted:
		s = e.Actor + " started a draft"
	case tasks.ActionAtRisk:
		s = "at risk of missing its due time"
	case tasks.ActionBreached:
		s = "missed its due time"
	case tasks.ActionMoved:
		// Its reason is the queue it came from.
		return "moved here from " + e.Reason + ", overdue"
	case tasks.ActionAssigned:
		s = "assigned to " + e.Assignee + by
	case tasks.ActionTransferred:
		s = "transferred to " + e.Assignee + by
		if e.Holder != "" {
			s += " from " + e.Holder
		}
	case tasks.ActionFellBack:
		s = "open to anyone with its skills: its preferred people's time ran out"
	case tasks.ActionAnswered:
		s = "answered" + by + "; waits for the next person's answer"
		if e.To == tasks.StateReserved {
			s = "answered" + by + "; others are answering it too"
		}
	case tasks.ActionSubmitted:
		s = "done" + by + ", sent to review (" + reviewReason(e.Reason) + ")"
		return s
	case tasks.ActionApproved:
		s = "approved" + by + ": completed"
	case tasks.ActionSentBack:
		s = "sent back" + by
	default:
		s = string(e.Action) + by
	}
	if e.Reason != "" && e.Action != tasks.ActionFailed {
		// A supervisor's, for a cancel, requeue or force release.
		s += ": " + e.Reason
	}
	switch {
	case e.To == tasks.StateDead:
		s += " · no attempts left: dead"
	case e.To == tasks.StateCanceled && e.Action != tasks.ActionCanceled:
		// Given back, or out of time, while its batch is canceled.
		s += " · its batch is canceled: canceled"
	}
	return s
}

// reviewCounts says how many completions wait for review, and how many of
// them are answers that disagree.
func reviewCounts(jobs []*tasks.Job) string {
	split := 0
	for _, j := range jobs {
		if j.Review.Reason == tasks.ReviewDisagreement {
			split++
		}
	}
	out := Plural(len(jobs), "completion")
	if split > 0 {
		out += ", " + Plural(split, "disagreement")
	}
	return out
}

// disagreementsFirst orders completions waiting for review: the answers
// that disagree first, each kind as it came.
func disagreementsFirst(jobs []*tasks.Job) []*tasks.Job {
	out := slices.Clone(jobs)
	slices.SortStableFunc(out, func(a, b *tasks.Job) int {
		x, y := a.Review.Reason == tasks.ReviewDisagreement, b.Review.Reason == tasks.ReviewDisagreement
		switch {
		case x && !y:
			return -1
		case y && !x:
			return 1
		}
		return 0
	})
	return out
}

// reviewReason names why a completion was sent to review, in words.
func reviewReason(why string) string {
	switch why {
	case tasks.ReviewTraining:
		return "in training"
	case tasks.ReviewDisagreement:
		return "the answers disagree"
	}
	return "a sample"
}

// resultNotes splits a job's result into its notes (the complete form's
// "notes", when a string) and its other fields.
func resultNotes(raw json.RawMessage) (notes string, rest []Field) {
	for _, f := range ParsePayload(raw) {
		if f.Key == "notes" && f.Kind == "string" && notes == "" {
			notes = f.Value
			continue
		}
		rest = append(rest, f)
	}
	return notes, rest
}

// trimmedEntries says where a long history lost entries, and why.
func trimmedEntries(n int) string {
	what := fmt.Sprintf("%d entries", n)
	if n == 1 {
		what = "1 entry"
	}
	return fmt.Sprintf("%s in between not kept: a job keeps its first %d entries and its latest.", what, tasks.HistoryHead)
}

// finishedAt is when a finished job was completed, or else ended.
func finishedAt(j *tasks.Job) *time.Time {
	if j.CompletedAt != nil {
		return j.CompletedAt
	}
	return j.FinishedAt
}

// warnWithin is when, before its deadline, a work page warns that time is
// running out: in the last fifth of the lease, at least 5 seconds and at
// most a minute before.
func warnWithin(j *tasks.Job) time.Duration {
	return min(max(time.Duration(j.LeaseSeconds)*time.Second/5, 5*time.Second), time.Minute)
}

// warnMs is warnWithin in ms, for the page's script.
func warnMs(j *tasks.Job) string { return strconv.FormatInt(warnWithin(j).Milliseconds(), 10) }

// warnWords is what the work page warns with, warnWithin before the end.
func warnWords(j *tasks.Job) string {
	left := "a minute"
	if w := warnWithin(j); w < time.Minute {
		left = fmt.Sprintf("%d seconds", int(w.Seconds()))
	}
	return "Less than " + left + " left. Ask for more time or give the job back."
}

// failWords says what "Can't be done" does to the held job: it spends the
// attempt under way, and the job goes back in line or, on its last
// attempt, to the dead jobs.
func failWords(j *tasks.Job) string {
	if j.Attempts+1 >= j.MaxAttempts {
		if j.MaxAttempts == 1 {
			return "This spends the job's only attempt: it goes to the dead jobs, for a supervisor to look at."
		}
		return fmt.Sprintf("This spends the last of its %d attempts: the job goes to the dead jobs, for a supervisor to look at.", j.MaxAttempts)
	}
	return fmt.Sprintf("This spends attempt %d of %d: the job goes back to its place in line, for someone else to try.", j.Attempts+1, j.MaxAttempts)
}

// FailedWords says where a job went after its holder said it can't be
// done (j is the job as the failure left it): back in line for someone
// else, with the attempts used so far, or to the dead jobs.
func FailedWords(j *tasks.Job) string {
	title := "“" + j.Title + "”"
	switch j.State {
	case tasks.StateDead:
		return "Moved " + title + " to the dead jobs, for a supervisor to look at: " + attemptsLabel(j) + "."
	case tasks.StateCanceled:
		return title + " was canceled with its batch."
	}
	return title + " is back in line for someone else: " + attemptsLabel(j) + "."
}

// Attempt is an earlier attempt at the job its holder works: whose it was,
// when it ended and why.
type Attempt struct {
	Who string
	At  time.Time
	Why string
}

// EarlierAttempts are the reservations of the job that ended before the
// holder's own, oldest first, from its history h (oldest first): what the
// holder reads before they start.
func EarlierAttempts(h []tasks.Entry) []Attempt {
	var out []Attempt
	for _, e := range h {
		if e.From != tasks.StateReserved || e.To == tasks.StateReserved {
			continue
		}
		who := e.Actor
		if e.Holder != "" {
			who = e.Holder
		}
		out = append(out, Attempt{Who: who, At: e.At, Why: attemptWhy(e)})
	}
	return out
}

// attemptWhy says how an earlier attempt ended, in neutral words.
func attemptWhy(e tasks.Entry) string {
	var s string
	switch e.Action {
	case tasks.ActionFailed:
		s = "can't be done"
		if e.Reason != "" {
			s += ": " + e.Reason
		}
		return s
	case tasks.ActionExpired:
		return "ran out of time"
	case tasks.ActionReleased:
		return "given back"
	case tasks.ActionSkipped:
		return "skipped"
	case tasks.ActionForceReleased:
		s = "taken back by " + e.Actor
	case tasks.ActionTransferred:
		s = "transferred to " + e.Assignee + " by " + e.Actor
	case tasks.ActionAnswered:
		return "answered"
	case tasks.ActionSubmitted:
		return "done, sent to review"
	case tasks.ActionApproved:
		return "approved by " + e.Actor
	case tasks.ActionSentBack:
		s = "sent back by " + e.Actor
	default:
		s = string(e.Action) + " by " + e.Actor
	}
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s
}

// sentBack is the note of the review that sent the job back, if the job
// was sent back and not done again since: for whoever does it again.
func sentBack(w Work) string {
	for _, e := range w.History { // newest first
		switch e.Action {
		case tasks.ActionSubmitted, tasks.ActionApproved, tasks.ActionAnswered:
			return ""
		case tasks.ActionSentBack:
			return "Sent back by " + e.Actor + ": " + e.Reason
		}
	}
	return ""
}

// reviewWhy says why a completion waits for review, and whose it is.
func reviewWhy(r *tasks.Review) string {
	switch r.Reason {
	case tasks.ReviewTraining:
		return r.Author + " is in training: every completion of theirs is reviewed."
	case tasks.ReviewDisagreement:
		return "The answers disagree more than this queue allows: a reviewer decides."
	}
	return r.Author + "'s completion was picked for review, as a share of this queue's are."
}

// approveWords says what the job completes with when approved.
func approveWords(j *tasks.Job) string {
	if len(j.Answers) > 0 {
		return "The job completes with what most answered, as shown above."
	}
	return "The job completes with " + j.Review.Author + "'s result, as shown above."
}

// sendBackWhere says where a job the reviewer sends back goes.
func sendBackWhere(j *tasks.Job) string {
	if len(j.Answers) > 0 {
		return "it goes to one more person, whose answer joins the others"
	}
	return "it goes back to " + j.Review.Author + " first, with your note"
}
