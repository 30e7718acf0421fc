package notify

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"sync"
	"time"
)

// Why a client was dropped: Client.Err.
var (
	// ErrTooSlow says the client let maxPending notices pile up.
	ErrTooSlow = errors.New("notify: client too slow")
	// ErrClosed says the hub was closed: the server is shutting down.
	ErrClosed = errors.New("notify: hub closed")
	// ErrLeft says the client left.
	ErrLeft = errors.New("notify: client left")
)

// Hub fans notices out to this instance's browser connections, and wakes
// the requests waiting for a job to finish.
type Hub struct {
	mu      sync.Mutex
	clients map[*Client]struct{}
	waiters map[string][]chan struct{}
	// members counts the clients that joined and have not left yet, dropped
	// or not: Drain waits for them. gone is closed when it falls to zero.
	members int
	gone    chan struct{}
	// closed is set by Close: whoever joins is dropped at once.
	closed bool
	// taps hear every notice delivered (Tap).
	taps []func(*Notice)
	// timer fires at armed, when the first client's frame is due (pace.go);
	// armed is zero while nothing is due.
	timer *time.Timer
	armed time.Time
}

// NewHub returns an empty hub.
func NewHub() *Hub {
	return &Hub{clients: map[*Client]struct{}{}, waiters: map[string][]chan struct{}{}}
}

// Client is one browser connection's share of the hub.
type Client struct {
	hub    *Hub
	viewer Viewer // guarded by the hub's mu
	// pace holds the notices for the next frame: pointers, since a notice
	// is shared by every client that sees it. Guarded by the hub's mu.
	pace pacer
	// ready holds a token once the next frame is due; signaled says it was
	// given since the last Take. Guarded by the hub's mu.
	ready    chan struct{}
	signaled bool
	// stale holds a token while the client's user may have changed.
	stale chan struct{}
	// Dropped is closed when the hub gave up on the client (too slow, or
	// closed) or the client left; err says which.
	dropped chan struct{}
	once    sync.Once
	err     error
	left    bool // guarded by the hub's mu
}

// Ready receives when the client's next frame is due: Take its notices.
func (c *Client) Ready() <-chan struct{} { return c.ready }

// Take returns the notices that waited for the client, in order, and
// forgets them; the next frame is paced from now. They are shared with
// other clients: read them, never change them.
func (c *Client) Take() []*Notice {
	h := c.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	c.signaled = false
	if len(c.pace.pending) == 0 {
		return nil
	}
	return c.pace.take(time.Now())
}

// Dropped is closed when the client must go: it was too slow, the hub was
// closed, or it left.
func (c *Client) Dropped() <-chan struct{} { return c.dropped }

// Stale receives when the client's user may have changed (a user.changed
// notice named them, or notices may have been lost): whoever serves the
// client looks the user up again, and Updates the client or ends it.
func (c *Client) Stale() <-chan struct{} { return c.stale }

// markStale flags the client stale, once however often it is told.
func (c *Client) markStale() {
	select {
	case c.stale <- struct{}{}:
	default:
	}
}

// Err is nil until Dropped is closed, then ErrTooSlow, ErrClosed or ErrLeft.
func (c *Client) Err() error {
	select {
	case <-c.dropped:
		return c.err
	default:
		return nil
	}
}

func (c *Client) drop(err error) {
	c.once.Do(func() { c.err = err; close(c.dropped) })
}

// Join adds a browser connection for the viewer. Once the hub is closed,
// the client comes back already dropped; it must Leave all the same.
func (h *Hub) Join(v Viewer) *Client {
	c := &Client{hub: h, viewer: v, ready: make(chan struct{}, 1), stale: make(chan struct{}, 1), dropped: make(chan struct{})}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.members == 0 {
		h.gone = make(chan struct{})
	}
	h.members++
	if h.closed {
		c.drop(ErrClosed)
		return c
	}
	h.clients[c] = struct{}{}
	return c
}

// Leave removes the client. Leaving twice is harmless.
func (h *Hub) Leave(c *Client) {
	h.mu.Lock()
	delete(h.clients, c)
	if !c.left {
		c.left = true
		if h.members--; h.members == 0 {
			close(h.gone)
		}
	}
	h.mu.Unlock()
	c.drop(ErrLeft)
}

// Clients counts the connected clients.
func (h *Hub) Clients() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.clients)
}

// Close drops every client, and every client that joins later, with
// ErrClosed: it is how the websockets learn of a shutdown, since
// http.Server.Shutdown neither ends nor waits for hijacked connections.
// Waiters are left alone. Closing twice is harmless.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	if h.timer != nil {
		h.timer.Stop()
	}
	for c := range h.clients {
		delete(h.clients, c)
		c.drop(ErrClosed)
	}
}

// Drain waits until every client that joined has left, or ctx ends.
func (h *Hub) Drain(ctx context.Context) error {
	for {
		h.mu.Lock()
		members, gone := h.members, h.gone
		h.mu.Unlock()
		if members == 0 {
			return nil
		}
		select {
		case <-gone:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Update changes what the client may see, after its user changed: from
// now on it gets only what v sees, and first a resync, so that its page
// fetches afresh what it shows. Nothing happens if v sees what the client
// saw, or the client is gone.
func (h *Hub) Update(c *Client, v Viewer) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.clients[c]; !ok || c.viewer.equal(v) {
		return
	}
	c.viewer = v
	h.send(c, &Notice{Type: Resync}, time.Now())
}

// send gives a notice that came at now to a client, for its next frame, or
// drops the client if too many wait already. The caller holds h.mu.
func (h *Hub) send(c *Client, n *Notice, now time.Time) {
	if len(c.pace.pending) >= maxPending {
		delete(h.clients, c)
		c.drop(ErrTooSlow)
		return
	}
	when := c.pace.add(n, now, urgent(n, c.viewer.Name))
	if !c.signaled && (h.armed.IsZero() || when.Before(h.armed)) {
		h.arm(when, now)
	}
}

// arm sets the hub's timer to fire at when. The caller holds h.mu.
func (h *Hub) arm(when, now time.Time) {
	h.armed = when
	if h.timer == nil {
		h.timer = time.AfterFunc(when.Sub(now), h.signalDue)
		return
	}
	h.timer.Reset(when.Sub(now))
}

// signalDue tells each client whose frame is due, and arms the timer for
// the next one. It tells them a few at a time: each wakes a goroutine that
// writes a frame, and thousands woken at once would queue every request
// behind them for the CPU. Between two groups the signaller yields, and
// comes back once the group it woke has had its turn.
func (h *Hub) signalDue() {
	h.mu.Lock()
	now := time.Now()
	var next time.Time
	var due []*Client
	for c := range h.clients {
		if c.signaled || len(c.pace.pending) == 0 {
			continue
		}
		if when := c.pace.due(); when.After(now) {
			if next.IsZero() || when.Before(next) {
				next = when
			}
			continue
		}
		c.signaled = true
		due = append(due, c)
	}
	h.armed = time.Time{}
	if !next.IsZero() && !h.closed {
		h.arm(next, now)
	}
	h.mu.Unlock()
	for i, c := range due {
		if i > 0 && i%signalGroup == 0 {
			runtime.Gosched()
		}
		select {
		case c.ready <- struct{}{}:
		default:
		}
	}
}

// Tap adds fn to what hears every notice the hub delivers, user.changed
// included, before any client does: caches of what notices change drop
// what they kept. fn must not block.
func (h *Hub) Tap(fn func(*Notice)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.taps = append(h.taps, fn)
}

// Viewers returns the names of the users with a client in the hub, each
// once.
func (h *Hub) Viewers() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	seen := map[string]bool{}
	var names []string
	for c := range h.clients {
		if n := c.viewer.Name; !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	return names
}

// Deliver gives a notice to every client that may see it, for its next
// frame, without ever blocking: a client with too many waiting is dropped. It also wakes the
// waiters of a finished job or batch. A user.changed notice goes to no
// browser: it marks the user's clients Stale; so does a resync, every
// client's, since a user.changed may have been lost with other notices.
func (h *Hub) Deliver(n Notice) {
	h.mu.Lock()
	taps := h.taps
	h.mu.Unlock()
	for _, tap := range taps {
		tap(&n)
	}
	if n.Type == UserChanged {
		h.mu.Lock()
		defer h.mu.Unlock()
		for c := range h.clients {
			if c.viewer.Name == n.User {
				c.markStale()
			}
		}
		return
	}
	shared := &n
	// Encoded once here rather than once per connection: with thousands of
	// browsers, encoding was a good part of the work of a notice.
	shared.encoded, _ = json.Marshal(n)
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	for c := range h.clients {
		if n.Type == Resync {
			c.markStale()
		}
		if c.viewer.Sees(n) {
			h.send(c, shared, now)
		}
	}
	switch n.Type {
	case JobFinished:
		h.wake(n.JobID)
	case BatchFinished:
		h.wake(n.BatchID)
	case Resync:
		for id := range h.waiters {
			h.wake(id)
		}
	}
}

// wake ends the waits on id. The caller holds h.mu.
func (h *Hub) wake(id string) {
	for _, w := range h.waiters[id] {
		close(w)
	}
	delete(h.waiters, id)
}

// Wait returns a channel closed when a notice says the job or batch with
// this id finished (or notices may have been lost), and a function to stop
// waiting.
func (h *Hub) Wait(id string) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	h.mu.Lock()
	h.waiters[id] = append(h.waiters[id], ch)
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		ws := h.waiters[id]
		for i, w := range ws {
			if w == ch {
				h.waiters[id] = append(ws[:i], ws[i+1:]...)
				break
			}
		}
		if len(h.waiters[id]) == 0 {
			delete(h.waiters, id)
		}
	}
}
