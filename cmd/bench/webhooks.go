package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"claimdesk/client"
	"claimdesk/internal/desk"
	"claimdesk/internal/durable"
	"claimdesk/internal/tasks"
	"claimdesk/internal/users"
	"claimdesk/internal/webhooks"
)

// How long the webhooks scenario waits for deliveries before it gives up.
const (
	hookWarmupWait = 30 * time.Second
	hookRoundWait  = 60 * time.Second
)

// runWebhooks measures webhooks on the real server, delivering to a
// receiver on loopback that verifies every delivery with the Go client's
// ParseWebhook, as a receiver would.
//
// The cost: operators (c.concurrency, each its own user and connection)
// claim and complete c.webhookJobs jobs through the API as fast as they
// go, in each of four rounds taking turns (A B A B), so that the machine's
// noise falls on both alike: A, queues no endpoint listens to; B, queues
// an endpoint listens to for job.completed. The two rounds of each kind
// are summed: Redis commands, µs inside Redis (INFO commandstats) and
// redis-server and claimdesk CPU per job, the outbox's and the
// deliverer's work included (each B round ends once its deliveries are
// made and recorded).
//
// The latency: c.webhookJobs more jobs, their claims paced at
// c.webhookRate a second, and the time from each change to its first
// delivery's arrival. The throughput: with the server stopped,
// c.webhookBacklog jobs are completed straight through the Store; the
// server started again delivers them.
func runWebhooks(ctx context.Context, c config) (result, error) {
	r := result{Scenario: "webhooks (real server, a verifying receiver on loopback)"}
	_, loopback, _ := net.ParseCIDR("127.0.0.0/8")
	a, err := startApp(ctx, c, "CLAIMDESK_WEBHOOK_ALLOW_NETWORKS="+loopback.String())
	if err != nil {
		return r, err
	}
	defer a.close()
	rc, err := startReceiver()
	if err != nil {
		return r, err
	}
	defer rc.close()

	const warmup, steady, backlog = "hooks-warmup", "hooks-steady", "hooks-backlog"
	rounds := []struct {
		queue     string
		listening bool
	}{{"hooks-none-1", false}, {"hooks-listening-1", true}, {"hooks-none-2", false}, {"hooks-listening-2", true}}
	// The queues the operators work through the API, those the endpoint
	// listens to, and how many jobs each gets.
	worked := []string{warmup, steady}
	listened := []string{warmup, steady, backlog}
	jobs := map[string]int{warmup: 1, steady: c.webhookJobs, backlog: c.webhookBacklog}
	for _, round := range rounds {
		worked = append(worked, round.queue)
		jobs[round.queue] = c.webhookJobs
		if round.listening {
			listened = append(listened, round.queue)
		}
	}
	for _, q := range worked {
		if err := fillInvoices(ctx, a.tasks, q, jobs[q]); err != nil {
			return r, err
		}
	}
	// The backlog's jobs come while the server is stopped.
	if err := fillInvoices(ctx, a.tasks, backlog, 0); err != nil {
		return r, err
	}
	ops := make([]*operator, c.concurrency)
	for i := range ops {
		name := fmt.Sprintf("bench-hooks-op-%02d", i)
		token, err := a.userWithToken(ctx, name, users.Operator, worked...)
		if err != nil {
			return r, err
		}
		ops[i] = &operator{name: name, token: token, client: newHTTPClient(2)}
		defer ops[i].client.CloseIdleConnections()
	}
	work := func(queue string, p pace, rec *recorder) (time.Duration, error) {
		t0 := time.Now()
		err := parallel(len(ops), len(ops), func(w, _ int) error { return workQueue(ctx, ops[w], a.url, queue, p, rec) })
		return time.Since(t0), err
	}

	// The endpoint, registered as the command line registers one: its
	// queues' outboxes on from then on. The server reads the registry
	// every few seconds: a first job completed and delivered says it has.
	sealer, err := webhooks.NewSealer(webhookKey)
	if err != nil {
		return r, err
	}
	hooks := webhooks.NewStore(a.rdb, a.tasks, sealer, &webhooks.Egress{Allow: []*net.IPNet{loopback}}, durable.Policy{})
	dk := desk.New(desk.Config{Redis: a.rdb, Tasks: a.tasks, Users: a.users, Webhooks: hooks,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ep, secret, err := dk.AddWebhook(ctx, desk.CommandLine, webhooks.NewEndpoint{URL: rc.url + "/hook",
		Events: []tasks.EventType{tasks.EventJobCompleted}, Queues: listened})
	if err != nil {
		return r, err
	}
	rc.setSecret(secret)
	if _, err := work(warmup, pace{}, newRecorder("warm-up")); err != nil {
		return r, err
	}
	if err := rc.wait(ctx, warmup, 1, hookWarmupWait); err != nil {
		return r, err
	}
	// delivered waits until every event of the queue has arrived and every
	// delivery is recorded.
	delivered := func(queue string) error {
		if err := rc.wait(ctx, queue, jobs[queue], hookRoundWait); err != nil {
			return err
		}
		return settled(ctx, hooks, ep.ID, hookRoundWait)
	}

	// The cost, in turns.
	redisPID, err := redisPID(ctx, a.rdb)
	if err != nil {
		return r, err
	}
	type cost struct {
		jobs, commands, usec int64
		evalsha              int64 // calls of the deliveries' scripts
		redisCPU, appCPU     time.Duration
		busy                 time.Duration // the rounds' time
	}
	var costs [2]cost // none, listening
	cycles := [2]*recorder{newRecorder("API claim + complete, no endpoint"), newRecorder("API claim + complete, an endpoint listening")}
	for _, round := range rounds {
		kind := 0
		if round.listening {
			kind = 1
		}
		before, err := redisCalls(ctx, a.rdb)
		if err != nil {
			return r, err
		}
		redis0, _ := cpuTime(redisPID)
		app0, _ := cpuTime(a.pid())
		took, err := work(round.queue, pace{}, cycles[kind])
		if err != nil {
			return r, err
		}
		if round.listening {
			if err := delivered(round.queue); err != nil {
				return r, err
			}
		}
		after, err := redisCalls(ctx, a.rdb)
		if err != nil {
			return r, err
		}
		redis1, _ := cpuTime(redisPID)
		app1, _ := cpuTime(a.pid())
		calls, usec, perCommand := callsSince(before, after)
		k := &costs[kind]
		k.jobs += int64(jobs[round.queue])
		k.commands += calls
		k.usec += usec
		k.evalsha += perCommand["evalsha"][0]
		k.redisCPU += redis1 - redis0
		k.appCPU += app1 - app0
		k.busy += took
	}

	// The latency, at a steady pace.
	paced := newRecorder(fmt.Sprintf("API claim + complete, %d/s, an endpoint listening", c.webhookRate))
	p := pacer(c.webhookRate)
	_, err = work(steady, p, paced)
	p.stop()
	if err != nil {
		return r, err
	}
	if err := delivered(steady); err != nil {
		return r, err
	}
	a.checkQuiet(&r)

	// The backlog: events made while no instance runs, delivered once one
	// starts.
	a.stop()
	if err := fillInvoices(ctx, a.tasks, backlog, c.webhookBacklog); err != nil {
		return r, err
	}
	held, err := claimAll(ctx, a.tasks, backlog, c.webhookBacklog, c.concurrency, newRecorder("claim"))
	if err != nil {
		return r, err
	}
	if err := completeAll(ctx, a.tasks, held, c.concurrency, newRecorder("complete")); err != nil {
		return r, err
	}
	if err := a.restart(ctx); err != nil {
		return r, err
	}
	if err := delivered(backlog); err != nil {
		return r, err
	}
	a.checkQuiet(&r)

	// What every queue ended with, and what the receiver got.
	var wrong []string
	wantEvents, stray := 0, 0
	got := rc.report(backlog)
	for _, q := range append(worked, backlog) {
		st, err := a.tasks.Stats(ctx, q)
		if err != nil {
			return r, err
		}
		if st.Completed != int64(jobs[q]) || st.Ready != 0 || st.Reserved != 0 {
			wrong = append(wrong, fmt.Sprintf("%s: completed %d of %d, ready %d, reserved %d", q, st.Completed, jobs[q], st.Ready, st.Reserved))
		}
		box, err := a.tasks.Outbox(ctx, q)
		if err != nil {
			return r, err
		}
		if box.Waiting != 0 || box.Lost != 0 {
			wrong = append(wrong, fmt.Sprintf("%s: %d events waiting in its outbox, %d lost", q, box.Waiting, box.Lost))
		}
		if slices.Contains(listened, q) {
			wantEvents += jobs[q]
		} else {
			stray += got.perQueue[q]
		}
	}
	r.check("every job completed, every outbox handed on", len(wrong) == 0, "%s", strings.Join(wrong, "; "))
	r.check("no event of a queue no endpoint listens to", stray == 0, "%d events", stray)
	r.check("every delivery verified (client.ParseWebhook)", got.bad == 0, "%d of %d requests refused", got.bad, got.requests)
	r.check("every event delivered exactly once", got.events == wantEvents && got.requests == wantEvents,
		"%d events, %d delivered in %d requests", wantEvents, got.events, got.requests)

	var summaries [2]summary
	for kind, rec := range cycles {
		summaries[kind] = rec.summary()
		if costs[kind].busy > 0 { // its rounds', not the span from the first to the last
			summaries[kind].PerSecond = float64(summaries[kind].Calls) / costs[kind].busy.Seconds()
		}
	}
	unpaced := rc.latencies("change → delivery, operators as fast as they go", rounds[1].queue, rounds[3].queue)
	steadily := rc.latencies(fmt.Sprintf("change → delivery, %d/s", c.webhookRate), steady)
	r.Ops = []summary{summaries[0], summaries[1], unpaced, paced.summary(), steadily}
	per := func(k cost, v float64) float64 { return v / float64(max(k.jobs, 1)) }
	none, on := costs[0], costs[1]
	r.fig("API operators", float64(len(ops)), "")
	r.fig("jobs per round (four rounds, then one paced)", float64(c.webhookJobs), "")
	for _, f := range []struct {
		name string
		v    func(k cost) float64
		unit string
	}{
		{"Redis commands per job, scripts' own calls included", func(k cost) float64 { return per(k, float64(k.commands)) }, ""},
		{"µs inside Redis per job (INFO commandstats)", func(k cost) float64 { return per(k, float64(k.usec)) }, "µs"},
		{"redis-server CPU per job", func(k cost) float64 { return per(k, float64(k.redisCPU.Microseconds())) }, "µs"},
		{"claimdesk CPU per job", func(k cost) float64 { return per(k, float64(k.appCPU.Microseconds())) }, "µs"},
	} {
		r.fig(f.name+", no endpoint", f.v(none), f.unit)
		r.fig(f.name+", an endpoint listening", f.v(on), f.unit)
		r.fig(f.name+": listening ÷ none", f.v(on)/f.v(none), "×")
	}
	r.fig("calls of the deliveries' scripts (EVALSHA) per job, an endpoint listening", per(on, float64(on.evalsha)), "")
	r.fig("backlog delivered (events made while no instance ran)", float64(c.webhookBacklog), "events")
	r.fig("backlog: deliveries/s, first arrival to last", got.backlogRate, "/s")
	r.atMost(fmt.Sprintf("change → first delivery attempt p99 at %d/s", c.webhookRate), float64(steadily.P99), 1000, "ms")
	return r, nil
}

// fillInvoices makes the queue (a long lease, attempts to spare) and
// enqueues n jobs like the http scenario's, 1000 per call.
func fillInvoices(ctx context.Context, store *tasks.Store, queue string, n int) error {
	if _, err := store.PutQueue(ctx, tasks.Queue{Name: queue, LeaseSeconds: 60, MaxAttempts: 1000}); err != nil {
		return err
	}
	for first := 0; first < n; first += tasks.MaxBatch {
		jobs := make([]tasks.NewJob, min(tasks.MaxBatch, n-first))
		for k := range jobs {
			b := newJob(first + k)
			payload, err := json.Marshal(b.Payload)
			if err != nil {
				return err
			}
			jobs[k] = tasks.NewJob{Title: b.Title, Payload: payload}
		}
		if _, err := store.Enqueue(ctx, queue, "bench", jobs); err != nil {
			return err
		}
	}
	return nil
}

// pace spreads claims over time: at most perSecond of them, shared by
// every caller of wait; 0, as fast as they come.
type pace struct{ t *time.Ticker }

func pacer(perSecond int) pace {
	if perSecond <= 0 {
		return pace{}
	}
	return pace{time.NewTicker(time.Second / time.Duration(perSecond))}
}

// wait waits for the next claim's turn.
func (p pace) wait(ctx context.Context) error {
	if p.t == nil {
		return ctx.Err()
	}
	select {
	case <-p.t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p pace) stop() {
	if p.t != nil {
		p.t.Stop()
	}
}

// workQueue claims and completes the queue's jobs through the API, each
// claim in its turn, until a claim finds none, timing each claim +
// complete.
func workQueue(ctx context.Context, op *operator, base, queue string, p pace, rec *recorder) error {
	for {
		if err := p.wait(ctx); err != nil {
			return err
		}
		var got struct {
			Job         tasks.Job
			Reservation struct{ Token string }
		}
		t0 := time.Now()
		status, err := call(ctx, op.client, base, http.MethodPost, "/api/v1/queues/"+queue+"/claim", op.token, nil, &got)
		if err != nil {
			return err
		}
		if status == http.StatusNoContent {
			return nil
		}
		in := map[string]any{"token": got.Reservation.Token, "result": map[string]any{"approved": true}}
		if _, err := call(ctx, op.client, base, http.MethodPost, "/api/v1/jobs/"+url.PathEscape(got.Job.ID)+"/complete", op.token, in, nil); err != nil {
			return err
		}
		rec.add(t0, time.Since(t0))
	}
}

// settled waits until the endpoint has no delivery left to make.
func settled(ctx context.Context, hooks *webhooks.Store, endpoint string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		n, _, err := hooks.Pending(ctx, endpoint)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("webhook %s: %d deliveries still to make after %v", endpoint, n, timeout)
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return err
		}
	}
}

// receiver is a webhook endpoint on loopback: it verifies each delivery
// with the Go client, as a receiver would, notes when it arrived, and
// answers 204.
type receiver struct {
	url string
	srv *http.Server

	mu       sync.Mutex
	secrets  []string
	events   map[string]firstDelivery // by job id
	requests int
	bad      int
	perQueue map[string]int // events by queue
	arrived  chan struct{}  // closed and replaced at each event
}

// firstDelivery is when an event happened and its first delivery arrived.
type firstDelivery struct {
	queue        string
	happened, at time.Time
}

func startReceiver() (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	rc := &receiver{url: "http://" + ln.Addr().String(), events: map[string]firstDelivery{}, perQueue: map[string]int{}, arrived: make(chan struct{})}
	rc.srv = &http.Server{Handler: http.HandlerFunc(rc.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = rc.srv.Serve(ln) }()
	return rc, nil
}

func (rc *receiver) close() { _ = rc.srv.Close() }

func (rc *receiver) setSecret(secret string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.secrets = []string{secret}
}

func (rc *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	now := time.Now()
	rc.mu.Lock()
	secrets := rc.secrets
	rc.mu.Unlock()
	var data struct{ ID, Queue string }
	event, verr := client.ParseWebhook(secrets, req.Header, body, now, 0)
	if verr == nil {
		verr = json.Unmarshal(event.Data, &data)
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.requests++
	if err != nil || verr != nil || data.ID == "" {
		rc.bad++
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	if _, seen := rc.events[data.ID]; !seen {
		rc.events[data.ID] = firstDelivery{queue: data.Queue, happened: event.Timestamp, at: now}
		rc.perQueue[data.Queue]++
		close(rc.arrived)
		rc.arrived = make(chan struct{})
	}
	w.WriteHeader(http.StatusNoContent)
}

// wait waits until n events of the queue have arrived, for up to timeout.
func (rc *receiver) wait(ctx context.Context, queue string, n int, timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		rc.mu.Lock()
		got, arrived := rc.perQueue[queue], rc.arrived
		rc.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-arrived:
		case <-deadline.C:
			return fmt.Errorf("%d of %d events of %s delivered within %v", got, n, queue, timeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// latencies is the time from each change of the queues to its first
// delivery's arrival, as an operation's summary whose calls per second are
// deliveries per second: the events over the time from each queue's first
// change to its last arrival, summed over the queues.
func (rc *receiver) latencies(op string, queues ...string) summary {
	rec := newRecorder(op)
	var span time.Duration
	rc.mu.Lock()
	for _, q := range queues {
		var first, last time.Time
		for _, a := range rc.events {
			if a.queue != q {
				continue
			}
			rec.add(a.happened, a.at.Sub(a.happened))
			if first.IsZero() || a.happened.Before(first) {
				first = a.happened
			}
			if a.at.After(last) {
				last = a.at
			}
		}
		span += last.Sub(first)
	}
	rc.mu.Unlock()
	s := rec.summary()
	if span > 0 {
		s.PerSecond = float64(s.Calls) / span.Seconds()
	}
	return s
}

// receiverReport is what the receiver got, in all.
type receiverReport struct {
	events, requests, bad int
	perQueue              map[string]int
	// backlogRate is the backlog queue's deliveries per second, from the
	// first's arrival to the last's.
	backlogRate float64
}

func (rc *receiver) report(backlog string) receiverReport {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := receiverReport{events: len(rc.events), requests: rc.requests, bad: rc.bad, perQueue: maps.Clone(rc.perQueue)}
	var first, last time.Time
	for _, a := range rc.events {
		if a.queue != backlog {
			continue
		}
		if first.IsZero() || a.at.Before(first) {
			first = a.at
		}
		if a.at.After(last) {
			last = a.at
		}
	}
	if span := last.Sub(first); span > 0 {
		out.backlogRate = float64(rc.perQueue[backlog]-1) / span.Seconds()
	}
	return out
}
