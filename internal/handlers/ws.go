package handlers

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"claimdesk/internal/notify"
	"claimdesk/internal/tasks"
	"claimdesk/internal/users"

	"github.com/gorilla/websocket"
	"github.com/labstack/echo/v4"
)

// Websocket timing.
const (
	writeWait  = 10 * time.Second
	pongWait   = 60 * time.Second
	pingPeriod = pongWait * 9 / 10
)

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
	up := upgrader
	up.CheckOrigin = s.sameOrigin
	conn, err := up.Upgrade(c.Response(), c.Request(), nil)
	if err != nil {
		return nil // the upgrader has answered
	}
	viewer := notify.Viewer{Name: u.Name, All: u.Role == users.Supervisor, Queues: u.Queues}
	// Join before the snapshot: a change made while it is read arrives as
	// a notice after it, never falls between the two.
	client := s.hub.Join(viewer)
	s.metrics.sockets.Inc()
	snap, err := s.snapshot(c.Request().Context(), u)
	if err != nil {
		s.log.Warn("websocket snapshot", "err", err)
		s.hangUp(conn, client)
		return nil
	}
	snap.Instance = s.instance
	if !s.send(conn, snap) {
		s.hangUp(conn, client)
		return nil
	}
	go s.feed(conn, client)
	return nil
}

// hangUp ends a connection: it closes the socket, which ends the read pump
// too, and leaves the hub last, so that a drained hub has no socket open.
func (s *Server) hangUp(conn *websocket.Conn, client *notify.Client) {
	_ = conn.Close()
	s.metrics.sockets.Dec()
	s.hub.Leave(client)
}

// feed writes the client's notices and the pings until the connection
// ends, the hub drops the client, or the browser goes away.
func (s *Server) feed(conn *websocket.Conn, client *notify.Client) {
	defer s.hangUp(conn, client)
	gone := make(chan struct{})
	go s.readPump(conn, gone)
	ping := time.NewTicker(pingPeriod)
	defer ping.Stop()
	for {
		select {
		case <-gone:
			return
		case <-client.Dropped():
			// Too slow: close, so the browser reconnects and resyncs. At a
			// shutdown, say so, and it reconnects (to another instance).
			code, text := websocket.CloseTryAgainLater, "too slow"
			if errors.Is(client.Err(), notify.ErrClosed) {
				code, text = websocket.CloseGoingAway, "shutting down"
			}
			_ = conn.WriteControl(websocket.CloseMessage,
				websocket.FormatCloseMessage(code, text), time.Now().Add(writeWait))
			return
		case n := <-client.Notices():
			b, err := n.Encoded()
			if err != nil {
				s.log.Warn("websocket notice", "err", err)
				continue
			}
			_ = conn.SetWriteDeadline(time.Now().Add(writeWait))
			if conn.WriteMessage(websocket.TextMessage, b) != nil {
				return
			}
		case <-ping.C:
			if conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeWait)) != nil {
				return
			}
		}
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
	_, stats, err := s.visibleQueues(ctx, u)
	if err != nil {
		return snap, err
	}
	snap.Queues = append(snap.Queues, stats...)
	p, err := s.tasks.ListReservations(ctx, "", 100, "")
	snap.Reservations = append(snap.Reservations, p.Jobs...)
	return snap, err
}
