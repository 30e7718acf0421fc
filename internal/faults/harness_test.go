package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"claimdesk/internal/tasks/taskstest"
)

// binary is the claimdesk server TestMain builds.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "claimdesk-faults-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "faults:", err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "claimdesk")
	out, err := exec.Command("go", "build", "-o", binary, "claimdesk/cmd/web").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "faults: build claimdesk: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// queue is the queue every fault test works: a short lease, so that a
// reservation whose claim answer was lost comes back during the drain.
const queue = "faulty"

// deployment is Redis and two claimdesk instances serving from it.
type deployment struct {
	t        *testing.T
	redisURL string
	env      []string
	webs     [2]*web
	producer string // API tokens
	super    string
	ops      []operator
}

type operator struct{ name, token string }

// deploy makes the queue, the users and their tokens with claimdesk's own
// commands, and starts two instances.
func deploy(t *testing.T, redisURL string, operators int, extraEnv ...string) *deployment {
	t.Helper()
	d := &deployment{t: t, redisURL: redisURL}
	d.env = append([]string{"CLAIMDESK_REDIS_URL=" + redisURL, "CLAIMDESK_CRON_INTERVAL=1s",
		"CLAIMDESK_RATE_USER=100000/s", "CLAIMDESK_RATE_ADDRESS=100000/s", "HOME=" + t.TempDir()}, extraEnv...)
	d.admin("queue", "add", queue, "--lease-seconds", "10", "--max-attempts", "20")
	d.admin("user", "add", "pat", "--role", "producer")
	d.producer = d.admin("token", "add", "pat")
	d.admin("user", "add", "sam", "--role", "supervisor", "--password-stdin")
	d.super = d.admin("token", "add", "sam")
	for i := range operators {
		name := fmt.Sprintf("op%d", i)
		d.admin("user", "add", name, "--role", "operator", "--queues", queue, "--password-stdin")
		d.ops = append(d.ops, operator{name, d.admin("token", "add", name)})
	}
	for i := range d.webs {
		d.webs[i] = &web{t: t, addr: freeAddr(t), env: d.env, log: filepath.Join(t.TempDir(), fmt.Sprintf("web%d.log", i))}
		d.webs[i].start()
		t.Cleanup(d.webs[i].kill)
	}
	return d
}

// admin runs a claimdesk command (a password on its standard input) and
// returns what it printed.
func (d *deployment) admin(args ...string) string {
	d.t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = d.env
	cmd.Stdin = strings.NewReader("faults-password-1\n")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		d.t.Fatalf("claimdesk %s: %v: %s", strings.Join(args, " "), err, errOut.String())
	}
	return strings.TrimSpace(out.String())
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// web is one claimdesk serve process.
type web struct {
	t    *testing.T
	addr string
	env  []string
	log  string
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// start starts the process and waits until it answers /healthz.
func (w *web) start() {
	w.t.Helper()
	logFile, err := os.OpenFile(w.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		w.t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(binary, "serve")
	cmd.Env = append(slices.Clone(w.env), "CLAIMDESK_ADDR="+w.addr)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	taskstest.DieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	w.mu.Lock()
	w.cmd, w.done = cmd, done
	w.mu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := http.Get("http://" + w.addr + "/healthz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return
			}
		}
		select {
		case <-done:
			w.t.Fatalf("claimdesk on %s exited at start:\n%s", w.addr, w.tail())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("claimdesk on %s did not answer within 30s:\n%s", w.addr, w.tail())
		}
	}
}

// kill ends the process with SIGKILL, as a crash would.
func (w *web) kill() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cmd == nil {
		return
	}
	_ = w.cmd.Process.Signal(syscall.SIGKILL)
	<-w.done
	w.cmd = nil
}

// tail is the end of the process's log.
func (w *web) tail() string {
	b, _ := os.ReadFile(w.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// client calls the API of both instances, taking turns, and keeps the
// tally every check needs.
type client struct {
	d    *deployment
	http *http.Client
	next atomic.Uint64

	mu       sync.Mutex
	statuses map[int]int
	failures []string // answers no client may ever get (5xx other than 503)
	connErrs int
	retries  int
	claimed  []time.Time // when claims got 200, in order
}

func newClient(d *deployment) *client {
	return &client{d: d, http: &http.Client{Timeout: 15 * time.Second}, statuses: map[int]int{}}
}

// call sends one request to one instance.
func (c *client) call(ctx context.Context, method, path, token string, body any, header map[string]string) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	w := c.d.webs[c.next.Add(1)%2]
	req, err := http.NewRequestWithContext(ctx, method, "http://"+w.addr+path, r)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := c.http.Do(req)
	if err != nil {
		c.mu.Lock()
		c.connErrs++
		c.mu.Unlock()
		return 0, nil, err
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	c.mu.Lock()
	c.statuses[res.StatusCode]++
	if res.StatusCode >= 500 && res.StatusCode != http.StatusServiceUnavailable {
		c.failures = append(c.failures, fmt.Sprintf("%s %s answered %d: %s", method, path, res.StatusCode, out))
	}
	c.mu.Unlock()
	return res.StatusCode, out, err
}

// retrying sends the request until an answer other than "try again"
// (no connection, 503, 429, a 5xx that is a failure anyway), to one
// instance after the other, as the retry contracts allow.
func (c *client) retrying(ctx context.Context, method, path, token string, body any, header map[string]string) (int, []byte) {
	backoff := 20 * time.Millisecond
	for {
		status, out, err := c.call(ctx, method, path, token, body, header)
		if err == nil && status < 500 && status != http.StatusTooManyRequests {
			return status, out
		}
		if ctx.Err() != nil {
			return 0, nil
		}
		c.mu.Lock()
		c.retries++
		c.mu.Unlock()
		time.Sleep(backoff)
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

// reservation is a claim some operator was answered 200.
type reservation struct {
	job, token, operator string
	reservedAt, deadline time.Time
}

// load is the work: producers adding jobs with idempotency keys, and
// operators claiming and completing them, until told to stop.
type load struct {
	c *client

	mu          sync.Mutex
	acked       map[string]string      // idempotency key → job id
	batches     map[string]bool        // batches acknowledged, by id
	claims      []reservation          // every claim answered 200
	completions map[string][]string    // job → operators answered 200 for its completion, one per reservation
	completedBy map[string]reservation // job → the reservation whose completion was answered
	lost        int                    // completions answered reservation_lost
	errs        []string
}

func newLoad(c *client) *load {
	return &load{c: c, acked: map[string]string{}, batches: map[string]bool{}, completions: map[string][]string{}, completedBy: map[string]reservation{}}
}

func (l *load) fail(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs = append(l.errs, fmt.Sprintf(format, args...))
}

// produce enqueues jobs until ctx ends, each with its own idempotency key
// and retried with it until acknowledged: a job sent is seen through.
func (l *load) produce(ctx context.Context, id int, pause time.Duration) {
	for n := 0; ctx.Err() == nil; n++ {
		key := fmt.Sprintf("p%d-%d", id, n)
		status, out := l.c.retrying(context.Background(), "POST", "/api/v1/queues/"+queue+"/jobs", l.c.d.producer,
			map[string]any{"title": "Job " + key, "idempotency_key": key}, nil)
		var res struct{ Job struct{ ID string } }
		if (status != 201 && status != 200) || json.Unmarshal(out, &res) != nil || res.Job.ID == "" {
			l.fail("enqueue %s answered %d: %s", key, status, out)
			continue
		}
		l.mu.Lock()
		if prev, ok := l.acked[key]; ok && prev != res.Job.ID {
			l.errs = append(l.errs, fmt.Sprintf("key %s answered job %s, then %s", key, prev, res.Job.ID))
		}
		l.acked[key] = res.Job.ID
		l.mu.Unlock()
		time.Sleep(pause)
	}
}

// produceBatches makes batches of size jobs until ctx ends, each job with
// its own idempotency key, so that a batch is retried as one until
// acknowledged.
func (l *load) produceBatches(ctx context.Context, size int, pause time.Duration) {
	for n := 0; ctx.Err() == nil; n++ {
		jobs := make([]map[string]any, size)
		keys := make([]string, size)
		for k := range jobs {
			keys[k] = fmt.Sprintf("b%d-%d", n, k)
			jobs[k] = map[string]any{"title": "Job " + keys[k], "idempotency_key": keys[k]}
		}
		status, out := l.c.retrying(context.Background(), "POST", "/api/v1/queues/"+queue+"/batches", l.c.d.producer,
			map[string]any{"title": fmt.Sprintf("Batch %d", n), "jobs": jobs}, nil)
		var res struct {
			Batch struct{ ID string }
			Jobs  []struct{ ID string }
		}
		if (status != 201 && status != 200) || json.Unmarshal(out, &res) != nil || res.Batch.ID == "" || len(res.Jobs) != size {
			l.fail("batch %d answered %d: %s", n, status, out)
			continue
		}
		l.mu.Lock()
		l.batches[res.Batch.ID] = true
		for k, j := range res.Jobs {
			if prev, ok := l.acked[keys[k]]; ok && prev != j.ID {
				l.errs = append(l.errs, fmt.Sprintf("key %s answered job %s, then %s", keys[k], prev, j.ID))
			}
			l.acked[keys[k]] = j.ID
		}
		l.mu.Unlock()
		time.Sleep(pause)
	}
}

// work claims and completes jobs until ctx ends.
func (l *load) work(ctx context.Context, op operator) {
	for n := 0; ctx.Err() == nil; n++ {
		key := fmt.Sprintf("%s-%d", op.name, n)
		status, out := l.c.retrying(ctx, "POST", "/api/v1/queues/"+queue+"/claim", op.token, nil,
			map[string]string{"Idempotency-Key": key})
		switch status {
		case 0:
			return
		case 204:
			time.Sleep(50 * time.Millisecond)
			continue
		case 200:
		default:
			l.fail("claim by %s answered %d: %s", op.name, status, out)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		var res struct {
			Job struct {
				ID         string    `json:"id"`
				ReservedAt time.Time `json:"reserved_at"`
			} `json:"job"`
			Reservation struct {
				Token    string    `json:"token"`
				Deadline time.Time `json:"deadline"`
			} `json:"reservation"`
		}
		if err := json.Unmarshal(out, &res); err != nil {
			l.fail("claim answer %s: %v", out, err)
			continue
		}
		r := reservation{res.Job.ID, res.Reservation.Token, op.name, res.Job.ReservedAt, res.Reservation.Deadline}
		l.c.mu.Lock()
		l.c.claimed = append(l.c.claimed, time.Now())
		l.c.mu.Unlock()
		l.mu.Lock()
		l.claims = append(l.claims, r)
		l.mu.Unlock()
		// The completion is retried until it is answered: 200 (again, if
		// the first took effect) or reservation_lost. A stop on the way
		// leaves it to the lease.
		status, out = l.c.retrying(context.Background(), "POST", "/api/v1/jobs/"+r.job+"/complete", op.token,
			map[string]any{"token": r.token}, nil)
		switch {
		case status == 200:
			l.mu.Lock()
			l.completions[r.job] = append(l.completions[r.job], r.token)
			l.completedBy[r.job] = r
			l.mu.Unlock()
		case status == 409 && bytes.Contains(out, []byte("reservation_lost")):
			l.mu.Lock()
			l.lost++
			l.mu.Unlock()
		default:
			l.fail("complete of %s by %s answered %d: %s", r.job, op.name, status, out)
		}
	}
}

// counts is what GET /api/v1/queues says of the queue.
type counts struct{ Ready, Scheduled, Reserved, Dead int }

func (l *load) counts(ctx context.Context) (counts, error) {
	status, out := l.c.retrying(ctx, "GET", "/api/v1/queues", l.c.d.super, nil, nil)
	var res struct {
		Queues []struct {
			Name string `json:"name"`
			counts
		} `json:"queues"`
	}
	if err := json.Unmarshal(out, &res); err != nil || status != 200 {
		return counts{}, fmt.Errorf("queues answered %d: %s", status, out)
	}
	for _, q := range res.Queues {
		if q.Name == queue {
			return q.counts, nil
		}
	}
	return counts{}, errors.New("the queue is gone")
}

// fault is one thing to break, at a time into the load; do breaks it and
// returns when the broken part was back (restarted, or replaced).
type fault struct {
	at   time.Duration
	name string
	do   func() (back time.Time)
}

// outage is what one fault cost: the longest time without a claim
// answered, from the fault to the first claim after the part was back,
// and how long that first claim took after it was back.
type outage struct {
	name            string
	stopped, resume time.Duration
}

// outageOf measures a fault from the times claims were answered.
func outageOf(name string, claimed []time.Time, struck, back time.Time) outage {
	o := outage{name: name, stopped: -1, resume: -1}
	prev := struck
	for _, at := range claimed {
		if at.Before(struck) {
			continue
		}
		o.stopped = max(o.stopped, at.Sub(prev))
		prev = at
		if at.After(back) {
			o.resume = at.Sub(back)
			return o
		}
	}
	return o
}

// plan is what run does: the load for loadFor while the faults strike.
type plan struct {
	loadFor time.Duration
	faults  []fault
	// checkAnswered: every claim answered 200 must be in its job's
	// history (a store that forgets nothing it answered).
	checkAnswered bool
	// batchSize: a fourth producer makes batches of so many jobs (0:
	// none).
	batchSize int
}

// run runs the load while the faults strike, then drains the queue, checks
// everything the package promises, and returns the load for the test's
// own checks.
func run(t *testing.T, d *deployment, p plan) *load {
	c := newClient(d)
	l := newLoad(c)
	begin := time.Now()
	produceCtx, stopProducing := context.WithTimeout(context.Background(), p.loadFor)
	defer stopProducing()
	workCtx, stopWorking := context.WithCancel(context.Background())
	defer stopWorking()
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() { l.produce(produceCtx, i, 20*time.Millisecond) })
	}
	if p.batchSize > 0 {
		wg.Go(func() { l.produceBatches(produceCtx, p.batchSize, 200*time.Millisecond) })
	}
	var ops sync.WaitGroup
	for _, op := range d.ops {
		ops.Go(func() { l.work(workCtx, op) })
	}

	type struck struct{ at, back time.Time }
	var struckAt []struck
	for _, f := range p.faults {
		time.Sleep(time.Until(begin.Add(f.at)))
		at := time.Now()
		struckAt = append(struckAt, struck{at, f.do()})
	}
	wg.Wait()

	// Drain: the operators go on until nothing is left in line or held.
	drainBy := time.Now().Add(90 * time.Second)
	var last counts
	for {
		n, err := l.counts(context.Background())
		if err == nil && n.Ready+n.Scheduled+n.Reserved == 0 {
			break
		}
		last = n
		if time.Now().After(drainBy) {
			t.Errorf("not drained within 90s: %+v, %v", last, err)
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	stopWorking()
	ops.Wait()

	c.mu.Lock()
	failures := slices.Clone(c.failures)
	c.mu.Unlock()
	for i, f := range failures {
		if i == 10 {
			t.Errorf("… and %d more", len(failures)-10)
			break
		}
		t.Errorf("an answer no client may get: %s", f)
	}
	for _, e := range l.errs {
		t.Error(e)
	}
	l.check(t, p.checkAnswered)
	if t.Failed() {
		for i, w := range d.webs {
			t.Logf("log of instance %d:\n%s", i, w.tail())
		}
	}
	var rec []string
	for i, f := range p.faults {
		o := outageOf(f.name, c.claimed, struckAt[i].at, struckAt[i].back)
		if o.resume < 0 {
			t.Errorf("no claim was answered after %s", f.name)
		}
		rec = append(rec, fmt.Sprintf("%s: claims stopped for at most %v, resumed %v after it was back",
			o.name, o.stopped.Round(10*time.Millisecond), o.resume.Round(10*time.Millisecond)))
	}
	t.Logf("%d jobs (%d batches) acknowledged and completed exactly once, %d operators, %d reservations, %d faults; %d answers 503, %d connection errors, %d retries, %d completions of expired reservations refused; %s",
		len(l.acked), len(l.batches), len(d.ops), len(l.claims), len(p.faults), c.statuses[503], c.connErrs, c.retries, l.lost, strings.Join(rec, "; "))
	return l
}

// historyEntry is one entry of a job's history.
type historyEntry struct {
	At       time.Time  `json:"at"`
	Action   string     `json:"action"`
	Actor    string     `json:"actor"`
	From     string     `json:"from"`
	To       string     `json:"to"`
	Deadline *time.Time `json:"deadline"`
}

// check compares what the clients were answered with what the store holds.
func (l *load) check(t *testing.T, checkAnswered bool) {
	t.Helper()
	ctx := context.Background()
	c := l.c
	claimsOf := map[string][]reservation{}
	for _, r := range l.claims {
		claimsOf[r.job] = append(claimsOf[r.job], r)
	}
	acked := map[string]bool{}
	for _, id := range l.acked {
		acked[id] = true
	}
	bad := 0
	report := func(format string, args ...any) {
		t.Helper()
		if bad++; bad <= 20 {
			t.Errorf(format, args...)
		}
	}
	// Every job in the store, whatever its state, was acknowledged.
	for _, state := range []string{"ready", "scheduled", "reserved", "completed", "dead", "canceled"} {
		for _, id := range c.jobs(t, state) {
			if !acked[id] {
				report("job %s (%s) was never acknowledged to a producer", id, state)
			}
		}
	}
	// Every batch acknowledged ended, its jobs all completed.
	for id := range l.batches {
		status, out := c.retrying(ctx, "GET", "/api/v1/batches/"+id, c.d.super, nil, nil)
		var b struct {
			State      string     `json:"state"`
			FinishedAt *time.Time `json:"finished_at"`
		}
		if status != 200 || json.Unmarshal(out, &b) != nil || b.State != "completed" || b.FinishedAt == nil {
			report("batch %s answered %d: %s, want it completed", id, status, out)
		}
	}
	for id := range acked {
		status, out := c.retrying(ctx, "GET", "/api/v1/jobs/"+id, c.d.super, nil, nil)
		var job struct {
			State       string `json:"state"`
			CompletedBy string `json:"completed_by"`
		}
		if status != 200 || json.Unmarshal(out, &job) != nil {
			report("job %s answered %d: %s", id, status, out)
			continue
		}
		if job.State != "completed" {
			report("acknowledged job %s is %s, not completed", id, job.State)
		}
		if tokens := l.completions[id]; len(tokens) != 1 {
			report("job %s: %d reservations were answered as completing it, want 1", id, len(tokens))
		} else if by := l.completedBy[id].operator; job.CompletedBy != by {
			report("job %s: completed by %q, but %s was answered that it completed it", id, job.CompletedBy, by)
		}
		status, out = c.retrying(ctx, "GET", "/api/v1/jobs/"+id+"/history", c.d.super, nil, nil)
		var h struct {
			History []historyEntry `json:"history"`
		}
		if status != 200 || json.Unmarshal(out, &h) != nil {
			report("history of %s answered %d: %s", id, status, out)
			continue
		}
		if msg := checkHistory(h.History); msg != "" {
			report("job %s: %s", id, msg)
		}
		if checkAnswered {
			for _, r := range claimsOf[id] {
				if !slices.ContainsFunc(h.History, func(e historyEntry) bool {
					return e.Action == "claimed" && e.Actor == r.operator && e.Deadline != nil && e.Deadline.Equal(r.deadline)
				}) {
					report("job %s: the claim answered to %s (deadline %v) is not in its history: it was forgotten", id, r.operator, r.deadline)
				}
			}
		}
		// Reservations the operators were answered, one after the other:
		// each begins after the one before it ended, at its deadline (the
		// operators complete at once, so an earlier one ended by expiry).
		rs := claimsOf[id]
		slices.SortFunc(rs, func(a, b reservation) int { return a.reservedAt.Compare(b.reservedAt) })
		rs = slices.CompactFunc(rs, func(a, b reservation) bool { return a.token == b.token })
		for i := 1; i < len(rs); i++ {
			if rs[i].reservedAt.Before(rs[i-1].deadline) {
				report("job %s: %s was answered a reservation from %v while %s held it until %v",
					id, rs[i].operator, rs[i].reservedAt, rs[i-1].operator, rs[i-1].deadline)
			}
		}
	}
	if bad > 20 {
		t.Errorf("… %d problems in all", bad)
	}
}

// jobs lists the ids of the queue's jobs in the state, as the API answers
// them page by page.
func (c *client) jobs(t *testing.T, state string) []string {
	t.Helper()
	var ids []string
	cursor := ""
	for {
		status, out := c.retrying(context.Background(), "GET", "/api/v1/jobs?queue="+queue+"&state="+state+"&limit=500&cursor="+cursor, c.d.super, nil, nil)
		var page struct {
			Jobs []struct {
				ID string `json:"id"`
			} `json:"jobs"`
			NextCursor string `json:"next_cursor"`
		}
		if status != 200 || json.Unmarshal(out, &page) != nil {
			t.Fatalf("list %s jobs answered %d: %s", state, status, out)
		}
		for _, j := range page.Jobs {
			ids = append(ids, j.ID)
		}
		if page.NextCursor == "" {
			return ids
		}
		cursor = page.NextCursor
	}
}

// checkHistory says what is wrong with a job's history, if anything: one
// completion, and no claim while the job was reserved.
func checkHistory(h []historyEntry) string {
	completed := 0
	held := false
	var since time.Time
	for _, e := range h {
		if e.At.Before(since) {
			return fmt.Sprintf("history goes back in time at %s %v", e.Action, e.At)
		}
		since = e.At
		switch {
		case e.Action == "claimed":
			if held {
				return fmt.Sprintf("claimed by %s at %v while reserved", e.Actor, e.At)
			}
			held = true
		case e.From == "reserved" && e.To != "reserved":
			held = false
		}
		if e.Action == "completed" {
			completed++
		}
	}
	if completed != 1 {
		return fmt.Sprintf("completed %d times in its history", completed)
	}
	return ""
}
