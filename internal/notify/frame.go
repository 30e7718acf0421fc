package notify

import (
	"encoding/json"
	"fmt"
	"slices"
)

// Frames is the type of a websocket message that carries several notices,
// in order: {"type":"notices","notices":[...]}. A message of any other
// type is one notice (or the snapshot).
const Frames = "notices"

// Coalesce adds n to the notices waiting for the next message to a
// browser: a queue's counts replace the counts of the same queue still
// waiting, which are out of date.
func Coalesce(pending []*Notice, n *Notice) []*Notice {
	if n.Type == QueueChanged {
		pending = slices.DeleteFunc(pending, func(p *Notice) bool {
			return p.Type == QueueChanged && p.Queue == n.Queue
		})
	}
	return append(pending, n)
}

// Frame is one websocket message of the notices: a single notice as
// itself, several as a Frames message. Each notice is encoded once (by the
// hub) for every socket it goes to.
func Frame(ns []*Notice) ([]byte, error) {
	if len(ns) == 1 {
		return ns[0].Encoded()
	}
	b := []byte(`{"type":"` + Frames + `","notices":[`)
	for i, n := range ns {
		enc, err := n.Encoded()
		if err != nil {
			return nil, err
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, enc...)
	}
	return append(b, "]}"...), nil
}

// Unframe reads the notices of one websocket message (Frame).
func Unframe(raw []byte) ([]Notice, error) {
	var n struct {
		Notice
		Notices []Notice `json:"notices"`
	}
	if err := json.Unmarshal(raw, &n); err != nil {
		return nil, fmt.Errorf("notice: %w", err)
	}
	if n.Type == Frames {
		return n.Notices, nil
	}
	return []Notice{n.Notice}, nil
}
