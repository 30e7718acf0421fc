package notify

import (
	"context"
	"encoding/json"
	"time"

	"claimdesk/internal/keys"
	"claimdesk/internal/tasks"

	"github.com/redis/go-redis/v9"
)

// Work is one reservation of a person's that ended, and how: what the
// operator's "My recent work" lists.
type Work struct {
	JobID string `json:"job_id"`
	Queue string `json:"queue"`
	Title string `json:"title"`
	// Action ended the reservation (completed, released, skipped, failed,
	// expired, force_released, canceled), by Actor: the holder, a
	// supervisor, or "system".
	Action tasks.Action `json:"action"`
	Actor  string       `json:"actor"`
	// State is where the job went.
	State tasks.State `json:"state"`
	// Reason is why, when one was given: the holder's, for a failure; the
	// supervisor's, for a take-back.
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at"`
	// holder is whose work it was.
	holder string
}

// Recent work is kept per person, newest first, for a while.
const (
	recentKeep = 20
	recentFor  = 30 * 24 * time.Hour
)

// workOf returns the recent work a transition makes, if it ended someone's
// reservation.
func workOf(t tasks.Transition) (Work, bool) {
	if !t.EndsReservation() || t.Holder == "" {
		return Work{}, false
	}
	return Work{JobID: t.JobID, Queue: t.Queue, Title: t.Title, Action: t.Action, Actor: t.Actor,
		State: t.To, Reason: t.Reason, At: t.At, holder: t.Holder}, true
}

// RecordWork writes what one change did that is kept of people, in one
// round trip: the reservations it ended, in their holders' recent work,
// and when each person who made it last acted (keys.LastAction, behind
// the Team page's working and idle). It is written on the change's path
// (the desk has the Store call it), not with the notices, which may be
// dropped.
func RecordWork(ctx context.Context, rdb redis.UniversalClient, fx tasks.Effects) error {
	acted := map[string]any{}
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, t := range fx.Transitions {
			if t.Actor != tasks.System {
				acted[t.Actor] = fx.At.UnixMilli()
			}
			w, ok := workOf(t)
			if !ok {
				continue
			}
			raw, _ := json.Marshal(w)
			key := keys.Recent(w.holder)
			p.LPush(ctx, key, raw)
			p.LTrim(ctx, key, 0, recentKeep-1)
			p.Expire(ctx, key, recentFor)
		}
		if len(acted) > 0 {
			p.HSet(ctx, keys.LastAction, acted)
		}
		return nil
	})
	return err
}

// RecentWork returns the person's latest ended reservations, newest first.
func RecentWork(ctx context.Context, rdb redis.UniversalClient, user string) ([]Work, error) {
	raws, err := rdb.LRange(ctx, keys.Recent(user), 0, recentKeep-1).Result()
	if err != nil {
		return nil, err
	}
	out := make([]Work, 0, len(raws))
	for _, raw := range raws {
		var w Work
		if json.Unmarshal([]byte(raw), &w) == nil {
			out = append(out, w)
		}
	}
	return out, nil
}
