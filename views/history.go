package views

import (
	"claimdesk/internal/notify"
	"claimdesk/internal/tasks"
)

// EndedBecause says, to the operator me, why their latest reservation of a
// job ended, from the job's history: "canceled by sam", "taken back by
// sam", "your time ran out", "completed in another tab". "" if the history
// shows no reservation of theirs that ended.
func EndedBecause(h []tasks.Entry, me string) string {
	for i := len(h) - 1; i >= 0; i-- {
		e := h[i]
		if e.From != tasks.StateReserved || e.To == tasks.StateReserved {
			continue
		}
		if e.Holder == me || e.Holder == "" && e.Actor == me {
			return outcome(e.Action, e.Actor, me)
		}
	}
	return ""
}

// WorkOutcome says how an item of an operator's recent work ended, to them.
func WorkOutcome(w notify.Work, me string) string { return outcome(w.Action, w.Actor, me) }

// outcome says how a reservation of me's ended: by action of actor.
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
		case tasks.ActionCanceled:
			return "canceled: its batch was canceled"
		}
	}
	switch a {
	case tasks.ActionExpired:
		return "your time ran out"
	case tasks.ActionForceReleased:
		return "taken back by " + actor
	case tasks.ActionCanceled:
		if actor == tasks.System {
			return "canceled: its batch was canceled"
		}
		return "canceled by " + actor
	}
	return string(a) + " by " + actor
}
