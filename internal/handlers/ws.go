package handlers

import (
	"context"
	"net/http"
	"net/url"
	"strings"
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

// websocket serves /ws: a snapshot, then the notices the user may see.
func (s *Server) websocket(c echo.Context) error {
	u, _ := currentUser(c)
	if c.Get(viaToken) == true {
		return newError(http.StatusForbidden, "forbidden", "the live feed is for browser sessions")
	}
	if !s.sameOrigin(c.Request()) {
		return newError(http.StatusForbidden, "forbidden", "cross-origin websocket refused")
	}
	upgrader := websocket.Upgrader{ReadBufferSize: 512, WriteBufferSize: 4096, CheckOrigin: s.sameOrigin}
	conn, err := upgrader.Upgrade(c.Response(), c.Request(), nil)
	if err != nil {
		return nil // the upgrader has answered
	}
	viewer := notify.Viewer{Name: u.Name, All: u.Role == users.Supervisor, Queues: u.Queues}
	client := s.hub.Join(viewer)
	defer s.hub.Leave(client)
	defer conn.Close()
	s.metrics.sockets.Inc()
	defer s.metrics.sockets.Dec()

	ctx, cancel := context.WithCancel(context.WithoutCancel(c.Request().Context()))
	defer cancel()
	go s.readPump(conn, cancel)

	snap, err := s.snapshot(ctx, u)
	if err != nil {
		s.log.Warn("websocket snapshot", "err", err)
		return nil
	}
	snap.Instance = s.instance
	if !s.send(conn, snap) {
		return nil
	}
	ping := time.NewTicker(pingPeriod)
	defer ping.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-client.Dropped():
			// Too slow: close, so the browser reconnects and resyncs.
			_ = conn.WriteControl(websocket.CloseMessage,
				websocket.FormatCloseMessage(websocket.CloseTryAgainLater, "too slow"), time.Now().Add(writeWait))
			return nil
		case n := <-client.Notices():
			if !s.send(conn, n) {
				return nil
			}
		case <-ping.C:
			if conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeWait)) != nil {
				return nil
			}
		}
	}
}

func (s *Server) send(conn *websocket.Conn, v any) bool {
	_ = conn.SetWriteDeadline(time.Now().Add(writeWait))
	return conn.WriteJSON(v) == nil
}

// readPump reads (and drops) what the browser sends, keeping the pong
// deadline, and cancels when the connection ends.
func (s *Server) readPump(conn *websocket.Conn, done func()) {
	defer done()
	conn.SetReadLimit(512)
	_ = conn.SetReadDeadline(time.Now().Add(pongWait))
	conn.SetPongHandler(func(string) error { return conn.SetReadDeadline(time.Now().Add(pongWait)) })
	for {
		if _, _, err := conn.ReadMessage(); err != nil {
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
