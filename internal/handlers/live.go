package handlers

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"claimdesk/internal/desk"
	"claimdesk/internal/keys"
	"claimdesk/internal/notify"
	"claimdesk/internal/tasks"
	"claimdesk/internal/users"

	"github.com/gorilla/websocket"
	"github.com/labstack/echo/v4"
)

// Websocket timing.
const (
	writeWait = 10 * time.Second
	pongWait  = 60 * time.Second
	// DefaultPingPeriod is Config.PingPeriod's default: pings well
	// within pongWait (a browser answers each with a pong).
	DefaultPingPeriod = pongWait * 9 / 10
)

// closeSessionEnded closes a websocket whose session ended (the user was
// disabled or removed, or given a new password): the page (static/app.js)
// reloads, and lands on the login page. A private close code (4000-4999).
const closeSessionEnded = 4001

// snapshot is the first message on a connection: what the viewer may see
// now, so a (re)connecting page starts from the truth.
type snapshot struct {
	Type         string        `json:"type"`
	Queues       []tasks.Stats `json:"queues"`
	Reservations []*tasks.Job  `json:"reservations"`
	// Instance names the web instance serving the connection.
	Instance string `json:"instance"`
}

// sameOrigin accepts a browser whose Origin is the configured public URL,
// or the host it connected to.
func (s *Server) sameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return false
	}
	if strings.EqualFold(origin, s.origin) {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && strings.EqualFold(u.Host, r.Host)
}

// upgrader keeps an idle connection's buffers small. A write buffer is
// taken from the pool only while a message is written. Browsers send
// nothing but pongs and the closing frame, which fit a 256-byte read buffer
// (control frames carry at most 125 bytes). Reusing the hijacked net/http
// connection's 4 KiB buffers instead, as gorilla does when the sizes are
// zero and there is no pool, would keep 8 KiB for as long as a socket lives.
var upgrader = websocket.Upgrader{ReadBufferSize: 256, WriteBufferPool: &sync.Pool{}}

// websocket serves /ws: a snapshot, then the notices the user may see.
//
// The request's goroutine upgrades and sends the snapshot, then returns:
// its stack, deep under the middleware, and the request it holds would
// otherwise stay for the life of every connection. The feed goes on in a
// goroutine of its own; net/http and echo let go of a hijacked connection
// once the handler returns.
func (s *Server) websocket(c echo.Context) error {
	u, _ := currentUser(c)
	if c.Get(viaToken) == true {
		return newError(http.StatusForbidden, "forbidden", "the live feed is for browser sessions")
	}
	if !s.sameOrigin(c.Request()) {
		return newError(http.StatusForbidden, "forbidden", "cross-origin websocket refused")
	}
	release, refused := s.sockets.take(u.Name, c.RealIP())
	up := upgrader
	up.CheckOrigin = s.sameOrigin
	conn, err := up.Upgrade(c.Response(), c.Request(), nil)
	if err != nil {
		if release != nil {
			release()
		}
		return nil // the upgrader has answered
	}
	if refused != nil {
		// Upgraded only to say why: a page cannot read the status of a
		// refused upgrade, but it reads a close frame's code.
		s.refusedSocket(refused, u.Name, c.RealIP())
		closeWith(conn, refused.code, refused.reason)
		_ = conn.Close()
		return nil
	}
	// authenticate checked the session against the user: its epoch is
	// the user's.
	lc := &liveConn{conn: conn, user: u.Name, epoch: u.Epoch, session: s.sessions.Token(c.Request().Context()), release: release}
	// Join before the snapshot: a change made while it is read arrives as
	// a notice after it, never falls between the two.
	lc.client = s.hub.Join(viewerOf(u))
	s.metrics.sockets.Inc()
	if err := s.presence.Mark(c.Request().Context(), u.Name); err != nil {
		s.storeTrouble("presence not marked", err, "user", u.Name)
	}
	snap, err := s.snapshot(c.Request().Context(), u)
	if err != nil {
		s.storeTrouble("websocket snapshot not made", err)
		s.hangUp(lc)
		return nil
	}
	snap.Instance = s.instance
	if !s.send(conn, snap) {
		s.hangUp(lc)
		return nil
	}
	go s.feed(lc)
	return nil
}

// liveConn is one open websocket.
type liveConn struct {
	conn   *websocket.Conn
	client *notify.Client
	// user is whose session opened it, in the user's epoch then.
	user  string
	epoch int64
	// session is that session's token: the socket lasts no longer.
	session string
	// release frees its place under the caps on websockets.
	release func()
}

// viewerOf is what the user's websockets may receive.
func viewerOf(u users.User) notify.Viewer {
	return notify.Viewer{Name: u.Name, All: u.Role == users.Supervisor, Queues: u.Queues, Away: u.Away}
}

// hangUp ends a connection: it closes the socket, which ends the read pump
// too, and leaves the hub last, so that a drained hub has no socket open.
func (s *Server) hangUp(lc *liveConn) {
	_ = lc.conn.Close()
	s.metrics.sockets.Dec()
	lc.release()
	s.hub.Leave(lc.client)
}

// feed writes the client's notices and the pings until the connection
// ends, the hub drops the client, the browser goes away, or the user's
// session ends.
func (s *Server) feed(lc *liveConn) {
	defer s.hangUp(lc)
	gone := make(chan struct{})
	go s.readPump(lc.conn, gone)
	ping := time.NewTicker(s.pingPeriod)
	defer ping.Stop()
	// A change to the user after the request looked the user up and
	// before the socket joined the hub told nobody: look once more.
	if !s.recheck(lc) {
		return
	}
	for {
		select {
		case <-gone:
			return
		case <-lc.client.Dropped():
			// At a shutdown, say so: the page reconnects (to another
			// instance).
			closeWith(lc.conn, websocket.CloseGoingAway, "shutting down")
			return
		case <-lc.client.Stale():
			if !s.recheck(lc) {
				return
			}
		case <-lc.client.Ready():
			// Frames are shared by the connections that see alike: each
			// was encoded and framed once for all of them.
			for _, f := range lc.client.Take() {
				msg, err := f.Message()
				if err != nil {
					s.log.Warn("websocket notice", "err", err)
					continue
				}
				_ = lc.conn.SetWriteDeadline(time.Now().Add(writeWait))
				if lc.conn.WritePreparedMessage(msg) != nil {
					return
				}
			}
		case <-ping.C:
			// A session also ends by the clock, which nobody announces.
			if !s.recheckSession(lc) {
				return
			}
			if lc.conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeWait)) != nil {
				return
			}
		}
	}
}

// recheck looks the socket's user and session up again: while the
// session is valid, the hub gets what the user may see now (the queues
// granted, the role); once it is over (the user disabled, removed or given
// a new password, or this session logged out or run out), the page is told
// so and the socket closes. It reports whether the socket goes on.
func (s *Server) recheck(lc *liveConn) bool {
	ctx, cancel := context.WithTimeout(context.Background(), writeWait)
	defer cancel()
	u, err := s.users.Reload(ctx, lc.user)
	if err == nil && u.SessionValid(lc.epoch) {
		if !s.recheckSession(lc) {
			return false
		}
		s.hub.Update(lc.client, viewerOf(u))
		return true
	}
	s.hangUpWith(lc, err)
	return false
}

// recheckSession closes the socket, and reports false, once its session
// is gone.
func (s *Server) recheckSession(lc *liveConn) bool {
	ctx, cancel := context.WithTimeout(context.Background(), writeWait)
	defer cancel()
	n, err := s.rdb.Exists(ctx, keys.Session(lc.session)).Result()
	if err == nil && n == 1 {
		return true
	}
	s.hangUpWith(lc, err)
	return false
}

// hangUpWith tells the page why its socket closes: its session ended, or
// (err, the store not answering) nothing is known, and it should
// reconnect, its session checked then.
func (s *Server) hangUpWith(lc *liveConn, err error) {
	code, text := closeSessionEnded, "session ended"
	if err != nil && !errors.Is(err, users.ErrNotFound) {
		s.storeTrouble("websocket session not looked up", err, "user", lc.user)
		code, text = websocket.CloseTryAgainLater, "try again"
	}
	closeWith(lc.conn, code, text)
}

// closeWith sends the closing frame, with its code and reason.
func closeWith(conn *websocket.Conn, code int, text string) {
	_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), time.Now().Add(writeWait))
}

// socketCaps counts the instance's websockets per user and per client
// address, and refuses one beyond either cap.
type socketCaps struct {
	perUser, perAddress int

	mu        sync.Mutex
	users     map[string]int
	addresses map[string]int
	// warned is when a refusal for each cap and user or address was last
	// logged, so that pages trying again do not flood the log.
	warned map[string]time.Time
}

func newSocketCaps(perUser, perAddress int) *socketCaps {
	return &socketCaps{perUser: perUser, perAddress: perAddress,
		users: map[string]int{}, addresses: map[string]int{}, warned: map[string]time.Time{}}
}

// socketRefusal is why a websocket was refused: the close code and reason
// the page reads (static/js/live.js), and the setting that raises the cap.
type socketRefusal struct {
	code    int
	reason  string
	setting string
	cap     int
}

// Close codes of a websocket refused for a cap (private codes, 4000-4999):
// the page says live updates are paused, and why, and tries again later.
const (
	closeTooManyFromAddress = 4002
	closeTooManyForUser     = 4003
)

// take counts a new websocket of the user from the address, unless either
// has its cap already: then it answers why. release uncounts it (once,
// however often called).
func (l *socketCaps) take(user, address string) (release func(), refused *socketRefusal) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.addresses[address] >= l.perAddress:
		return nil, &socketRefusal{closeTooManyFromAddress, "too many connections from your network", "CLAIMDESK_WS_PER_ADDRESS", l.perAddress}
	case l.users[user] >= l.perUser:
		return nil, &socketRefusal{closeTooManyForUser, "too many live pages open for you", "CLAIMDESK_WS_PER_USER", l.perUser}
	}
	l.users[user]++
	l.addresses[address]++
	return sync.OnceFunc(func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		uncount(l.users, user)
		uncount(l.addresses, address)
	}), nil
}

// socketWarnEvery is how often a refusal for one cap and user or address
// is logged.
const socketWarnEvery = time.Minute

// refusedSocket logs a websocket refused for a cap, with the setting that
// raises it, at most once a socketWarnEvery for each cap and user or
// address.
func (s *Server) refusedSocket(r *socketRefusal, user, address string) {
	who := address
	if r.code == closeTooManyForUser {
		who = user
	}
	l := s.sockets
	l.mu.Lock()
	key, now := r.setting+" "+who, time.Now()
	last, seen := l.warned[key]
	warn := !seen || now.Sub(last) >= socketWarnEvery
	if warn {
		if len(l.warned) >= maxCredits {
			clear(l.warned)
		}
		l.warned[key] = now
	}
	l.mu.Unlock()
	if warn {
		s.log.Warn("websocket refused: "+r.reason+"; raise the cap with "+r.setting,
			"cap", r.cap, "user", user, "address", address)
	}
}

// uncount takes one from the count of k, and forgets k at zero.
func uncount(counts map[string]int, k string) {
	if counts[k]--; counts[k] <= 0 {
		delete(counts, k)
	}
}

func (s *Server) send(conn *websocket.Conn, v any) bool {
	_ = conn.SetWriteDeadline(time.Now().Add(writeWait))
	return conn.WriteJSON(v) == nil
}

// readPump reads (and drops) what the browser sends, keeping the pong
// deadline, and closes gone when the connection ends.
func (s *Server) readPump(conn *websocket.Conn, gone chan<- struct{}) {
	defer close(gone)
	conn.SetReadLimit(512)
	_ = conn.SetReadDeadline(time.Now().Add(pongWait))
	conn.SetPongHandler(func(string) error { return conn.SetReadDeadline(time.Now().Add(pongWait)) })
	for {
		// NextReader, not ReadMessage: nothing the browser sends is wanted,
		// so none of it is read into memory.
		if _, _, err := conn.NextReader(); err != nil {
			return
		}
	}
}

// snapshot gathers the counts of the user's queues and the reservations
// they may see.
func (s *Server) snapshot(ctx context.Context, u users.User) (snapshot, error) {
	snap := snapshot{Type: "snapshot", Queues: []tasks.Stats{}, Reservations: []*tasks.Job{}}
	if u.Role != users.Supervisor {
		h, err := s.operatorHome(ctx, u)
		for _, q := range h.Queues {
			snap.Queues = append(snap.Queues, q.Stats)
		}
		snap.Reservations = append(snap.Reservations, h.Reservations...)
		return snap, err
	}
	qs, err := s.desk.VisibleQueues(ctx, desk.Person(u))
	if err != nil {
		return snap, err
	}
	for _, q := range qs {
		snap.Queues = append(snap.Queues, q.Stats)
	}
	p, err := s.desk.LiveReservations(ctx, desk.Person(u), "")
	snap.Reservations = append(snap.Reservations, p.Jobs...)
	return snap, err
}
