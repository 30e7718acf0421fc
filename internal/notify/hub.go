package notify

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"slices"
	"sync"
	"time"

	"claimdesk/internal/tasks"
)

// Why a client was dropped: Client.Err.
var (
	// ErrClosed says the hub was closed: the server is shutting down.
	ErrClosed = errors.New("notify: hub closed")
	// ErrLeft says the client left.
	ErrLeft = errors.New("notify: client left")
)

// Hub fans notices out to this instance's browser connections, and wakes
// the requests waiting for a job to finish.
//
// Connections whose viewers see the same notices (the same role, queues
// and presence: Viewer.key) form a group. A notice is given once to each
// group that sees it, and each of a group's frames is built, encoded and
// framed for the websocket once for all its connections; what one viewer
// sees alone (their own reservations, the warning that one runs out) goes
// to their connections in frames of their own, never after a resync
// given later. A connection that falls behind is sent a resync instead of
// what it missed, never dropped: its page fetches afresh.
//
// What a page shows of a queue's counts converges on the store's: counts
// older than those the hub gave last are never given (they may cross on
// the way from several instances), and once a queue has been quiet for
// settleAfter the hub reads its counts (Settle) and gives them, if they
// are not those it gave last.
type Hub struct {
	mu      sync.Mutex
	clients map[*Client]struct{}
	// groups are the clients by what their viewers see alike (Viewer.key);
	// named, by their viewer's name; alone, those with notices of their
	// own waiting.
	groups  map[string]*group
	named   map[string]map[*Client]struct{}
	alone   map[*Client]struct{}
	waiters map[string][]chan struct{}
	// members counts the clients that joined and have not left yet, dropped
	// or not: Drain waits for them. gone is closed when it falls to zero.
	members int
	gone    chan struct{}
	// closed is set by Close: whoever joins is dropped at once.
	closed bool
	// taps hear every notice delivered (Tap).
	taps []func(*Notice)
	// timer fires at armed, when the first frame is due (pace.go); armed
	// is zero while nothing is due.
	timer *time.Timer
	armed time.Time
	// flushing is held while frames are handed to clients, so that two
	// firings of the timer never hand one client's frames out of order.
	flushing sync.Mutex
	// queues is what the hub gave of each queue's counts; read reads them
	// from the store (Settle).
	queues map[string]*queueCounts
	read   func(context.Context, string) (tasks.Counts, error)
}

// group is the clients whose viewers see the same notices alike, and the
// notices waiting for their next frame.
type group struct {
	viewer  Viewer
	members []*Client
	pace    pacer
}

// queueCounts is what the hub gave of one queue's counts.
type queueCounts struct {
	// last is the latest queue.changed given, and at the latest change
	// they were told of (Notice.At); given counts them.
	last  *Notice
	at    int64
	given uint64
	// settle fires settleAfter the last one, to read the counts (Settle).
	settle *time.Timer
}

// settleAfter is how long a queue's counts stay quiet before the hub
// reads them from the store; settleTimeout bounds that read.
// convergeWithin is what that promises: every open page that shows a
// queue shows the store's counts within it of the queue's last change
// (settleAfter, the read, and a frame interval, with room to spare).
const (
	settleAfter    = 500 * time.Millisecond
	settleTimeout  = 5 * time.Second
	convergeWithin = 2 * time.Second
)

// NewHub returns an empty hub.
func NewHub() *Hub {
	return &Hub{clients: map[*Client]struct{}{}, groups: map[string]*group{}, named: map[string]map[*Client]struct{}{},
		alone: map[*Client]struct{}{}, waiters: map[string][]chan struct{}{}, queues: map[string]*queueCounts{}}
}

// Settle has the hub read a queue's counts with read once the queue has
// been quiet for settleAfter after a queue.changed, while a client sees
// the queue, and give them if they differ from those it gave last: so
// every page converges on the store's counts, whatever notices were lost
// or crossed on the way. Call it before the hub hears notices.
func (h *Hub) Settle(read func(ctx context.Context, queue string) (tasks.Counts, error)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.read = read
}

// Client is one browser connection's share of the hub.
type Client struct {
	hub *Hub
	// viewer, its group, its place among the group's members, and the
	// notices it sees alone are guarded by the hub's mu.
	viewer Viewer
	group  *group
	slot   int
	pace   pacer
	// out are the frames waiting to be written, guarded by mu; ready holds
	// a token while there are some.
	mu    sync.Mutex
	out   []*Frame
	ready chan struct{}
	// stale holds a token while the client's user may have changed.
	stale chan struct{}
	// Dropped is closed when the hub was closed or the client left; err
	// says which.
	dropped chan struct{}
	once    sync.Once
	err     error
	left    bool // guarded by the hub's mu
}

// Ready receives when frames wait for the client: Take them.
func (c *Client) Ready() <-chan struct{} { return c.ready }

// Take returns the frames that waited for the client, in order, and
// forgets them. They are shared with other clients: never change them.
func (c *Client) Take() []*Frame {
	c.mu.Lock()
	defer c.mu.Unlock()
	fs := c.out
	c.out = nil
	return fs
}

// push gives the client a frame, and tells it so. A client with maxFrames
// waiting is behind: they are replaced by a resync. It reports whether the
// client was told anew.
func (c *Client) push(f *Frame) bool {
	c.mu.Lock()
	if len(c.out) >= maxFrames {
		c.out = append(c.out[:0], resyncFrame)
	}
	c.out = append(c.out, f)
	c.mu.Unlock()
	select {
	case c.ready <- struct{}{}:
		return true
	default:
		return false
	}
}

// Dropped is closed when the client must go: the hub was closed, or it
// left.
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

// Err is nil until Dropped is closed, then ErrClosed or ErrLeft.
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
	h.enter(c)
	names := h.named[v.Name]
	if names == nil {
		names = map[*Client]struct{}{}
		h.named[v.Name] = names
	}
	names[c] = struct{}{}
	return c
}

// enter puts the client in the group of its viewer. The caller holds h.mu.
func (h *Hub) enter(c *Client) {
	k := c.viewer.key()
	g := h.groups[k]
	if g == nil {
		g = &group{viewer: Viewer{All: c.viewer.All, Queues: c.viewer.Queues, Away: c.viewer.Away}}
		h.groups[k] = g
	}
	c.group, c.slot = g, len(g.members)
	g.members = append(g.members, c)
}

// exit takes the client out of its group. The caller holds h.mu.
func (h *Hub) exit(c *Client) {
	g := c.group
	if g == nil {
		return
	}
	last := len(g.members) - 1
	g.members[c.slot] = g.members[last]
	g.members[c.slot].slot = c.slot
	g.members[last] = nil
	g.members = g.members[:last]
	if last == 0 {
		delete(h.groups, c.viewer.key())
	}
	c.group = nil
}

// remove takes the client out of the hub. The caller holds h.mu.
func (h *Hub) remove(c *Client) {
	if _, ok := h.clients[c]; !ok {
		return
	}
	delete(h.clients, c)
	h.exit(c)
	delete(h.alone, c)
	if names := h.named[c.viewer.Name]; names != nil {
		delete(names, c)
		if len(names) == 0 {
			delete(h.named, c.viewer.Name)
		}
	}
}

// Leave removes the client. Leaving twice is harmless.
func (h *Hub) Leave(c *Client) {
	h.mu.Lock()
	h.remove(c)
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
	for _, q := range h.queues {
		if q.settle != nil {
			q.settle.Stop()
		}
	}
	for c := range h.clients {
		h.remove(c)
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
	// Not while frames are handed out: one of the old group's, made
	// before the update, would reach the client after its resync.
	h.flushing.Lock()
	defer h.flushing.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.clients[c]; !ok || c.viewer.equal(v) {
		return
	}
	h.exit(c)
	c.viewer = v
	h.enter(c)
	h.handOwn(c, time.Now())
	c.push(resyncFrame)
}

// handOwn hands the client at once the notices it sees alone that wait
// for its next frame, if any: a resync must not reach it before them,
// since whoever reads the client takes a resync as the end of what came
// before it. The caller holds h.flushing, so that no frame of the client
// taken earlier is still being handed out, and h.mu.
func (h *Hub) handOwn(c *Client, now time.Time) {
	if _, ok := h.alone[c]; !ok {
		return
	}
	delete(h.alone, c)
	c.push(newFrame(c.pace.take(now)))
}

// give gathers a notice that came at now for the next frame of a group or
// a client, and sees that the timer fires when it is due. The caller holds
// h.mu.
func (h *Hub) give(p *pacer, n *Notice, now time.Time, urgent bool) {
	if when := p.add(n, now, urgent); h.armed.IsZero() || when.Before(h.armed) {
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

// signalDue makes the frames that are due, each once, hands each to the
// clients it is for, and arms the timer for the next. It tells the clients
// a few at a time: each wakes a goroutine that writes a frame, and
// thousands woken at once would queue every request behind them for the
// CPU. Between two groups the signaller yields, and comes back once the
// group it woke has had its turn.
func (h *Hub) signalDue() {
	h.flushing.Lock()
	defer h.flushing.Unlock()
	type due struct {
		notices []*Notice
		to      []*Client
	}
	var frames []due
	h.mu.Lock()
	now := time.Now()
	var next time.Time
	isDue := func(p *pacer) bool {
		if len(p.pending) == 0 {
			return false
		}
		if when := p.due(); when.After(now) {
			if next.IsZero() || when.Before(next) {
				next = when
			}
			return false
		}
		return true
	}
	for _, g := range h.groups {
		if isDue(&g.pace) {
			frames = append(frames, due{g.pace.take(now), slices.Clone(g.members)})
		}
	}
	for c := range h.alone {
		if isDue(&c.pace) {
			frames = append(frames, due{c.pace.take(now), []*Client{c}})
			delete(h.alone, c)
		}
	}
	h.armed = time.Time{}
	if !next.IsZero() && !h.closed {
		h.arm(next, now)
	}
	h.mu.Unlock()
	told := 0
	for _, d := range frames {
		f := newFrame(d.notices)
		for _, c := range d.to {
			if !c.push(f) {
				continue
			}
			if told++; told%signalGroup == 0 {
				runtime.Gosched()
			}
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
	names := make([]string, 0, len(h.named))
	for n := range h.named {
		names = append(names, n)
	}
	return names
}

// Deliver gives a notice to every client that may see it, for its next
// frame, without ever blocking. It also wakes the waiters of a finished
// job or batch. A user.changed notice goes to no browser: it marks the
// user's clients Stale; so does a resync, every client's, since a
// user.changed may have been lost with other notices. A resync reaches
// each client after every notice it was given before, its own included.
// A queue.changed older than the counts the hub gave last is left out.
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
		for c := range h.named[n.User] {
			c.markStale()
		}
		return
	}
	shared := &n
	// Encoded once here rather than once per connection or group.
	shared.encoded, _ = json.Marshal(n)
	if n.Type == Resync {
		h.flushing.Lock()
		defer h.flushing.Unlock()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if n.Type == QueueChanged && !h.newest(shared) {
		return
	}
	now := time.Now()
	if n.Type == Resync {
		// A group's frame may be due before a client's own: what each
		// client sees alone goes first.
		for c := range h.alone {
			h.handOwn(c, now)
		}
	}
	for _, g := range h.groups {
		if g.viewer.seesAlike(n) {
			h.give(&g.pace, shared, now, urgent(shared))
		}
	}
	if n.Operator != "" {
		for c := range h.named[n.Operator] {
			if c.viewer.seesAlone(n) {
				h.give(&c.pace, shared, now, true)
				h.alone[c] = struct{}{}
			}
		}
	}
	switch n.Type {
	case JobFinished:
		h.wake(n.JobID)
	case JobSLA:
		if n.Action == string(tasks.ActionMoved) {
			h.wake(n.JobID)
		}
	case BatchFinished:
		h.wake(n.BatchID)
	case Resync:
		for c := range h.clients {
			c.markStale()
		}
		for id := range h.waiters {
			h.wake(id)
		}
	}
}

// newest reports whether a queue.changed is no older than the counts the
// hub gave last of its queue, and if so keeps it as the last, and has the
// counts read settleAfter from now unless another comes first. Counts that
// do not say when they were made (At zero: an instance of an older
// claimdesk, during an upgrade) are given as they come. The caller holds
// h.mu.
func (h *Hub) newest(n *Notice) bool {
	q := h.queues[n.Queue]
	if q == nil {
		q = &queueCounts{}
		h.queues[n.Queue] = q
	}
	if n.At != 0 && n.At < q.at {
		return false
	}
	q.last, q.at = n, max(q.at, n.At)
	q.given++
	if h.read == nil || h.closed {
		return true
	}
	if q.settle == nil {
		name := n.Queue
		q.settle = time.AfterFunc(settleAfter, func() { h.settle(name) })
	} else {
		q.settle.Reset(settleAfter)
	}
	return true
}

// settle reads a quiet queue's counts from the store, and gives them if
// they are not those the hub gave last. Counts given meanwhile win: they
// have a settle of their own.
func (h *Hub) settle(queue string) {
	h.mu.Lock()
	q, read := h.queues[queue], h.read
	given, watched := q.given, false
	for _, g := range h.groups {
		if watched = g.viewer.seesAlike(Notice{Type: QueueChanged, Queue: queue}); watched {
			break
		}
	}
	h.mu.Unlock()
	if !watched {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), settleTimeout)
	counts, err := read(ctx, queue)
	cancel()
	if err != nil {
		return // the pages' own fetches heal what is left
	}
	h.mu.Lock()
	last, at := q.last, q.at
	changed := q.given != given
	h.mu.Unlock()
	if now := countsNotice(queue, counts, at); !changed && !sameCounts(now, last) {
		h.Deliver(*now)
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
