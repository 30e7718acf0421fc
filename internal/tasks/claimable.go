package tasks

import "encoding/json"

// claimable is how many of a queue's jobs a claim may take now: the ready
// ones, less those held back until their batch has a free slot. Pages, the
// metrics, the live notices and the bench read it from here.
func claimable(ready, held int64) int64 { return ready - held }

// Claimable is how many of the queue's jobs a claim may take now: Ready
// less Held.
func (c Counts) Claimable() int64 { return claimable(c.Ready, c.Held) }

// Claimable is how many of the queue's jobs a claim may take now: Ready
// less Held.
func (s Stats) Claimable() int64 { return claimable(s.Ready, s.Held) }

// MarshalJSON writes the stats with their claimable count (a live page's
// snapshot shows it as it is: QueueCounts in api/openapi.yaml).
func (s Stats) MarshalJSON() ([]byte, error) {
	type plain Stats
	return json.Marshal(struct {
		plain
		Claimable int64 `json:"claimable"`
	}{plain(s), s.Claimable()})
}
