package tasks

import "time"

// MoreTime is what the holder's More time would do for a reservation, for
// the page that offers it: the page is told when to offer it, and does not
// work it out. The engine's own rule is in lua/extend.lua: the deadline
// becomes now plus the lease, never past the reservation's start plus the
// queue's max hold, at most max extensions times. A press is offered once
// it adds enough to be worth a press (MinMoreTime).
// TestMoreTimeIsWhatExtendDoes holds this prediction to the script.
type MoreTime struct {
	// Left is how many more times the holder may ask for more time.
	Left int
	// From is the moment from which a press adds at least MinMoreTime;
	// zero when no press can any more (none left, or the max hold is
	// reached).
	From time.Time
	// UpTo is the most a press adds: pressed just before the deadline.
	UpTo time.Duration
}

// MinMoreTime is the least More time must add to be offered: a tenth of
// the lease, 5 seconds at least (a press right after a claim would add
// next to nothing).
func MinMoreTime(lease time.Duration) time.Duration { return max(lease/10, 5*time.Second) }

// MoreTime says what More time would do for the job's reservation under
// q, its queue's settings.
func (j *Job) MoreTime(q Queue) MoreTime {
	m := MoreTime{Left: max(0, q.MaxExtensions-j.Extensions)}
	if m.Left == 0 || j.Deadline == nil || j.ReservedAt == nil {
		return MoreTime{Left: m.Left}
	}
	lease := time.Duration(j.LeaseSeconds) * time.Second
	longest := j.ReservedAt.Add(time.Duration(q.MaxHoldSeconds) * time.Second)
	least := MinMoreTime(lease)
	m.UpTo = min(lease, longest.Sub(*j.Deadline))
	m.From = j.Deadline.Add(least - lease)
	// Only a From before the deadline can be pressed: a lease of 5 seconds
	// adds its least only at the deadline, when the reservation is over.
	if m.UpTo < least || !m.From.Before(*j.Deadline) {
		return MoreTime{Left: m.Left}
	}
	return m
}

// Offered reports whether More time is worth a press at now.
func (m MoreTime) Offered(now time.Time) bool {
	return !m.From.IsZero() && !now.Before(m.From)
}
