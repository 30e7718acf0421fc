package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"claimdesk/internal/notify"
	"claimdesk/internal/tasks"
	"claimdesk/internal/users"

	"github.com/redis/go-redis/v9"
)

// prompt bounds how long after a job or batch ends a ?wait=10 may answer:
// well under the wait, so only the notice can have woken it.
const prompt = 5 * time.Second

// answer is what a request sent in the background was answered, and when.
type answer struct {
	status int
	body   map[string]any
	err    error
	at     time.Time
}

// waitOn sends GET path as the token's user in the background, and checks
// that it is still waiting a moment later: it waits for what the test does
// next.
func (a *app) waitOn(path, token string) <-chan answer {
	a.t.Helper()
	ch := make(chan answer, 1)
	go func() {
		status, raw, err := a.send("GET", path, token, "", nil)
		ans := answer{status: status, err: err, at: time.Now()}
		if err == nil {
			ans.err = json.Unmarshal(raw, &ans.body)
		}
		ch <- ans
	}()
	select {
	case got := <-ch:
		a.t.Fatalf("GET %s answered before anything happened: %d %v %v", path, got.status, got.body, got.err)
	case <-time.After(300 * time.Millisecond):
	}
	return ch
}

// answered returns the body of a wait's 200 answer and how long after
// since it came.
func (a *app) answered(ch <-chan answer, since time.Time) (map[string]any, time.Duration) {
	a.t.Helper()
	select {
	case got := <-ch:
		if got.err != nil || got.status != http.StatusOK {
			a.t.Fatalf("wait answered %d %v %v", got.status, got.body, got.err)
		}
		return got.body, got.at.Sub(since)
	case <-time.After(70 * time.Second): // beyond any wait's own bound
		a.t.Fatal("wait never answered")
	}
	return nil, 0
}

// feed is a supervisor's websocket, who sees every notice.
func (a *app) feed() *socket {
	a.t.Helper()
	_, b := a.person(users.Supervisor)
	s, _ := a.live("supervisor", b)
	return s
}

// finished reads the feed up to the notice that the job or batch with this
// id finished, and returns the state it tells.
func (s *socket) finished(typ, id string) string {
	s.t.Helper()
	var state string
	s.until(func(n notify.Notice) bool {
		if n.Type == typ && (n.JobID == id || n.BatchID == id && n.JobID == "") {
			state = n.State
			return true
		}
		return false
	}, func(notify.Notice) bool { return false })
	return state
}

// cutBatchCancel is a Redis hook that makes every batch cancel stop after
// its first step of one job, as if the request died there: it runs the
// first call of batch_cancel.lua with a limit of 1 and fails every call
// that would resume it.
type cutBatchCancel struct{}

func (cutBatchCancel) DialHook(next redis.DialHook) redis.DialHook { return next }

func (cutBatchCancel) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if err := cutShort(cmd); err != nil {
				return err
			}
		}
		return next(ctx, cmds)
	}
}

func (cutBatchCancel) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := cutShort(cmd); err != nil {
			return err
		}
		return next(ctx, cmd)
	}
}

// cutShort fails a call of batch_cancel.lua that would resume a cancel,
// as a lost connection would, and limits the first to one job.
func cutShort(cmd redis.Cmder) error {
	args := cmd.Args()
	fn, _ := args[min(1, len(args)-1)].(string)
	if cmd.Name() != "fcall" || !strings.HasSuffix(fn, "_batch_cancel") {
		return nil
	}
	// FCALL fn numkeys keys... now batch cursor limit actor
	argv := 3 + args[2].(int)
	if cursor, _ := args[argv+2].(string); cursor != "" {
		err := fmt.Errorf("the test cut the batch cancel short: %w", syscall.ECONNRESET)
		cmd.SetErr(err)
		return err
	}
	args[argv+3] = 1
	return nil
}

// cutServer is a second server of the app whose batch cancels stop after
// their first step.
func (a *app) cutServer() *httptest.Server {
	a.t.Helper()
	var c redis.UniversalClient
	switch r := a.rdb.(type) {
	case *redis.Client:
		c = redis.NewClient(&redis.Options{Addr: r.Options().Addr})
	case *redis.ClusterClient:
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: r.Options().Addrs})
		// The engine's changes go to the slot's master itself.
		cc.OnNewNode(func(node *redis.Client) { node.AddHook(cutBatchCancel{}) })
		c = cc
	default:
		a.t.Fatalf("no cut server over a %T", a.rdb)
	}
	c.AddHook(cutBatchCancel{})
	a.t.Cleanup(func() { c.Close() })
	return a.serverWith(c, nil)
}

// backends are the Redis setups the wake-up tests run on: the package's
// standalone server, and its cluster.
func backends(t *testing.T) []struct {
	name string
	rdb  redis.UniversalClient
} {
	return []struct {
		name string
		rdb  redis.UniversalClient
	}{{"standalone", rdb}, {"cluster", clusterRedis(t)}}
}

func TestWaitOnAJobWakesWhenItEnds(t *testing.T) {
	t.Parallel()
	paths := []struct {
		name string
		// start makes the job to wait on, and returns its id and what
		// ends it.
		start func(a *app) (id string, end func())
		want  string
	}{
		{"completed by its holder", func(a *app) (string, func()) {
			id := a.enqueue("to complete")
			_, token := a.claim()
			return id, func() {
				a.expect("POST", "/api/v1/jobs/"+id+"/complete", a.operator, fmt.Sprintf(`{"token":%q}`, token), 200, "")
			}
		}, "completed"},
		{"failed on its last attempt", func(a *app) (string, func()) {
			id := a.enqueueAs(a.producer, "one attempt", `,"max_attempts":1`)
			_, token := a.claim()
			return id, func() {
				a.expect("POST", "/api/v1/jobs/"+id+"/fail", a.operator, fmt.Sprintf(`{"token":%q,"reason":"unreadable"}`, token), 200, "")
			}
		}, "dead"},
		{"canceled by a producer", func(a *app) (string, func()) {
			id := a.enqueue("to cancel")
			return id, func() { a.expect("DELETE", "/api/v1/jobs/"+id, a.producer, "", 200, "") }
		}, "canceled"},
		{"force-canceled by a supervisor while reserved", func(a *app) (string, func()) {
			id := a.enqueue("to take away")
			a.claim()
			return id, func() { a.expect("DELETE", "/api/v1/jobs/"+id+"?force=true", a.super, "", 200, "") }
		}, "canceled"},
		{"canceled with its batch while ready", func(a *app) (string, func()) {
			batch, jobs := a.createBatch(`{"title":"to cancel","jobs":[{"title":"a"},{"title":"b"}]}`)
			return jobs[1], func() { a.expect("DELETE", "/api/v1/batches/"+batch, a.producer, "", 200, "") }
		}, "canceled"},
		{"canceled as its holder gives it back after its batch was canceled", func(a *app) (string, func()) {
			batch, jobs := a.createBatch(`{"title":"to cancel","jobs":[{"title":"a"}]}`)
			_, token := a.claim()
			if b := a.expect("DELETE", "/api/v1/batches/"+batch, a.producer, "", 200, ""); b["reserved"] != 1.0 {
				a.t.Fatalf("canceled batch = %v, want its job still reserved", b)
			}
			return jobs[0], func() {
				a.expect("POST", "/api/v1/jobs/"+jobs[0]+"/release", a.operator, fmt.Sprintf(`{"token":%q}`, token), 200, "")
			}
		}, "canceled"},
		{"canceled by a claim after an interrupted batch cancel", func(a *app) (string, func()) {
			batch, jobs := a.createBatch(`{"title":"cut short","jobs":[{"title":"a"},{"title":"b"}]}`)
			cut := a.cutServer()
			req, _ := http.NewRequest("DELETE", cut.URL+"/api/v1/batches/"+batch, nil)
			req.Header.Set("Authorization", "Bearer "+a.producer)
			res, err := http.DefaultClient.Do(req)
			if err != nil || res.StatusCode != http.StatusServiceUnavailable {
				a.t.Fatalf("interrupted batch cancel: %v %v, want 503", status(res), err)
			}
			res.Body.Close()
			var left []string
			for _, id := range jobs {
				if j := a.expect("GET", "/api/v1/jobs/"+id, a.producer, "", 200, ""); j["state"] == "ready" {
					left = append(left, id)
				}
			}
			if len(left) != 1 {
				a.t.Fatalf("after one step of the cancel %v are ready, want one of %v", left, jobs)
			}
			return left[0], func() {
				// The claim cancels the job on its way, and finds nothing.
				a.expect("POST", "/api/v1/queues/"+a.queue+"/claim", a.operator, "", 204, "")
			}
		}, "canceled"},
		{"expired on its last attempt", func(a *app) (string, func()) {
			id := a.enqueueAs(a.producer, "one attempt", `,"max_attempts":1,"lease_seconds":60`)
			out := a.expect("POST", "/api/v1/queues/"+a.queue+"/claim", a.operator, "", 200, "")
			deadline, err := time.Parse(time.RFC3339Nano, out["reservation"].(map[string]any)["deadline"].(string))
			if err != nil {
				a.t.Fatal(err)
			}
			_, peer := a.newUser(users.Operator, a.queue)
			return id, func() {
				// The test server runs no cron: another operator's claim
				// takes back the expired reservation first.
				a.passTime(deadline)
				a.expect("POST", "/api/v1/queues/"+a.queue+"/claim", peer, "", 204, "")
			}
		}, "dead"},
	}
	for _, be := range backends(t) {
		for _, tc := range paths {
			t.Run(be.name+"/"+tc.name, func(t *testing.T) {
				a := newAppOn(t, be.rdb)
				boss := a.feed()
				id, end := tc.start(a)
				waiting := a.waitOn("/api/v1/jobs/"+id+"?wait=10", a.producer)
				end()
				job, took := a.answered(waiting, time.Now())
				if job["id"] != id || job["state"] != tc.want {
					t.Fatalf("wait answered %v, want %s %s", job, id, tc.want)
				}
				if took > prompt {
					t.Fatalf("wait answered %v after the job ended, want within %v", took, prompt)
				}
				if got := boss.finished(notify.JobFinished, id); got != tc.want {
					t.Fatalf("supervisor was told job.finished %s, want %s", got, tc.want)
				}
			})
		}
	}
}

func TestWaitOnABatchWakesWhenItsLastJobEnds(t *testing.T) {
	t.Parallel()
	for _, be := range backends(t) {
		t.Run(be.name, func(t *testing.T) { waitOnABatch(newAppOn(t, be.rdb)) })
	}
}

func waitOnABatch(a *app) {
	t := a.t
	boss := a.feed()
	batch, jobs := a.createBatch(`{"title":"pair","jobs":[{"title":"a"},{"title":"b"}]}`)
	var tokens []string
	for _, want := range jobs {
		id, token := a.claim()
		if id != want {
			t.Fatalf("claimed %s, want %s", id, want)
		}
		tokens = append(tokens, token)
	}
	complete := func(i int) {
		t.Helper()
		a.expect("POST", "/api/v1/jobs/"+jobs[i]+"/complete", a.operator, fmt.Sprintf(`{"token":%q}`, tokens[i]), 200, "")
	}
	complete(0)
	waiting := a.waitOn("/api/v1/batches/"+batch+"?wait=10", a.producer)
	complete(1)
	b, took := a.answered(waiting, time.Now())
	if b["id"] != batch || b["state"] != "completed" || b["completed"] != 2.0 || b["finished_at"] == nil {
		t.Fatalf("wait answered %v, want the batch completed", b)
	}
	if took > prompt {
		t.Fatalf("wait answered %v after the batch ended, want within %v", took, prompt)
	}
	if got := boss.finished(notify.BatchFinished, batch); got != "completed" {
		t.Fatalf("supervisor was told batch.finished %s, want completed", got)
	}
}

func TestWaitEndsWithTheStateThen(t *testing.T) {
	for _, tc := range []struct {
		name string
		// meanwhile changes the job while the wait lasts (nil: nothing).
		meanwhile func(a *app)
		want      string
	}{
		{"stays ready", nil, "ready"},
		{"claimed meanwhile", func(a *app) { a.claim() }, "reserved"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newApp(t)
			id := a.enqueue("not finished")
			began := time.Now()
			waiting := a.waitOn("/api/v1/jobs/"+id+"?wait=1", a.producer)
			if tc.meanwhile != nil {
				tc.meanwhile(a)
			}
			job, took := a.answered(waiting, began)
			if job["id"] != id || job["state"] != tc.want {
				t.Fatalf("wait answered %v, want %s %s", job, id, tc.want)
			}
			if took < 900*time.Millisecond || took > 3*time.Second {
				t.Fatalf("?wait=1 answered after %v, want about a second", took)
			}
		})
	}
}

// A wait answers only what its sender may read when it ends: a holder who
// gave the job back and waits on it is not shown another's completion.
func TestWaitAnswersOnlyWhatItsSenderMayRead(t *testing.T) {
	a := newApp(t)
	id := a.enqueue("waited on")
	_, tok := a.claim()
	ch := a.waitOn("/api/v1/jobs/"+id+"?wait=20", a.operator)
	a.expect("POST", "/api/v1/jobs/"+id+"/release", a.operator, `{"token":"`+tok+`"}`, 200, "")
	_, peer := a.newUser(users.Operator, a.queue)
	c := a.claimWithKey("/api/v1/queues/"+a.queue+"/claim", peer, "k1")
	a.expect("POST", "/api/v1/jobs/"+id+"/complete", peer, fmt.Sprintf(`{"token":%q,"result":{"secret":"peer's notes"}}`, c.token), 200, "")
	select {
	case got := <-ch:
		if got.status != http.StatusForbidden || strings.Contains(fmt.Sprint(got.body), "peer's notes") {
			t.Fatalf("the former holder's wait answered %d %v; want 403, without the result", got.status, got.body)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the wait never answered")
	}
	a.expect("GET", "/api/v1/jobs/"+id, a.operator, "", 403, "forbidden")
}

// A wait on a job that misses its due time and moves to its queue's
// breach queue wakes as it moves, and follows it there (308): it answers
// as the job ends in its new queue, not when the wait is over.
func TestWaitFollowsAMove(t *testing.T) {
	a := newApp(t)
	ctx := context.Background()
	a.tasks.Observe(a.announce.Observe) // the cron job's changes are told, as in claimdesk
	leads := a.queue + "-leads"
	if _, err := a.tasks.CreateQueue(ctx, tasks.Queue{Name: leads}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.tasks.PatchQueue(ctx, a.queue, tasks.QueuePatch{BreachQueue: &leads}); err != nil {
		t.Fatal(err)
	}
	past := a.now().Add(-time.Minute).UTC().Format(time.RFC3339)
	id := a.enqueueAs(a.producer, "overdue", `,"due_at":"`+past+`"`)
	waiting := a.waitOn("/api/v1/jobs/"+id+"?wait=10", a.producer)
	since := time.Now()
	if _, _, err := a.tasks.WatchDue(ctx, a.queue, 10); err != nil {
		t.Fatal(err)
	}
	if n, _, err := a.tasks.MoveBreached(ctx, a.queue, 10); err != nil || n != 1 {
		t.Fatalf("MoveBreached = %d, %v", n, err)
	}
	// Ended there, before or after the wait followed it: either way the
	// wait answers at once, unless the move did not wake it.
	moved := strings.TrimSuffix(id, a.queue) + leads
	if _, _, err := a.tasks.Cancel(ctx, moved, "sam", false); err != nil {
		t.Fatal(err)
	}
	job, took := a.answered(waiting, since)
	if job["id"] != moved || job["state"] != "canceled" {
		t.Fatalf("wait answered %v, want %s canceled", job, moved)
	}
	if took > prompt {
		t.Fatalf("wait answered %v after the move, want within %v", took, prompt)
	}
}
