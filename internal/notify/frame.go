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

// Frame is one websocket message of the notices that waited for a
// browser: a single notice as itself, several as a Frames message. A
// queue's counts go only as they are last: earlier ones are out of date.
// Each notice is encoded once (by the hub) for every socket it goes to.
func Frame(ns []*Notice) ([]byte, error) {
	ns = latestCounts(ns)
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

// latestCounts leaves out each queue.changed followed by a later one of the
// same queue; the rest keep their order.
func latestCounts(ns []*Notice) []*Notice {
	var out []*Notice
	for i, n := range ns {
		if n.Type == QueueChanged && slices.ContainsFunc(ns[i+1:], func(m *Notice) bool {
			return m.Type == QueueChanged && m.Queue == n.Queue
		}) {
			if out == nil {
				out = slices.Clone(ns[:i])
			}
			continue
		}
		if out != nil {
			out = append(out, n)
		}
	}
	if out == nil {
		return ns
	}
	return out
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
