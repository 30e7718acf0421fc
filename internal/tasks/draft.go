package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// DraftsKept is how many drafts of reservations taken from their holders a
// job keeps: the latest.
const DraftsKept = 5

// Draft is what a holder had typed on a job, unfinished: the live draft of
// the job's holder, saved as they type (SaveDraft), or one kept when a
// reservation was taken from its holder (force released, canceled, run
// out), for the next holder and the supervisors. A completion, or the
// holder's own give-back, skip or failure, drops the live draft.
type Draft struct {
	// By is who typed it.
	By string `json:"by"`
	// SavedAt is when it was last saved.
	SavedAt time.Time `json:"saved_at"`
	// Values are the draft as its holder's page or client saved it: a
	// JSON object, whatever its fields.
	Values json.RawMessage `json:"values"`
	// Ended says how the reservation it was typed in ended; nil for the
	// live draft.
	Ended *DraftEnd `json:"ended,omitempty"`
}

// DraftEnd is how the reservation of a kept draft ended.
type DraftEnd struct {
	// Action is force_released, canceled or expired.
	Action Action `json:"action"`
	// By is who took the job back: a supervisor, or System for a
	// reservation that ran out.
	By string    `json:"by"`
	At time.Time `json:"at"`
}

// SaveDraft saves values, a JSON object of at most MaxPayloadBytes, as the
// live draft of the holder's reservation of the job, replacing the one
// saved before, and returns when. Only the holder saves, and only while
// the reservation lasts: a token that is not the live reservation's gives
// ErrReservationLost (or ErrForbidden, someone else's). The reservation's
// first save adds a "drafted" entry to the job's history (no transition:
// the job's state does not change).
func (s *Store) SaveDraft(ctx context.Context, id string, h Hold, values json.RawMessage) (time.Time, error) {
	v, err := jsonObject("values", values)
	if err != nil {
		return time.Time{}, err
	}
	if v == "" {
		v = "{}"
	}
	queue, ok := queueOf(id)
	if !ok {
		return time.Time{}, ErrNotFound
	}
	r, err := s.holderCall(ctx, draftScript, queue, id, h, v)
	if err != nil {
		return time.Time{}, err
	}
	at := msTime(r.int("saved at"))
	return at, r.done()
}

// Drafts returns the job's drafts: its holder's live one (nil when the job
// is not reserved, or its reservation saved none), and those kept from
// reservations taken from their holders, oldest first. A job whose
// history shows no draft saved costs no read.
func (s *Store) Drafts(ctx context.Context, j *Job) (*Draft, []Draft, error) {
	h, trimmed, err := j.History()
	if err != nil {
		return nil, nil, err
	}
	// (Held by several at once, a job's history holds each reservation's
	// entries: the holder's are theirs.)
	live, ever := false, false
	for _, e := range h {
		switch {
		case e.Action == ActionDrafted:
			ever = true
			live = live || e.Actor == j.ReservedBy
		case e.Action == ActionClaimed && e.Actor == j.ReservedBy:
			live = false
		}
	}
	if !ever && trimmed == 0 {
		return nil, nil, nil
	}
	id := localID(j.ID)
	field := id
	if j.Overlap > 0 {
		field += "\n@" + j.ReservedBy // one live draft per holder (lua/lib.lua, draft_field)
	}
	raw, err := s.rdb.HMGet(ctx, keysFor(j.Queue).Drafts(), field, id+"\nkept").Result()
	if err != nil {
		return nil, nil, redisErr(err)
	}
	var own *Draft
	if s, ok := raw[0].(string); ok && live && j.State == StateReserved {
		own = &Draft{}
		if err := readDraft(&msgpackReader{b: s}, own); err != nil {
			return nil, nil, fmt.Errorf("decode draft of %s: %w", j.ID, err)
		}
	}
	var kept []Draft
	if s, ok := raw[1].(string); ok {
		r := &msgpackReader{b: s}
		for r.i < len(r.b) {
			d := Draft{Ended: &DraftEnd{}}
			var action string
			var at int64
			if err := readDraft(r, &d); err != nil {
				return nil, nil, fmt.Errorf("decode kept drafts of %s: %w", j.ID, err)
			}
			if err := r.text(&action); err != nil {
				return nil, nil, fmt.Errorf("decode kept drafts of %s: %w", j.ID, err)
			}
			if err := r.text(&d.Ended.By); err != nil {
				return nil, nil, fmt.Errorf("decode kept drafts of %s: %w", j.ID, err)
			}
			if err := r.int64(&at); err != nil {
				return nil, nil, fmt.Errorf("decode kept drafts of %s: %w", j.ID, err)
			}
			d.Ended.Action, d.Ended.At = Action(action), msTime(at)
			kept = append(kept, d)
		}
	}
	return own, kept, nil
}

// readDraft reads a draft's first three values (lib.lua, Drafts): who,
// when, what.
func readDraft(r *msgpackReader, d *Draft) error {
	var at int64
	var values string
	if err := r.text(&d.By); err != nil {
		return err
	}
	if err := r.int64(&at); err != nil {
		return err
	}
	if err := r.text(&values); err != nil {
		return err
	}
	d.SavedAt, d.Values = msTime(at), json.RawMessage(values)
	return nil
}
