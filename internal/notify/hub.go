package notify

import (
	"sync"
)

// clientBuffer is how many notices may wait for one slow browser before it
// is dropped (it reconnects and gets a fresh snapshot).
const clientBuffer = 64

// Hub fans notices out to this instance's browser connections, and wakes
// the requests waiting for a job to finish.
type Hub struct {
	mu      sync.Mutex
	clients map[*Client]struct{}
	waiters map[string][]chan struct{}
}

// NewHub returns an empty hub.
func NewHub() *Hub {
	return &Hub{clients: map[*Client]struct{}{}, waiters: map[string][]chan struct{}{}}
}

// Client is one browser connection's share of the hub.
type Client struct {
	viewer Viewer
	send   chan Notice
	// Dropped is closed when the hub gave up on the client (too slow) or
	// the client left.
	dropped chan struct{}
	once    sync.Once
}

// Notices are the notices for the client, in order.
func (c *Client) Notices() <-chan Notice { return c.send }

// Dropped is closed when the client must go: it was too slow, or left.
func (c *Client) Dropped() <-chan struct{} { return c.dropped }

// Join adds a browser connection for the viewer.
func (h *Hub) Join(v Viewer) *Client {
	c := &Client{viewer: v, send: make(chan Notice, clientBuffer), dropped: make(chan struct{})}
	h.mu.Lock()
	h.clients[c] = struct{}{}
	h.mu.Unlock()
	return c
}

// Leave removes the client.
func (h *Hub) Leave(c *Client) {
	h.mu.Lock()
	delete(h.clients, c)
	h.mu.Unlock()
	c.once.Do(func() { close(c.dropped) })
}

// Clients counts the connected clients.
func (h *Hub) Clients() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.clients)
}

// Deliver hands a notice to every client that may see it, without ever
// blocking: a client whose buffer is full is dropped. It also wakes the
// waiters of a finished job or batch.
func (h *Hub) Deliver(n Notice) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.clients {
		if !c.viewer.Sees(n) {
			continue
		}
		select {
		case c.send <- n:
		default:
			delete(h.clients, c)
			c.once.Do(func() { close(c.dropped) })
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
