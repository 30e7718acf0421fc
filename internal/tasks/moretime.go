package tasks

import (
	"slices"
	"time"
)

// MoreTime is what the holder's More time can do for a reservation, for
// the page that offers it: the page is told what to offer, and does not
// work it out. The engine's own rule is in lua/extend.lua: asked for an
// amount added to the time left (FromDeadline), the deadline moves that
// much later, never past the reservation's start plus the queue's max
// hold, at most max extensions times. TestMoreTimeIsWhatExtendDoes holds
// this prediction to the script.
type MoreTime struct {
	// Left is how many more times the holder may ask for more time.
	Left int
	// Latest is the latest the deadline can reach: the reservation's start
	// plus the queue's max hold (zero for a job not reserved).
	Latest time.Time
	// Choices are the amounts a press may add to the deadline, shortest
	// first: MoreTimeChoices, each cut to what is left before Latest, in
	// whole seconds. None when no press can add any more.
	Choices []time.Duration
}

// MoreTimeChoices are the amounts More time offers to add, at most: the
// holder who knows early that the job needs longer asks for as much as it
// needs.
var MoreTimeChoices = []time.Duration{5 * time.Minute, 15 * time.Minute, 30 * time.Minute}

// MoreTime says what More time can do for the job's reservation under q,
// its queue's settings.
func (j *Job) MoreTime(q Queue) MoreTime {
	m := MoreTime{Left: max(0, q.MaxExtensions-j.Extensions)}
	if j.Deadline == nil || j.ReservedAt == nil {
		return m
	}
	m.Latest = j.ReservedAt.Add(time.Duration(q.MaxHoldSeconds) * time.Second)
	room := m.Latest.Sub(*j.Deadline).Truncate(time.Second)
	if m.Left == 0 || room < time.Second {
		return m
	}
	for _, c := range MoreTimeChoices {
		if c = min(c, room); !slices.Contains(m.Choices, c) {
			m.Choices = append(m.Choices, c)
		}
	}
	return m
}
