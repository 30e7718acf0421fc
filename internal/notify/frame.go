package notify

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/gorilla/websocket"
)

// Frames is the type of a websocket message that carries several notices,
// in order: {"type":"notices","notices":[...]}. A message of any other
// type is one notice (or the snapshot).
const Frames = "notices"

// Frame is one websocket message of the notices that waited for a group
// of connections whose viewers see alike (or for one connection): a
// single notice as itself, several as a Frames message. A queue's counts
// go only as they are last: earlier ones are out of date. It is encoded
// once, and framed for the websocket once, for every connection it goes
// to.
type Frame struct {
	notices []*Notice
	data    []byte
	err     error

	once sync.Once
	msg  *websocket.PreparedMessage
}

// newFrame encodes the notices as one message.
func newFrame(ns []*Notice) *Frame {
	f := &Frame{notices: latestCounts(ns)}
	f.data, f.err = encodeFrame(f.notices)
	return f
}

// resyncFrame is the message that tells a page to fetch afresh, for a
// connection that fell too far behind (maxFrames).
var resyncFrame = newFrame([]*Notice{{Type: Resync}})

// Notices are the notices the frame carries, in order. They are shared:
// read them, never change them.
func (f *Frame) Notices() []*Notice { return f.notices }

// Message is the frame as a websocket message, prepared once for every
// connection that writes it.
func (f *Frame) Message() (*websocket.PreparedMessage, error) {
	f.once.Do(func() {
		if f.err == nil {
			f.msg, f.err = websocket.NewPreparedMessage(websocket.TextMessage, f.data)
		}
	})
	return f.msg, f.err
}

func encodeFrame(ns []*Notice) ([]byte, error) {
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
