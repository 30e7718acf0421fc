package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"sync"
	"time"

	"claimdesk/internal/tasks"
	"claimdesk/internal/users"
)

// httpProducers is how many producers enqueue at once, each with its own
// connection.
const httpProducers = 8

// runHTTP runs the real server over loopback. Producers fill a queue with
// exactly operators × cycles jobs, timed as single-job and c.batch-job
// enqueues; then c.operators virtual operators, each its own user with its
// own API token and keep-alive connection, claim and complete jobs until
// every job is done. It checks that every job was claimed and completed
// exactly once and that no claim came back empty.
func runHTTP(ctx context.Context, c config) (result, error) {
	r := result{Scenario: "http (real server over loopback)"}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	a, err := startApp(ctx, c)
	if err != nil {
		return r, err
	}
	defer a.close()

	const queue = "bench-http"
	if err := a.queue(ctx, queue); err != nil {
		return r, err
	}
	// Fill the queue: about half the jobs one at a time, the rest in
	// batches of c.batch (parse sees to at least one), so every claim finds
	// a job and none is left over.
	total := c.operators * c.cycles
	batches := total / 2 / c.batch
	singles := total - batches*c.batch
	producerToken, err := a.userWithToken(ctx, "bench-producer", users.Producer, queue)
	if err != nil {
		return r, err
	}
	// Each operator is its own user (a new operator needs a password: a
	// bcrypt hash each, so spread over the CPUs).
	ops := make([]*operator, c.operators)
	err = parallel(runtime.NumCPU(), len(ops), func(_, i int) error {
		name := fmt.Sprintf("bench-op-%04d", i)
		token, err := a.userWithToken(ctx, name, users.Operator, queue)
		ops[i] = &operator{name: name, token: token, client: newHTTPClient(2)}
		return err
	})
	defer func() {
		for _, op := range ops {
			if op != nil {
				op.client.CloseIdleConnections()
			}
		}
	}()
	if err != nil {
		return r, err
	}

	producers := make([]*http.Client, httpProducers)
	for i := range producers {
		producers[i] = newHTTPClient(2)
		defer producers[i].CloseIdleConnections()
		// Open each producer's connection before timing.
		if _, err := call(ctx, producers[i], a.url, http.MethodGet, "/api/v1/queues", producerToken, nil, nil); err != nil {
			return r, err
		}
	}
	enqueue1, enqueueBatch := newRecorder("http enqueue (1 job)"), newRecorder(fmt.Sprintf("http enqueue (%d jobs)", c.batch))
	var mu sync.Mutex
	enqueued := make(map[string]bool, total)
	err = parallel(httpProducers, singles, func(w, i int) error {
		var out struct{ Job tasks.Job }
		err := enqueue1.time(func() error {
			_, err := call(ctx, producers[w], a.url, http.MethodPost, "/api/v1/queues/"+queue+"/jobs", producerToken, newJob(i), &out)
			return err
		})
		if err == nil {
			mu.Lock()
			enqueued[out.Job.ID] = true
			mu.Unlock()
		}
		return err
	})
	if err != nil {
		return r, err
	}
	err = parallel(httpProducers, batches, func(w, b int) error {
		in := struct {
			Jobs []jobBody `json:"jobs"`
		}{make([]jobBody, c.batch)}
		for k := range in.Jobs {
			in.Jobs[k] = newJob(singles + b*c.batch + k)
		}
		var out struct{ Jobs []tasks.Job }
		err := enqueueBatch.time(func() error {
			_, err := call(ctx, producers[w], a.url, http.MethodPost, "/api/v1/queues/"+queue+"/jobs", producerToken, in, &out)
			return err
		})
		if err == nil && len(out.Jobs) != c.batch {
			err = fmt.Errorf("a batch of %d jobs answered %d", c.batch, len(out.Jobs))
		}
		mu.Lock()
		for _, j := range out.Jobs {
			enqueued[j.ID] = true
		}
		mu.Unlock()
		return err
	})
	if err != nil {
		return r, err
	}

	// Every operator opens its keep-alive connection (and proves its token)
	// before the clock runs, as a browser tab would have.
	err = parallel(16, len(ops), func(_, i int) error {
		_, err := call(ctx, ops[i].client, a.url, http.MethodGet, "/api/v1/queues", ops[i].token, nil, nil)
		return err
	})
	if err != nil {
		return r, err
	}

	// Operators are people: between clicks they read the job and do the
	// work, so each waits c.think after a claim (reading it) and after a
	// complete (before asking for the next). That keeps the number of
	// requests in flight to what c.operators people really cause, instead
	// of c.operators closed loops hammering the server. They start spread
	// over one think time: people do not click in step.
	claim, complete, cycle := newRecorder("http claim"), newRecorder("http complete"), newRecorder("http claim+complete")
	redisPID, err := redisPID(ctx, a.rdb)
	if err != nil {
		return r, err
	}
	callsBefore, err := redisCalls(ctx, a.rdb)
	if err != nil {
		return r, err
	}
	cpu := startCPU(a.pid(), redisPID, os.Getpid())
	t0 := time.Now()
	var (
		wg       sync.WaitGroup
		errMu    sync.Mutex
		firstErr error
	)
	for _, op := range ops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := op.work(ctx, a.url, queue, c, claim, complete, cycle); err != nil {
				errMu.Lock()
				if firstErr == nil {
					firstErr = fmt.Errorf("operator %s: %w", op.name, err)
				}
				errMu.Unlock()
				cancel()
			}
		}()
	}
	wg.Wait()
	work := time.Since(t0)
	cores := cpu.cores()
	if firstErr != nil {
		return r, firstErr
	}
	callsAfter, err := redisCalls(ctx, a.rdb)
	if err != nil {
		return r, err
	}
	commands, _, perCommand := callsSince(callsBefore, callsAfter)

	r.Ops = []summary{enqueue1.summary(), enqueueBatch.summary(), claim.summary(), complete.summary(), cycle.summary()}

	// Exactly once: every job enqueued was claimed once and completed once.
	claimed, completed, empty := map[string]int{}, map[string]int{}, 0
	for _, op := range ops {
		for _, id := range op.claimed {
			claimed[id]++
		}
		for _, id := range op.completed {
			completed[id]++
		}
		empty += op.empty
	}
	bad := 0
	for id := range enqueued {
		if claimed[id] != 1 || completed[id] != 1 {
			bad++
		}
	}
	st, err := a.tasks.Stats(ctx, queue)
	if err != nil {
		return r, err
	}
	a.checkQuiet(&r)
	r.check("no claim came back empty (204)", empty == 0, "%d of %d claims found nothing", empty, claim.summary().Calls)
	r.check("every job claimed and completed exactly once",
		len(enqueued) == total && len(claimed) == total && len(completed) == total && bad == 0 && st.Completed == int64(total),
		"%d jobs enqueued, %d claimed, %d completed, %d not exactly once; store counts %d completed",
		len(enqueued), len(claimed), len(completed), bad, st.Completed)
	r.check("nothing left ready or reserved", st.Ready == 0 && st.Reserved == 0, "ready %d, reserved %d", st.Ready, st.Reserved)

	r.fig("virtual operators", float64(c.operators), "")
	r.fig("cycles per operator", float64(c.cycles), "")
	r.fig("think time (after claim, after complete)", float64(c.think)/float64(time.Millisecond), "ms")
	r.fig("concurrent producers", httpProducers, "")
	r.fig("jobs enqueued one at a time", float64(singles), "")
	r.fig(fmt.Sprintf("batches of %d jobs", c.batch), float64(batches), "")
	r.fig("operator phase: completed jobs per second", float64(total)/work.Seconds(), "jobs/s")
	r.fig("operator phase: claimdesk CPU", cores[0], "cores")
	r.fig("operator phase: redis-server CPU", cores[1], "cores")
	r.fig("operator phase: bench (load generator) CPU", cores[2], "cores")
	r.fig("operator phase: Redis commands per cycle, scripts' own calls included", float64(commands)/float64(total), "")
	r.fig("operator phase: script calls (FCALL) per cycle", float64(perCommand["fcall"][0])/float64(total), "")
	// The server's own view of the median (its request histogram,
	// interpolated within buckets; too coarse for a p99): tells time spent
	// in the handler from time spent in the kernel and in this load
	// generator.
	hist, err := serverHistograms(ctx, a.url)
	if err != nil {
		return r, err
	}
	for _, route := range []string{"/api/v1/queues/:queue/claim", "/api/v1/jobs/:id/complete"} {
		h := hist["POST "+route]
		r.fig(fmt.Sprintf("server-side POST %s p50, its histogram", route), h.quantile(.5)*1000, "ms")
	}
	if rss, err := rssBytes(a.pid()); err == nil {
		r.fig("claimdesk RSS at the end", float64(rss)/(1<<20), "MiB")
	}
	r.atMost(fmt.Sprintf("claim + complete p99 at %d virtual operators", c.operators), float64(cycle.summary().P99), 25, "ms")
	return r, nil
}

// jobBody is one job as the API takes it.
type jobBody struct {
	Title   string         `json:"title"`
	Payload map[string]any `json:"payload"`
}

// newJob is a job like the ones people work: a line of title and a small
// payload.
func newJob(i int) jobBody {
	return jobBody{
		Title: fmt.Sprintf("Check invoice INV-2026-%06d from Nordwind GmbH", i),
		Payload: map[string]any{"invoice": map[string]any{
			"number": fmt.Sprintf("INV-2026-%06d", i), "gross": 100 + float64(i%9000)/7, "currency": "EUR",
		}},
	}
}

// operator is one virtual person at the API.
type operator struct {
	name   string
	token  string
	client *http.Client
	// What it did, read after the run.
	claimed, completed []string
	empty              int
}

// work does c.cycles claim → think → complete → think cycles.
func (op *operator) work(ctx context.Context, base, queue string, c config, claim, complete, cycle *recorder) error {
	if c.think > 0 {
		if err := sleep(ctx, rand.N(c.think)); err != nil {
			return err
		}
	}
	for range c.cycles {
		var got struct {
			Job         tasks.Job
			Reservation struct{ Token string }
		}
		t0 := time.Now()
		status, err := call(ctx, op.client, base, http.MethodPost, "/api/v1/queues/"+queue+"/claim", op.token, nil, &got)
		claimTook := time.Since(t0)
		claim.add(t0, claimTook)
		if err != nil {
			return err
		}
		if status == http.StatusNoContent {
			// Counted and checked: there is a job for every claim.
			op.empty++
			continue
		}
		if got.Job.ID == "" || got.Reservation.Token == "" {
			return errors.New("a claim answered no job id or no token")
		}
		op.claimed = append(op.claimed, got.Job.ID)
		if err := sleep(ctx, c.think); err != nil {
			return err
		}
		in := map[string]any{"token": got.Reservation.Token, "result": map[string]any{"approved": true}}
		t1 := time.Now()
		_, err = call(ctx, op.client, base, http.MethodPost, "/api/v1/jobs/"+url.PathEscape(got.Job.ID)+"/complete", op.token, in, nil)
		completeTook := time.Since(t1)
		complete.add(t1, completeTook)
		if err != nil {
			return err
		}
		// The latency people feel in one cycle: claim's plus complete's,
		// without the think time between them.
		cycle.add(t0, claimTook+completeTook)
		op.completed = append(op.completed, got.Job.ID)
		if err := sleep(ctx, c.think); err != nil {
			return err
		}
	}
	return nil
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
