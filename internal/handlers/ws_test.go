package handlers_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"claimdesk/internal/keys"
	"claimdesk/internal/notify"
	"claimdesk/internal/tasks"
	"claimdesk/internal/users"

	"github.com/gorilla/websocket"
)

// wsTimeout bounds every wait for a websocket message.
const wsTimeout = 10 * time.Second

// dial opens /ws with the browser's cookies (none for a nil browser), the
// Origin header (none if empty) and any extra headers.
func (a *app) dial(b *browser, origin string, extra http.Header) (*websocket.Conn, *http.Response, error) {
	d := websocket.Dialer{HandshakeTimeout: wsTimeout}
	if b != nil {
		d.Jar = b.c.Jar
	}
	h := http.Header{}
	for k, v := range extra {
		h[k] = v
	}
	if origin != "" {
		h.Set("Origin", origin)
	}
	conn, res, err := d.Dial("ws"+strings.TrimPrefix(a.srv.URL, "http")+"/ws", h)
	if res != nil && res.Body != nil {
		res.Body.Close()
	}
	return conn, res, err
}

// person makes a user with a known password and logs a browser in as them.
func (a *app) person(role users.Role, queues ...string) (string, *browser) {
	a.t.Helper()
	name := fmt.Sprintf("ws%s%d", role, seq.Add(1))
	if err := a.users.Put(context.Background(), users.User{Name: name, Role: role, Queues: queues}, "password-"+name); err != nil {
		a.t.Fatal(err)
	}
	b := a.browser()
	if b.login(name, "password-"+name); b.status != http.StatusSeeOther {
		a.t.Fatalf("login as %s: %d", name, b.status)
	}
	return name, b
}

// socket is a live feed as a browser page holds it.
type socket struct {
	t    *testing.T
	who  string
	conn *websocket.Conn
	// queued are notices read, in a message of several, and not yet seen.
	queued []notify.Notice
}

// wsSnapshot is the first message of the feed.
type wsSnapshot struct {
	Type         string        `json:"type"`
	Queues       []tasks.Stats `json:"queues"`
	Reservations []*tasks.Job  `json:"reservations"`
	Instance     string        `json:"instance"`
}

// live connects the browser's page to the feed with the right Origin, and
// returns the socket and the raw snapshot it got first.
func (a *app) live(who string, b *browser) (*socket, []byte) {
	a.t.Helper()
	conn, res, err := a.dial(b, a.srv.URL, nil)
	if err != nil {
		a.t.Fatalf("%s: websocket dial: %v (status %d)", who, err, status(res))
	}
	a.t.Cleanup(func() { conn.Close() })
	s := &socket{t: a.t, who: who, conn: conn}
	return s, s.read()
}

func (s *socket) read() []byte {
	s.t.Helper()
	_ = s.conn.SetReadDeadline(time.Now().Add(wsTimeout))
	_, raw, err := s.conn.ReadMessage()
	if err != nil {
		s.t.Fatalf("%s: reading the feed: %v", s.who, err)
	}
	return raw
}

// closed reads on until the server ends the feed, and returns the code of
// its close frame.
func (s *socket) closed() int {
	s.t.Helper()
	for {
		_ = s.conn.SetReadDeadline(time.Now().Add(wsTimeout))
		if _, _, err := s.conn.NextReader(); err != nil {
			var ce *websocket.CloseError
			if !errors.As(err, &ce) {
				s.t.Fatalf("%s: the feed ended without a close frame: %v", s.who, err)
			}
			return ce.Code
		}
	}
}

// until reads notices up to and including the first that matches, and
// returns those that keep says are of interest, as lines.
func (s *socket) until(match, keep func(notify.Notice) bool) []string {
	s.t.Helper()
	var got []string
	for {
		if len(s.queued) == 0 {
			raw := s.read()
			ns, err := notify.Unframe(raw)
			if err != nil {
				s.t.Fatalf("%s: message is not a notice: %s", s.who, raw)
			}
			s.queued = ns
		}
		n := s.queued[0]
		s.queued = s.queued[1:]
		if keep(n) {
			got = append(got, line(n))
		}
		if match(n) {
			return got
		}
	}
}

// line shows a notice as "type queue job operator", with the counts of a
// queue.changed and the state of a job.finished.
func line(n notify.Notice) string {
	s := strings.TrimSpace(fmt.Sprintf("%s %s %s %s", n.Type, n.Queue, n.JobID, n.Operator))
	if n.Ready != nil && n.Reserved != nil {
		s += fmt.Sprintf(" ready=%d reserved=%d", *n.Ready, *n.Reserved)
	}
	if n.State != "" {
		s += " " + n.State
	}
	return s
}

// published waits until the server has published the notices of every
// request it answered so far: they go out after the response.
func (a *app) published() {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wsTimeout)
	defer cancel()
	if err := a.announce.Flush(ctx); err != nil {
		a.t.Fatalf("notices not published within %v: %v", wsTimeout, err)
	}
}

// status is the response's status code, 0 without a response.
func status(res *http.Response) int {
	if res == nil {
		return 0
	}
	return res.StatusCode
}

func TestWebsocketNeedsABrowserSession(t *testing.T) {
	a := newApp(t)
	_, loggedOut := a.person(users.Operator, a.queue)
	loggedOut.do("GET", "/", nil) // for the CSRF token
	if loggedOut.do("POST", "/logout", url.Values{"_csrf": {loggedOut.csrf}}); loggedOut.status != http.StatusSeeOther {
		t.Fatalf("logout: %d", loggedOut.status)
	}
	for _, tc := range []struct {
		name    string
		browser *browser
		header  http.Header
		want    int
	}{
		{"no session", nil, nil, http.StatusUnauthorized},
		{"logged-out browser", loggedOut, nil, http.StatusUnauthorized},
		{"API token", nil, http.Header{"Authorization": {"Bearer " + a.operator}}, http.StatusForbidden},
		{"bad API token", nil, http.Header{"Authorization": {"Bearer cdt_not-a-real-token-at-all-xxxx"}}, http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, res, err := a.dial(tc.browser, a.srv.URL, tc.header)
			if err == nil {
				conn.Close()
				t.Fatal("websocket upgraded without a browser session")
			}
			if status(res) != tc.want {
				t.Fatalf("dial: %v, status %d; want %d", err, status(res), tc.want)
			}
		})
	}
}

func TestWebsocketChecksOrigin(t *testing.T) {
	a := newApp(t)
	_, b := a.person(users.Operator, a.queue)
	host := strings.TrimPrefix(a.srv.URL, "http://")
	for _, tc := range []struct {
		name, origin string
		want         int
	}{
		{"no Origin", "", http.StatusForbidden},
		{"another site", "http://evil.example", http.StatusForbidden},
		{"opaque origin", "null", http.StatusForbidden},
		{"host as a subdomain of another site", "http://" + host + ".evil.example", http.StatusForbidden},
		{"another port", "http://127.0.0.1:1", http.StatusForbidden},
		{"the configured public URL", "http://example.test", http.StatusSwitchingProtocols},
		{"the host it connected to", a.srv.URL, http.StatusSwitchingProtocols},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, res, err := a.dial(b, tc.origin, nil)
			if conn != nil {
				conn.Close()
			}
			if status(res) != tc.want {
				t.Fatalf("Origin %q: dial error %v, status %d; want %d", tc.origin, err, status(res), tc.want)
			}
		})
	}
}

func TestWebsocketStartsWithASnapshot(t *testing.T) {
	a := newApp(t)
	ctx := context.Background()
	for _, title := range []string{"one", "two", "three"} {
		a.enqueue(title)
	}
	held, token := a.claim() // by another operator
	name, b := a.person(users.Operator, a.queue)
	tok, err := a.users.NewToken(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	out := a.expect("POST", "/api/v1/queues/"+a.queue+"/claim", tok, "", 200, "")
	mine := out["job"].(map[string]any)["id"].(string)
	myToken := out["reservation"].(map[string]any)["token"].(string)

	op, raw := a.live("operator", b)
	var snap wsSnapshot
	if err := json.Unmarshal(raw, &snap); err != nil || snap.Type != "snapshot" {
		t.Fatalf("first message is not a snapshot (%v): %s", err, raw)
	}
	if snap.Instance == "" {
		t.Error("snapshot does not name the instance")
	}
	if len(snap.Queues) != 1 || snap.Queues[0].Queue != a.queue || snap.Queues[0].Ready != 1 || snap.Queues[0].Reserved != 2 {
		t.Errorf("snapshot queues = %+v, want only %s with 1 ready and 2 reserved", snap.Queues, a.queue)
	}
	// Their own reservation only; never a token.
	if len(snap.Reservations) != 1 || snap.Reservations[0].ID != mine || snap.Reservations[0].ReservedBy != name {
		t.Errorf("snapshot reservations = %v, want only %s held by %s", snap.Reservations, mine, name)
	}
	if strings.Contains(string(raw), myToken) || strings.Contains(string(raw), token) || strings.Contains(string(raw), `"token"`) {
		t.Errorf("snapshot carries a reservation token: %s", raw)
	}
	if strings.Contains(string(raw), held) {
		t.Errorf("snapshot shows another operator's reservation %s: %s", held, raw)
	}

	_, sb := a.person(users.Supervisor)
	_, raw = a.live("supervisor", sb)
	snap = wsSnapshot{}
	if err := json.Unmarshal(raw, &snap); err != nil || snap.Type != "snapshot" {
		t.Fatalf("supervisor's first message is not a snapshot (%v): %s", err, raw)
	}
	found := false
	for _, q := range snap.Queues {
		found = found || (q.Queue == a.queue && q.Ready == 1 && q.Reserved == 2)
	}
	if !found {
		t.Errorf("supervisor's snapshot lacks %s with 1 ready and 2 reserved: %+v", a.queue, snap.Queues)
	}

	// Closing the page leaves the hub.
	if n := a.hub.Clients(); n != 2 {
		t.Errorf("hub has %d clients with two pages open, want 2", n)
	}
	op.conn.Close()
	deadline := time.Now().Add(wsTimeout)
	for a.hub.Clients() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("hub still has %d clients %v after a page closed, want 1", a.hub.Clients(), wsTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestWebsocketNoticesAreFiltered(t *testing.T) {
	a := newApp(t)
	ctx := context.Background()
	// Two more queues: q2 nobody here works, q3 only the other operator.
	q2, q3 := a.queue+"-b", a.queue+"-c"
	for _, q := range []string{q2, q3} {
		if _, err := a.tasks.PutQueue(ctx, tasks.Queue{Name: q}); err != nil {
			t.Fatal(err)
		}
	}
	opBrowser := a.browser()
	opBrowser.login(a.opName, "password-"+a.opName)
	_, otherBrowser := a.person(users.Operator, q3)
	_, bossBrowser := a.person(users.Supervisor)
	op, raw := a.live("operator", opBrowser)
	other, _ := a.live("other operator", otherBrowser)
	boss, _ := a.live("supervisor", bossBrowser)
	// Publishers reach the instance once it is registered.
	var snap wsSnapshot
	if err := json.Unmarshal(raw, &snap); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(wsTimeout)
	for rdb.ZScore(ctx, keys.Instances, snap.Instance).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("instance %s not registered within %v", snap.Instance, wsTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}

	// Notices go out after the response, and changes that come close
	// together share their queue.changed: each step waits until its own
	// are out, so that each carries its counts.
	enqueue := func(queue, token string) string {
		t.Helper()
		out := a.expect("POST", "/api/v1/queues/"+queue+"/jobs", token, `{"title":"job"}`, 201, "")
		a.published()
		return out["job"].(map[string]any)["id"].(string)
	}
	elsewhere := enqueue(q2, a.super)
	mine := enqueue(a.queue, a.producer)
	id, token := a.claim()
	if id != mine {
		t.Fatalf("claimed %s, want %s", id, mine)
	}
	a.published()
	a.expect("POST", "/api/v1/jobs/"+mine+"/complete", a.operator, `{"token":"`+token+`"}`, 200, "")
	a.published()
	others := enqueue(q3, a.super)    // the last the other operator sees
	last := enqueue(a.queue, a.super) // the last the first operator sees

	q1 := a.queue
	available := func(id string) func(notify.Notice) bool {
		return func(n notify.Notice) bool { return n.Type == notify.JobAvailable && n.JobID == id }
	}
	all := func(notify.Notice) bool { return true }
	ours := func(n notify.Notice) bool { return n.Queue == q1 || n.Queue == q2 || n.Queue == q3 }
	// Changes close together may share a message, in which each queue's
	// counts come only as they are last (TestWebsocketCoalescesNotices):
	// the other notices come in order, and counts only of queues the
	// viewer may see. What an operator sees alone (own: their own
	// reservation's changes) comes in frames of its own, in order, but
	// before or after the frames of what their group sees (docs/design.md,
	// Hub).
	for _, tc := range []struct {
		s      *socket
		upTo   string
		filter func(notify.Notice) bool
		want   []string
		own    []string
		counts []string
	}{
		{op, last, all, []string{
			"job.available " + q1 + " " + mine,
			"job.available " + q1 + " " + last,
		}, []string{
			"reservation.created " + q1 + " " + mine + " " + a.opName,
			"reservation.completed " + q1 + " " + mine + " " + a.opName + " completed",
		}, []string{q1}},
		{other, others, all, []string{
			"job.available " + q3 + " " + others,
		}, nil, []string{q3}},
		// A supervisor sees every notice of every test sharing the Redis:
		// keep this test's.
		{boss, last, ours, []string{
			"job.available " + q2 + " " + elsewhere,
			"job.available " + q1 + " " + mine,
			"reservation.created " + q1 + " " + mine + " " + a.opName,
			"reservation.completed " + q1 + " " + mine + " " + a.opName + " completed",
			"job.finished " + q1 + " " + mine + " completed",
			"job.available " + q3 + " " + others,
			"job.available " + q1 + " " + last,
		}, nil, []string{q1, q2, q3}},
	} {
		var counted, own []string
		isOwn := func(n notify.Notice) bool { return tc.own != nil && strings.HasPrefix(n.Type, "reservation.") }
		sawLast := false
		got := tc.s.until(func(n notify.Notice) bool {
			sawLast = sawLast || available(tc.upTo)(n)
			return sawLast && len(own) >= len(tc.own)
		}, func(n notify.Notice) bool {
			switch {
			case n.Type == notify.QueueChanged && tc.filter(n):
				counted = append(counted, n.Queue)
				return false
			case isOwn(n):
				own = append(own, line(n))
				return false
			}
			return tc.filter(n)
		})
		if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s got\n  %s\nwant\n  %s", tc.s.who, strings.Join(got, "\n  "), strings.Join(tc.want, "\n  "))
		}
		if strings.Join(own, "\n") != strings.Join(tc.own, "\n") {
			t.Errorf("%s got of their own\n  %s\nwant\n  %s", tc.s.who, strings.Join(own, "\n  "), strings.Join(tc.own, "\n  "))
		}
		for _, q := range counted {
			if !slices.Contains(tc.counts, q) {
				t.Errorf("%s got the counts of %s", tc.s.who, q)
			}
		}
	}
}

// drained waits for every websocket of the app to be done with the hub.
func (a *app) drained() {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wsTimeout)
	defer cancel()
	if err := a.hub.Drain(ctx); err != nil {
		a.t.Fatalf("websockets still in the hub after %v: %v", wsTimeout, err)
	}
}

// A page that stops reading is not dropped: once its socket's buffers are
// full, what it misses is replaced by a resync, and when it reads again it
// gets what was on its way, the resync, and what came after, on the same
// socket.
func TestWebsocketResyncsASlowBrowser(t *testing.T) {
	a := newApp(t)
	_, b := a.person(users.Supervisor)
	page, _ := a.live("supervisor", b)
	// The page reads nothing while big notices come, a few to a frame (a
	// queue's settings go soon after the last frame): the first fill the
	// socket's buffers, the rest wait in the hub, more than it keeps.
	const notices, size = 200, 256 << 10
	title := strings.Repeat("x", size)
	for i := range notices {
		a.hub.Deliver(notify.Notice{Type: notify.QueueSettings, Queue: a.queue, JobID: strconv.Itoa(i), Title: title})
		time.Sleep(10 * time.Millisecond) // notices come at a steady pace, not all in one frame
	}
	a.hub.Deliver(notify.Notice{Type: notify.JobAvailable, Queue: a.queue, JobID: "after"})
	var got []string
	resynced := false
	for {
		ns := page.until(func(notify.Notice) bool { return true }, func(notify.Notice) bool { return true })
		n := ns[0]
		if strings.HasPrefix(n, notify.Resync) {
			resynced = true
		}
		if n == "job.available "+a.queue+" after" {
			break
		}
		got = append(got, n)
	}
	if !resynced || len(got) >= notices {
		t.Fatalf("the page that read nothing got %d of %d notices and resync %v, want fewer and a resync", len(got), notices, resynced)
	}
	if n := a.hub.Clients(); n != 1 {
		t.Fatalf("the hub has %d clients, want the page still there", n)
	}
}

func TestWebsocketsCloseAtShutdown(t *testing.T) {
	a := newApp(t)
	_, b := a.person(users.Operator, a.queue)
	first, _ := a.live("first page", b)
	second, _ := a.live("second page", b)
	a.hub.Close() // what claimdesk serve does when it is told to stop
	for _, page := range []*socket{first, second} {
		if code := page.closed(); code != websocket.CloseGoingAway {
			t.Errorf("%s closed with %d at shutdown, want %d (going away)", page.who, code, websocket.CloseGoingAway)
		}
	}
	// A page connecting meanwhile gets its snapshot, then the same close.
	late, raw := a.live("late page", b)
	if !strings.Contains(string(raw), `"type":"snapshot"`) {
		t.Errorf("late page's first message is not a snapshot: %.200s", raw)
	}
	if code := late.closed(); code != websocket.CloseGoingAway {
		t.Errorf("late page closed with %d, want %d (going away)", code, websocket.CloseGoingAway)
	}
	a.drained()
}

// Changes close together reach a page in few messages: what comes within
// one frame interval goes out as one message, each queue's counts only as
// they are last.
func TestWebsocketCoalescesNotices(t *testing.T) {
	a := newApp(t)
	b := a.browser()
	b.login(a.opName, "password-"+a.opName)
	op, _ := a.live("operator", b)
	// Twenty changes, each a new job and the queue's counts after it,
	// handed to the hub at once: well within one frame interval.
	const jobs = 20
	for i := range int64(jobs) {
		ready := i + 1
		a.hub.Deliver(notify.Notice{Type: notify.JobAvailable, Queue: a.queue, JobID: fmt.Sprintf("job-%d", i)})
		a.hub.Deliver(notify.Notice{Type: notify.QueueChanged, Queue: a.queue, Ready: &ready})
	}
	messages, available := 0, 0
	var last int64
	for last != jobs {
		_ = op.conn.SetReadDeadline(time.Now().Add(wsTimeout))
		_, raw, err := op.conn.ReadMessage()
		if err != nil {
			t.Fatalf("reading the feed: %v (%d messages, last count %d)", err, messages, last)
		}
		messages++
		ns, err := notify.Unframe(raw)
		if err != nil {
			t.Fatal(err)
		}
		counts := 0
		for _, n := range ns {
			switch n.Type {
			case notify.QueueChanged:
				if counts++; counts > 1 {
					t.Fatalf("a message carries the queue's counts twice: %s", raw)
				}
				last = *n.Ready
			case notify.JobAvailable:
				available++
			}
		}
	}
	if available != jobs {
		t.Fatalf("%d job.available notices, want %d", available, jobs)
	}
	// Sent one by one they would be 40 messages.
	if messages > 3 {
		t.Fatalf("%d changes came in %d messages: not coalesced", jobs, messages)
	}
}

// convergeWithin is the promise of design.md ("Counts converge"): every
// open page that shows a queue shows the store's counts within it of the
// queue's last change.
const convergeWithin = 2 * time.Second

// Many pages over real sockets, quick, slow and stalled, of operators and
// supervisors, end showing the store's counts within convergeWithin of
// the last change, though counts older than the store's came last.
func TestWebsocketsConvergeOnTheStoresCounts(t *testing.T) {
	a := newApp(t)
	ctx := context.Background()
	type page struct {
		who     string
		conn    *websocket.Conn
		mu      sync.Mutex
		ready   int64 // the last ready count the page was told
		err     error
		slow    bool
		stalled bool
	}
	var pages []*page
	release := make(chan struct{})
	read := func(p *page) {
		if p.stalled {
			<-release
		}
		_ = p.conn.SetReadDeadline(time.Time{}) // the test's own bound ends it
		for {
			_, raw, err := p.conn.ReadMessage()
			if err != nil {
				p.mu.Lock()
				p.err = err
				p.mu.Unlock()
				return
			}
			ns, err := notify.Unframe(raw)
			if err != nil {
				p.mu.Lock()
				p.err = err
				p.mu.Unlock()
				return
			}
			for _, n := range ns {
				var ready *int64
				switch n.Type {
				case notify.QueueChanged:
					if n.Queue == a.queue {
						ready = n.Ready
					}
				case notify.Resync:
					// The page fetches afresh.
					if st, err := a.tasks.Stats(ctx, a.queue); err == nil {
						ready = &st.Ready
					}
				}
				if ready != nil {
					p.mu.Lock()
					p.ready = *ready
					p.mu.Unlock()
				}
			}
			if p.slow {
				time.Sleep(300 * time.Millisecond) // a slow page comes back for more this much later
			}
		}
	}
	open := func(role users.Role, tabs int, slow, stalled bool) {
		name, b := a.person(role, a.queue)
		for range tabs {
			s, raw := a.live(name, b)
			var snap wsSnapshot
			if err := json.Unmarshal(raw, &snap); err != nil {
				t.Fatal(err)
			}
			p := &page{who: name, conn: s.conn, slow: slow, stalled: stalled}
			for _, q := range snap.Queues {
				if q.Queue == a.queue {
					p.ready = q.Ready
				}
			}
			pages = append(pages, p)
			go read(p)
		}
	}
	for range 3 {
		open(users.Operator, 15, false, false)
	}
	open(users.Supervisor, 10, false, false)
	open(users.Operator, 10, true, false)
	open(users.Operator, 10, false, true)

	// Three people work the queue for a while.
	stop := time.Now().Add(1500 * time.Millisecond)
	var work sync.WaitGroup
	for w := range 3 {
		work.Add(1)
		go func() {
			defer work.Done()
			who := fmt.Sprint("worker-", w)
			for time.Now().Before(stop) {
				if _, err := a.tasks.Enqueue(ctx, a.queue, who, []tasks.NewJob{{Title: "a"}, {Title: "b"}}); err != nil {
					t.Error(err)
					return
				}
				r, err := a.tasks.Claim(ctx, a.queue, who)
				if err != nil || r == nil {
					t.Errorf("claim: %v, %v", r, err)
					return
				}
				if _, err := a.tasks.Complete(ctx, r.Job.ID, r.Hold(), nil); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	work.Wait()
	a.published()
	st, err := a.tasks.Stats(ctx, a.queue)
	if err != nil {
		t.Fatal(err)
	}
	// Counts older than the store's, as if from an instance whose notice
	// crossed the last one on the way, made in the same millisecond.
	old := st.Counts()
	old.Ready--
	a.hub.Deliver(notify.Notice{Type: notify.QueueChanged, Queue: a.queue, Ready: &old.Ready, Held: &old.Held,
		Scheduled: &old.Scheduled, Reserved: &old.Reserved, Dead: &old.Dead, At: a.now().UnixMilli()})
	done := time.Now()
	close(release)
	// The promise is of the state at the bound: what pages show then.
	time.Sleep(time.Until(done.Add(convergeWithin)))
	wrong, example := 0, ""
	for _, p := range pages {
		p.mu.Lock()
		if p.err != nil {
			t.Fatalf("%s's page: %v", p.who, p.err)
		}
		if p.ready != st.Ready {
			wrong++
			example = fmt.Sprintf("%s's page shows %d ready, the store %d", p.who, p.ready, st.Ready)
		}
		p.mu.Unlock()
	}
	if wrong > 0 {
		t.Fatalf("%d of %d pages are not on the store's count %v after the last change (%s)", wrong, len(pages), convergeWithin, example)
	}
}
