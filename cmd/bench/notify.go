package main

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"claimdesk/internal/notify"
	"claimdesk/internal/tasks"
	"claimdesk/internal/users"

	"github.com/gorilla/websocket"
)

// Sizes and timing of the notify scenario.
const (
	// notifySessions is how many operators log in; their sockets share the
	// sessions like tabs of one browser. Logins are throttled per client
	// address, and each costs a bcrypt.
	notifySessions = 10
	// dialers is how many websockets are being opened at once.
	dialers = 32
	// noticeSpacing is the pause between two enqueues while clients
	// listen: a quiet moment longer than the hub's frame interval
	// (internal/notify), after which a new job goes at once. Under a
	// steady flow a new job waits for its page's next frame instead.
	noticeSpacing = 600 * time.Millisecond
	// idleSettle is how long the connections sit idle before the server's
	// memory is read.
	idleSettle = 2 * time.Second
	// noticeWait is how long after the last enqueue the bench waits for
	// notices still on their way.
	noticeWait = 10 * time.Second
)

// runNotify connects c.sockets websocket clients, as logged-in operators,
// to one claimdesk process; reads the server's memory per idle connection;
// then enqueues c.notices jobs through the API, one every 600 ms, and
// times, for every client and every job, from just before the enqueue
// request was sent to the client's receipt of the job.available notice.
func runNotify(ctx context.Context, c config) (result, error) {
	r := result{Scenario: fmt.Sprintf("notify (%d websockets on one server)", c.sockets)}
	a, err := startApp(ctx, c)
	if err != nil {
		return r, err
	}
	defer a.close()

	const queue = "bench-notify"
	if err := a.queue(ctx, queue); err != nil {
		return r, err
	}
	producerToken, err := a.userWithToken(ctx, "bench-producer", users.Producer, queue)
	if err != nil {
		return r, err
	}
	sessions := make([]*cookiejar.Jar, min(notifySessions, c.sockets))
	for i := range sessions {
		name := fmt.Sprintf("bench-viewer-%02d", i)
		password := name + "-bench-pass"
		if err := a.user(ctx, name, users.Operator, password, queue); err != nil {
			return r, err
		}
		if sessions[i], err = login(ctx, a.url, name, password); err != nil {
			return r, fmt.Errorf("log in %s: %w", name, err)
		}
	}

	before, err := settledRSS(ctx, a.pid(), 3, 200*time.Millisecond)
	if err != nil {
		return r, err
	}
	goBefore, err := goStats(ctx, a.url)
	if err != nil {
		return r, err
	}

	// Connect every client; each reads its snapshot before it counts as
	// connected, then reads on in its own goroutine.
	var (
		available atomic.Int64 // job.available notices received, all clients
		closing   atomic.Bool  // set when the bench starts closing
	)
	connect := newRecorder("websocket connect + snapshot")
	clients := make([]*wsClient, c.sockets)
	wsURL := "ws" + strings.TrimPrefix(a.url, "http") + "/ws"
	dialersBySession := make([]*websocket.Dialer, len(sessions))
	for i, jar := range sessions {
		dialersBySession[i] = socketDialer(jar)
	}
	defer func() {
		closing.Store(true)
		closeAll(clients)
	}()
	err = parallel(dialers, c.sockets, func(_, i int) error {
		var cl *wsClient
		err := connect.time(func() error {
			var err error
			cl, err = dial(ctx, dialersBySession[i%len(sessions)], wsURL, a.url)
			return err
		})
		if err != nil {
			return fmt.Errorf("websocket %d: %w", i, err)
		}
		clients[i] = cl
		go cl.read(&available, &closing)
		return nil
	})
	if err != nil {
		return r, err
	}

	// Idle: what do the connections cost the server?
	if err := sleep(ctx, idleSettle); err != nil {
		return r, err
	}
	after, err := settledRSS(ctx, a.pid(), 3, 500*time.Millisecond)
	if err != nil {
		return r, err
	}
	perSocket := float64(after-before) / float64(c.sockets) / 1024
	goAfter, err := goStats(ctx, a.url)
	if err != nil {
		return r, err
	}

	// Notices: one job at a time, spaced, each send time noted just before
	// its request goes out.
	producer := newHTTPClient(2)
	defer producer.CloseIdleConnections()
	if _, err := call(ctx, producer, a.url, http.MethodGet, "/api/v1/queues", producerToken, nil, nil); err != nil {
		return r, err
	}
	enqueue := newRecorder("http enqueue (1 job)")
	sent := make(map[string]time.Time, c.notices)
	redisPID, err := redisPID(ctx, a.rdb)
	if err != nil {
		return r, err
	}
	cpu := startCPU(a.pid(), redisPID, os.Getpid())
	next := time.Now()
	for i := range c.notices {
		if err := sleep(ctx, time.Until(next)); err != nil {
			return r, err
		}
		next = next.Add(noticeSpacing)
		var out struct{ Job tasks.Job }
		t0 := time.Now()
		_, err := call(ctx, producer, a.url, http.MethodPost, "/api/v1/queues/"+queue+"/jobs", producerToken, newJob(i), &out)
		enqueue.add(t0, time.Since(t0))
		if err != nil {
			return r, err
		}
		sent[out.Job.ID] = t0
	}
	want := int64(c.sockets) * int64(c.notices)
	waitUntil := time.Now().Add(noticeWait)
	for available.Load() < want && time.Now().Before(waitUntil) {
		if err := sleep(ctx, 10*time.Millisecond); err != nil {
			return r, err
		}
	}
	cores := cpu.cores()

	// Close, then read what every client saw.
	closing.Store(true)
	closeAll(clients)
	latency := newRecorder("enqueue → notice (all clients)")
	complete, dropped, firstSnapshot, foreign := 0, 0, 0, 0
	var dropReason string
	for _, cl := range clients {
		if cl.first == "snapshot" {
			firstSnapshot++
		}
		if cl.droppedEarly {
			dropped++
			if dropReason == "" {
				dropReason = cl.err.Error()
			}
		}
		seen := map[string]bool{}
		for _, n := range cl.got {
			t, ok := sent[n.jobID]
			if !ok || seen[n.jobID] {
				foreign++
				continue
			}
			seen[n.jobID] = true
			latency.add(t, n.at.Sub(t))
		}
		if len(seen) == c.notices {
			complete++
		}
	}
	lat := latency.summary()
	r.Ops = []summary{connect.summary(), enqueue.summary(), lat}

	a.checkQuiet(&r)
	r.check("every client's first message is a snapshot", firstSnapshot == c.sockets, "%d of %d", firstSnapshot, c.sockets)
	r.check("every client got every notice", complete == c.sockets && lat.Calls == int(want),
		"%d of %d clients got all %d notices; %d of %d notices received", complete, c.sockets, c.notices, lat.Calls, want)
	r.check("no notice for an unknown job or twice", foreign == 0, "%d", foreign)
	detail := "%d of %d clients closed by the server before the end"
	if dropReason != "" {
		detail += " (first: " + dropReason + ")"
	}
	r.check("no client dropped", dropped == 0, detail, dropped, c.sockets)

	r.fig("websocket clients", float64(c.sockets), "")
	r.fig("logged-in sessions (sockets share them like tabs)", float64(len(sessions)), "")
	r.fig("notices (jobs enqueued while they listen)", float64(c.notices), "")
	r.fig("claimdesk RSS before connecting", float64(before)/(1<<20), "MiB")
	r.fig("claimdesk RSS with every socket idle", float64(after)/(1<<20), "MiB")
	r.fig("notice phase: claimdesk CPU", cores[0], "cores")
	r.fig("notice phase: redis-server CPU", cores[1], "cores")
	r.fig("notice phase: bench (load generator) CPU", cores[2], "cores")
	r.fig("server memory per idle socket", perSocket, "KiB")
	// Where it goes, from the Go runtime's own gauges on /metrics (heap
	// in use counts garbage not yet collected too).
	perSock := func(name string) float64 { return (goAfter[name] - goBefore[name]) / float64(c.sockets) }
	r.fig("per idle socket: goroutines", perSock("go_goroutines"), "")
	r.fig("per idle socket: goroutine stacks", perSock("go_memstats_stack_inuse_bytes")/1024, "KiB")
	r.fig("per idle socket: Go heap in use", perSock("go_memstats_heap_inuse_bytes")/1024, "KiB")
	r.atMost(fmt.Sprintf("server memory per idle socket with %d sockets", c.sockets), perSocket, 32, "KiB")
	r.atMost(fmt.Sprintf("enqueue → notice p99 with %d sockets", c.sockets), float64(lat.P99), 100, "ms")
	return r, nil
}

// csrfRE finds the CSRF token in the login form.
var csrfRE = regexp.MustCompile(`name="_csrf" value="([^"]*)"`)

// login logs a person in as a browser does (GET the form for its CSRF
// token, POST it) and returns the cookie jar holding the session.
func login(ctx context.Context, base, name, password string) (*cookiejar.Jar, error) {
	jar, err := cookiejar.New(nil)
	if err != nil {
		return nil, err
	}
	cl := newHTTPClient(1)
	defer cl.CloseIdleConnections()
	cl.Jar = jar
	cl.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/login", nil)
	if err != nil {
		return nil, err
	}
	resp, err := cl.Do(req)
	if err != nil {
		return nil, err
	}
	page, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	m := csrfRE.FindSubmatch(page)
	if resp.StatusCode != http.StatusOK || m == nil {
		return nil, fmt.Errorf("GET /login: %s, CSRF field found: %t", resp.Status, m != nil)
	}
	form := url.Values{"name": {name}, "password": {password}, "_csrf": {html.UnescapeString(string(m[1]))}, "next": {"/"}}
	req, err = http.NewRequestWithContext(ctx, http.MethodPost, base+"/login", strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err = cl.Do(req)
	if err != nil {
		return nil, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		return nil, fmt.Errorf("POST /login: %s, want 303 See Other", resp.Status)
	}
	return jar, nil
}

// settledRSS samples a process's RSS n times, pause apart, and returns the
// last sample.
func settledRSS(ctx context.Context, pid, n int, pause time.Duration) (int64, error) {
	var rss int64
	for i := range n {
		if i > 0 {
			if err := sleep(ctx, pause); err != nil {
				return 0, err
			}
		}
		var err error
		if rss, err = rssBytes(pid); err != nil {
			return 0, err
		}
	}
	return rss, nil
}

// wsClient is one browser tab's websocket.
type wsClient struct {
	conn  *websocket.Conn
	first string // type of the first message
	// Written by the reader, read once done is closed.
	got          []arrival
	err          error
	droppedEarly bool
	done         chan struct{}
}

// arrival is a job.available notice and when it arrived.
type arrival struct {
	jobID string
	at    time.Time
}

// message is what the bench reads of the first message, the snapshot.
type message struct {
	Type string `json:"type"`
}

// socketDialer opens websockets as a browser of the session in jar does.
func socketDialer(jar http.CookieJar) *websocket.Dialer {
	return &websocket.Dialer{HandshakeTimeout: 10 * time.Second, ReadBufferSize: 1024, WriteBufferSize: 256, Jar: jar}
}

// openSocket opens a websocket with the dialer's session cookie and the
// public origin.
func openSocket(ctx context.Context, d *websocket.Dialer, wsURL, origin string) (*websocket.Conn, error) {
	conn, resp, err := d.DialContext(ctx, wsURL, http.Header{"Origin": {origin}})
	if err != nil && resp != nil {
		err = fmt.Errorf("%w (%s)", err, resp.Status)
	}
	return conn, err
}

// dial opens a websocket (openSocket) and reads the first message.
func dial(ctx context.Context, d *websocket.Dialer, wsURL, origin string) (*wsClient, error) {
	conn, err := openSocket(ctx, d, wsURL, origin)
	if err != nil {
		return nil, err
	}
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	var first message
	if err := conn.ReadJSON(&first); err != nil {
		conn.Close()
		return nil, fmt.Errorf("read the first message: %w", err)
	}
	_ = conn.SetReadDeadline(time.Time{})
	return &wsClient{conn: conn, first: first.Type, done: make(chan struct{})}, nil
}

// read reads messages until the connection ends, noting when each
// job.available arrives. It does nothing slow, so the server never finds
// this client's buffer full. A connection that ends before the bench
// began closing counts as dropped.
func (cl *wsClient) read(available *atomic.Int64, closing *atomic.Bool) {
	defer close(cl.done)
	for {
		_, b, err := cl.conn.ReadMessage()
		at := time.Now()
		if err != nil {
			cl.err = err
			var ce *websocket.CloseError
			normal := errors.As(err, &ce) && ce.Code == websocket.CloseNormalClosure
			cl.droppedEarly = !normal && !closing.Load()
			return
		}
		ns, _ := notify.Unframe(b)
		for _, n := range ns {
			if n.Type == notify.JobAvailable {
				cl.got = append(cl.got, arrival{n.JobID, at})
				available.Add(1)
			}
		}
	}
}

// closeAll closes every client cleanly: a close frame, the server's answer
// (or a short wait), then the connection. Calling it twice is harmless.
func closeAll(clients []*wsClient) {
	var wg sync.WaitGroup
	for _, cl := range clients {
		if cl == nil || cl.conn == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			msg := websocket.FormatCloseMessage(websocket.CloseNormalClosure, "bench done")
			_ = cl.conn.WriteControl(websocket.CloseMessage, msg, time.Now().Add(time.Second))
			select {
			case <-cl.done:
			case <-time.After(2 * time.Second):
			}
			cl.conn.Close()
			<-cl.done
		}()
	}
	wg.Wait()
}
