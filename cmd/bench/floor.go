package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"claimdesk/internal/notify"
	"claimdesk/internal/tasks"
	"claimdesk/internal/users"

	"github.com/gorilla/websocket"
)

// The floor scenario: a whole floor of people with claimdesk open on one
// instance. Its pages behave as static/js/live.js makes a browser's behave
// (e2e/live.spec.ts, "what an open page fetches", checks that a real
// Chromium page does): counts come in notices and cost no request; a page
// fetches its fragments after connecting, when its viewer's own
// reservations change (within 50–250 ms), and, on a supervisor's page, at
// most about once a second while others' reservations, counts or batches
// change; every fragment also polls (hx-trigger "every 15s": c.floorPoll,
// shorter in the smoke run).
const (
	// floorIdleSessions is how many people the idle operators' pages
	// belong to: tabs of a few sessions, since logins cost a bcrypt each.
	// Idle people hold nothing, so their pages hear nothing of their own.
	floorIdleSessions = 20
	// floorSettle is how long the pages sit after connecting before the
	// measured phases.
	floorSettle = 3 * time.Second
	// floorQuiet bounds how long after the last change the bench waits for
	// every page to show the store's count (a busy server's last notices
	// and fetches take a while; a lost one never comes).
	floorQuiet = 30 * time.Second
)

// refresher is a page's schedule of fetches of one kind, as static/js/live.js's
// refresher: soon asks for one within 50 ms plus a random moment up to
// spread, at least gap after the last; one asked for while a fetch of the
// page is under way goes once it ends.
type refresher struct {
	gap, jitter time.Duration

	mu       sync.Mutex
	timer    *time.Timer
	last     time.Time
	deferred bool
}

func (r *refresher) soon(p *floorPage, spread time.Duration, fetch func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.timer != nil {
		return
	}
	if spread == 0 {
		spread = r.jitter
	}
	wait := max(0, time.Until(r.last.Add(r.gap))) + 50*time.Millisecond + rand.N(spread)
	r.timer = time.AfterFunc(wait, func() {
		r.mu.Lock()
		r.timer = nil
		if p.fetching.Load() > 0 {
			r.deferred = true
			r.mu.Unlock()
			return
		}
		r.last = time.Now()
		r.mu.Unlock()
		fetch()
	})
}

// settled is told when a fetch of the page ended.
func (r *refresher) settled(p *floorPage, fetch func()) {
	r.mu.Lock()
	again := r.deferred && p.fetching.Load() == 0
	r.deferred = false
	r.mu.Unlock()
	if again {
		r.soon(p, 0, fetch)
	}
}

func (r *refresher) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.timer != nil {
		r.timer.Stop()
	}
}

// floorPage is one open page: a websocket, and the fragments it fetches.
type floorPage struct {
	user       string
	supervisor bool
	client     *http.Client
	conn       *websocket.Conn
	fetchOn    *atomic.Bool // off: the page only holds its websocket
	fetches    *atomic.Int64
	frames     *atomic.Int64 // websocket messages every page read
	fetching   atomic.Int64
	mine       refresher
	others     refresher
	poll       *time.Ticker
	done       chan struct{}
	err        error

	// shown is the ready count the page shows for the queue: the last
	// that a notice or a fetched fragment said, whichever came last; but
	// a fragment whose request went out before the last notice came shows
	// the notice's again (static/js/counts.js, after a swap).
	mu      sync.Mutex
	shown   int64
	known   bool
	heardAt time.Time
	heard   int64
}

// readyRE finds a queue card's claimable count in the home fragment, and
// the ready cell of a supervisor's stats row.
var (
	homeReadyRE  = regexp.MustCompile(`data-testid="ready-count">(\d+)<`)
	statsReadyRE = regexp.MustCompile(`data-count="ready">(\d+)<`)
)

// fragments are the paths a page's refresh fetches.
func (p *floorPage) fragments() []string {
	if p.supervisor {
		return []string{"/supervisor/fragments/stats", "/supervisor/fragments/reservations"}
	}
	return []string{"/fragments/home"}
}

// fetch gets the page's fragments, as htmx swaps them in.
func (p *floorPage) fetch(ctx context.Context, base string) {
	if !p.fetchOn.Load() {
		return
	}
	p.fetching.Add(1)
	defer func() {
		p.fetching.Add(-1)
		p.mine.settled(p, func() { p.fetch(ctx, base) })
		p.others.settled(p, func() { p.fetch(ctx, base) })
	}()
	for _, path := range p.fragments() {
		p.fetches.Add(1)
		sent := time.Now()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		if err != nil {
			return
		}
		req.Header.Set("HX-Request", "true")
		resp, err := p.client.Do(req)
		if err != nil {
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		re := homeReadyRE
		if p.supervisor {
			re = statsReadyRE
		}
		if m := re.FindSubmatch(body); resp.StatusCode == http.StatusOK && m != nil {
			n, _ := strconv.ParseInt(string(m[1]), 10, 64)
			p.mu.Lock()
			p.shown, p.known = n, true
			if !p.heardAt.IsZero() && !p.heardAt.Before(sent) {
				p.shown = p.heard
			}
			p.mu.Unlock()
		}
	}
}

// show shows counts that came in a notice or the snapshot.
func (p *floorPage) show(n int64) {
	p.mu.Lock()
	p.shown, p.known, p.heard, p.heardAt = n, true, n, time.Now()
	p.mu.Unlock()
}

// pageNotice is what a page reads of a notice. Decoding only this, not
// every field of a notify.Notice, keeps the load generator light: it runs
// on the same cores as the server it measures.
type pageNotice struct {
	Type      string `json:"type"`
	Operator  string `json:"operator"`
	Ready     *int64 `json:"ready"`
	Claimable *int64 `json:"claimable"`
}

// read handles the page's notices until the socket ends, as onNotice does.
func (p *floorPage) read(ctx context.Context, base string, closing *atomic.Bool) {
	defer close(p.done)
	fetch := func() { p.fetch(ctx, base) }
	// Only a supervisor's fragments listen for others' changes
	// ("refresh-slow"): on an operator's page they fetch nothing.
	others := func() {
		if p.supervisor {
			p.others.soon(p, 0, fetch)
		}
	}
	for {
		_, b, err := p.conn.ReadMessage()
		if err != nil {
			if !closing.Load() {
				p.err = err
			}
			return
		}
		p.frames.Add(1)
		var frame struct {
			pageNotice
			Notices []pageNotice `json:"notices"`
		}
		if err := json.Unmarshal(b, &frame); err != nil {
			p.err = err
			return
		}
		ns := frame.Notices
		if frame.Type != notify.Frames {
			ns = []pageNotice{frame.pageNotice}
		}
		for _, n := range ns {
			switch n.Type {
			case notify.QueueChanged:
				if p.supervisor {
					p.show(*n.Ready)
				} else {
					p.show(*n.Claimable)
				}
				others()
			case notify.JobAvailable, notify.ReservationExpiring:
			case notify.Resync:
				p.mine.soon(p, 2*time.Second, fetch)
			case notify.QueueSettings:
				p.mine.soon(p, 0, fetch)
			case notify.ReservationCreated, notify.ReservationExtended, notify.ReservationReleased,
				notify.ReservationCompleted, notify.ReservationExpired:
				if n.Operator == p.user {
					p.mine.soon(p, 0, fetch)
				} else {
					others()
				}
			default:
				others()
			}
		}
	}
}

// runFloor opens c.floorPages operator pages and c.floorSupervisors
// supervisor pages on one instance, flows c.floorRate jobs a second
// through the queue, and has a fifth of the operators work them (claim,
// hold it c.floorHold, complete it and claim the next; wait c.floorRetry
// when nothing is waiting). It measures the same load twice: with the pages fetching as
// the shipped pages do, then with pages that only hold their websocket.
func runFloor(ctx context.Context, c config) (result, error) {
	r := result{Scenario: fmt.Sprintf("floor (%d operator and %d supervisor pages on one server, %d jobs/s)",
		c.floorPages, c.floorSupervisors, c.floorRate)}
	a, err := startApp(ctx, c)
	if err != nil {
		return r, err
	}
	defer a.close()
	const queue = "bench-floor"
	if err := a.queue(ctx, queue); err != nil {
		return r, err
	}
	producerToken, err := a.userWithToken(ctx, "floor-producer", users.Producer, queue)
	if err != nil {
		return r, err
	}

	// People: working operators each with a page and a token, idle
	// operators' pages as tabs of a few sessions, supervisors likewise.
	workers := max(1, c.floorPages/5)
	type person struct {
		name, token string
		jar         *cookiejar.Jar
	}
	signUp := func(name string, role users.Role, withToken bool) (person, error) {
		p := person{name: name}
		password := name + "-bench-pass"
		if err := a.user(ctx, name, role, password, queue); err != nil {
			return p, err
		}
		if withToken {
			tok, err := a.users.NewToken(ctx, name)
			if err != nil {
				return p, err
			}
			p.token = tok
		}
		jar, err := login(ctx, a.url, name, password)
		p.jar = jar
		return p, err
	}
	people := make([]person, workers+floorIdleSessions+min(floorIdleSessions, c.floorSupervisors))
	err = parallel(4, len(people), func(_, i int) error {
		var err error
		switch {
		case i < workers:
			people[i], err = signUp(fmt.Sprintf("floor-op-%04d", i), users.Operator, true)
		case i < workers+floorIdleSessions:
			people[i], err = signUp(fmt.Sprintf("floor-idle-%02d", i-workers), users.Operator, false)
		default:
			people[i], err = signUp(fmt.Sprintf("floor-super-%02d", i-workers-floorIdleSessions), users.Supervisor, false)
		}
		return err
	})
	if err != nil {
		return r, err
	}
	supervisors := people[workers+floorIdleSessions:]

	before, err := settledRSS(ctx, a.pid(), 3, 200*time.Millisecond)
	if err != nil {
		return r, err
	}

	// Open the pages.
	var fetchOn, pollOn, closing atomic.Bool
	var fetches, polls, frames atomic.Int64
	fetchOn.Store(true)
	pollOn.Store(true)
	total := c.floorPages + c.floorSupervisors
	pages := make([]*floorPage, total)
	wsURL := "ws" + strings.TrimPrefix(a.url, "http") + "/ws"
	pctx, stopPages := context.WithCancel(ctx)
	defer func() {
		stopPages()
		closing.Store(true)
		for _, p := range pages {
			if p != nil {
				p.poll.Stop()
				p.mine.stop()
				p.others.stop()
				_ = p.conn.Close()
			}
		}
	}()
	transport := &http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: 64}
	defer transport.CloseIdleConnections()
	err = parallel(dialers, total, func(_, i int) error {
		var who person
		supervisor := i >= c.floorPages
		switch {
		case supervisor:
			who = supervisors[(i-c.floorPages)%len(supervisors)]
		case i < workers:
			who = people[i]
		default:
			who = people[workers+i%floorIdleSessions]
		}
		conn, err := openSocket(ctx, socketDialer(who.jar), wsURL, a.url)
		if err != nil {
			return fmt.Errorf("page %d: %w", i, err)
		}
		p := &floorPage{user: who.name, supervisor: supervisor, conn: conn, fetchOn: &fetchOn, fetches: &fetches, frames: &frames,
			client: &http.Client{Transport: transport, Jar: who.jar, Timeout: 30 * time.Second},
			mine:   refresher{jitter: 200 * time.Millisecond}, others: refresher{gap: time.Second, jitter: 400 * time.Millisecond},
			poll: time.NewTicker(c.floorPoll), done: make(chan struct{})}
		pages[i] = p
		// The snapshot first: its counts, then the catch-up fetch.
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		var snap struct {
			Type   string        `json:"type"`
			Queues []tasks.Stats `json:"queues"`
		}
		if err := conn.ReadJSON(&snap); err != nil || snap.Type != "snapshot" {
			return fmt.Errorf("page %d: no snapshot (%v)", i, err)
		}
		_ = conn.SetReadDeadline(time.Time{})
		for _, q := range snap.Queues {
			switch {
			case q.Queue != queue:
			case supervisor:
				p.show(q.Ready)
			default:
				p.show(q.Claimable())
			}
		}
		fetch := func() { p.fetch(pctx, a.url) }
		p.mine.soon(p, 2*time.Second, fetch)
		go p.read(pctx, a.url, &closing)
		go func() {
			// People open their pages at different moments, so their polls
			// are spread over the interval, not all in step with the
			// bench's opening of the pages.
			select {
			case <-time.After(rand.N(c.floorPoll)):
				p.poll.Reset(c.floorPoll)
			case <-p.done:
				return
			}
			for {
				select {
				case <-p.poll.C:
					if pollOn.Load() {
						polls.Add(1)
						fetch()
					}
				case <-p.done:
					return
				}
			}
		}()
		return nil
	})
	if err != nil {
		return r, err
	}
	if err := sleep(ctx, floorSettle); err != nil {
		return r, err
	}
	after, err := settledRSS(ctx, a.pid(), 3, 500*time.Millisecond)
	if err != nil {
		return r, err
	}

	// The work: a producer at c.floorRate jobs/s, and the working operators.
	wctx, stopWork := context.WithCancel(ctx)
	defer stopWork()
	var wg sync.WaitGroup
	var workErr atomic.Pointer[error]
	fail := func(err error) {
		if err != nil && !errors.Is(err, context.Canceled) {
			workErr.CompareAndSwap(nil, &err)
		}
	}
	// Calls before the first phase count in warm-up recorders.
	claimRec, completeRec := &atomic.Pointer[recorder]{}, &atomic.Pointer[recorder]{}
	claimRec.Store(newRecorder("claim"))
	completeRec.Store(newRecorder("complete"))
	api := &http.Client{Transport: transport, Timeout: 30 * time.Second}
	var counts floorCounts
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Second / time.Duration(c.floorRate))
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-wctx.Done():
				return
			case <-tick.C:
			}
			if _, err := call(wctx, api, a.url, http.MethodPost, "/api/v1/queues/"+queue+"/jobs", producerToken, newJob(i), nil); err != nil {
				fail(err)
				return
			}
		}
	}()
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fail(floorWork(wctx, c, api, a.url, queue, people[i].token, claimRec, completeRec, &counts))
		}()
	}

	// Two phases of the same load: the shipped pages, then pages that only
	// hold their websocket.
	type phase struct {
		claim, complete summary
		fetches, frames int64
		calls           int64
		seconds         float64
		cores           []float64
	}
	redisPID, err := redisPID(ctx, a.rdb)
	if err != nil {
		return r, err
	}
	measure := func(fetching bool) (phase, error) {
		fetchOn.Store(fetching)
		if err := sleep(ctx, floorSettle); err != nil {
			return phase{}, err
		}
		claimRec.Store(newRecorder("claim"))
		completeRec.Store(newRecorder("complete"))
		f0, fr0 := fetches.Load(), frames.Load()
		c0, err := redisCalls(ctx, a.rdb)
		if err != nil {
			return phase{}, err
		}
		cpu := startCPU(a.pid(), redisPID, os.Getpid())
		t0 := time.Now()
		if err := sleep(ctx, c.floorPhase); err != nil {
			return phase{}, err
		}
		c1, err := redisCalls(ctx, a.rdb)
		if err != nil {
			return phase{}, err
		}
		calls, _, _ := callsSince(c0, c1)
		return phase{claim: claimRec.Load().summary(), complete: completeRec.Load().summary(),
			fetches: fetches.Load() - f0, frames: frames.Load() - fr0, calls: calls, seconds: time.Since(t0).Seconds(), cores: cpu.cores()}, nil
	}
	shipped, err := measure(true)
	if err != nil {
		return r, err
	}
	socketsOnly, err := measure(false)
	if err != nil {
		return r, err
	}

	// Stop the work and the polls (a poll would mend a lost refresh), let
	// the last notices and the fetches they cause land, and compare what
	// every page shows with the store.
	fetchOn.Store(true)
	pollOn.Store(false)
	stopWork()
	wg.Wait()
	if p := workErr.Load(); p != nil {
		return r, *p
	}
	// The store is read afresh each time: a call of the work under way
	// when it stopped may land on the server later still.
	var st tasks.Stats
	stale := func() (int, error) {
		var err error
		if st, err = a.tasks.Stats(ctx, queue); err != nil {
			return 0, err
		}
		n := 0
		for _, p := range pages {
			want := st.Claimable()
			if p.supervisor {
				want = st.Ready
			}
			p.mu.Lock()
			if !p.known || p.shown != want {
				n++
			}
			p.mu.Unlock()
		}
		return n, nil
	}
	quiet := time.Now()
	left, err := stale()
	for deadline := quiet.Add(floorQuiet); err == nil && left > 0 && time.Now().Before(deadline); left, err = stale() {
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return r, err
		}
	}
	if err != nil {
		return r, err
	}
	settled := time.Since(quiet)
	dropped := 0
	for _, p := range pages {
		select {
		case <-p.done:
			dropped++
		default:
		}
	}

	shipped.claim.Op, shipped.complete.Op = "claim (pages fetching)", "complete & next (pages fetching)"
	socketsOnly.claim.Op, socketsOnly.complete.Op = "claim (pages hold websockets only)", "complete & next (pages hold websockets only)"
	r.Ops = []summary{shipped.claim, shipped.complete, socketsOnly.claim, socketsOnly.complete}
	a.checkQuiet(&r)
	r.check("no page's websocket dropped", dropped == 0, "%d of %d", dropped, total)
	r.check("no refresh lost: every page ends showing the current ready count", left == 0,
		"%d of %d pages show another count than the store's %d after %s", left, total, st.Claimable(), floorQuiet)
	perSecond := func(n int64, p phase) float64 { return float64(n) / p.seconds }
	r.fig("pages", float64(total), "")
	r.fig("working operators", float64(workers), "")
	r.fig("claims that found nothing", float64(counts.emptyClaims.Load()), "")
	r.fig("completes that claimed the next job", float64(counts.withNext.Load()), "")
	r.fig("completes that found no next job", float64(counts.withoutNext.Load()), "")
	r.fig("polls (every page, every phase)", float64(polls.Load()), "")
	r.fig("after the work: time until every page showed the store's count", settled.Seconds(), "s")
	r.fig("fragment GETs/s, pages fetching", perSecond(shipped.fetches, shipped), "")
	r.fig("Redis commands/s, pages fetching", perSecond(shipped.calls, shipped), "")
	r.fig("Redis commands/s, pages hold websockets only", perSecond(socketsOnly.calls, socketsOnly), "")
	r.fig("claimdesk CPU, pages fetching", shipped.cores[0], "cores")
	r.fig("claimdesk CPU, pages hold websockets only", socketsOnly.cores[0], "cores")
	r.fig("claimdesk CPU per 1,000 pages, pages fetching", shipped.cores[0]*1000/float64(total), "cores")
	r.fig("websocket messages/s to all pages, pages fetching", perSecond(shipped.frames, shipped), "")
	r.fig("claimdesk CPU per websocket message, pages hold websockets only (all its work ÷ messages)",
		socketsOnly.cores[0]*1e6/max(1, perSecond(socketsOnly.frames, socketsOnly)), "µs")
	r.fig("redis-server CPU, pages fetching", shipped.cores[1], "cores")
	r.fig("bench (load generator) CPU, pages fetching", shipped.cores[2], "cores")
	r.fig("server memory per open page", float64(after-before)/float64(total)/1024, "KiB")
	r.atMost("claim p99, pages fetching", float64(shipped.claim.P99), 100, "ms")
	r.atMost("complete & next p99, pages fetching", float64(shipped.complete.P99), 100, "ms")
	r.atMost("Redis commands/s: pages fetching ÷ websockets only",
		perSecond(shipped.calls, shipped)/max(1, perSecond(socketsOnly.calls, socketsOnly)), 2, "×")
	return r, nil
}

// floorCounts counts which way the working operators' calls went.
type floorCounts struct {
	emptyClaims, withNext, withoutNext atomic.Int64
}

// between is a random moment in [span[0], span[1]).
func between(span [2]time.Duration) time.Duration {
	return span[0] + rand.N(span[1]-span[0])
}

// floorWork is one working operator: claim, hold the job a while, then
// complete it and claim the next in one call; with nothing waiting, wait a
// little and claim again.
func floorWork(ctx context.Context, c config, cl *http.Client, base, queue, token string, claims, completes *atomic.Pointer[recorder], n *floorCounts) error {
	type claimed struct {
		Job         tasks.Job
		Reservation struct{ Token string }
	}
	var held *claimed
	for {
		if held == nil {
			var got claimed
			t0 := time.Now()
			status, err := call(ctx, cl, base, http.MethodPost, "/api/v1/queues/"+queue+"/claim", token, nil, &got)
			if ctx.Err() != nil {
				return nil
			}
			if err != nil {
				return err
			}
			claims.Load().add(t0, time.Since(t0))
			if status == http.StatusOK {
				held = &got
				continue
			}
			n.emptyClaims.Add(1)
			if err := sleep(ctx, between(c.floorRetry)); err != nil {
				return nil
			}
			continue
		}
		if err := sleep(ctx, between(c.floorHold)); err != nil {
			return nil
		}
		var out struct{ Next *claimed }
		in := map[string]any{"token": held.Reservation.Token, "result": map[string]any{"approved": true}}
		t0 := time.Now()
		_, err := call(ctx, cl, base, http.MethodPost, "/api/v1/jobs/"+url.PathEscape(held.Job.ID)+"/complete?next=true", token, in, &out)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		completes.Load().add(t0, time.Since(t0))
		held = out.Next
		if held != nil {
			n.withNext.Add(1)
			continue
		}
		n.withoutNext.Add(1)
		if err := sleep(ctx, between(c.floorRetry)); err != nil {
			return nil
		}
	}
}
