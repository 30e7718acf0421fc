package handlers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"claimdesk/internal/durable"
	"claimdesk/internal/handlers"
	"claimdesk/internal/notify"
	"claimdesk/internal/tasks"
	"claimdesk/internal/tasks/taskstest"
	"claimdesk/internal/users"
	"claimdesk/internal/webhooks"

	"github.com/redis/go-redis/v9"
)

// rdb is the package's standalone Redis, shared by its tests.
var rdb redis.UniversalClient

// cluster is a 3-master Redis Cluster, started for the first test that
// asks for one (clusterRedis) and shared by the rest.
var cluster struct {
	once sync.Once
	c    *taskstest.Cluster
	err  error
}

func TestMain(m *testing.M) {
	srv, err := taskstest.NewServer()
	if err != nil {
		fmt.Fprintln(os.Stderr, "handlers tests:", err)
		os.Exit(1)
	}
	rdb = srv.Client()
	code := m.Run()
	if err := contractCoverage(); code == 0 && err != nil {
		fmt.Fprintln(os.Stderr, "handlers tests:", err)
		code = 1
	}
	srv.Close()
	if cluster.c != nil {
		cluster.c.Close()
	}
	os.Exit(code)
}

// clusterRedis returns a client of the package's Redis Cluster.
func clusterRedis(t *testing.T) redis.UniversalClient {
	t.Helper()
	cluster.once.Do(func() { cluster.c, cluster.err = taskstest.NewCluster(3) })
	if cluster.err != nil {
		t.Fatalf("handlers tests: %v", cluster.err)
	}
	return cluster.c.Client()
}

var seq atomic.Int64

// app is a claimdesk server over the shared Redis, with its own queue and
// users whose names are unique to the test.
type app struct {
	t        *testing.T
	srv      *httptest.Server
	tasks    *tasks.Store
	users    *users.Store
	queue    string
	producer string // API token of a producer
	super    string // API token of a supervisor
	operator string // API token of an operator granted the queue
	opName   string
	other    string // API token of an operator not granted the queue
	hub      *notify.Hub
	announce *notify.Announcer
	rdb      redis.UniversalClient // the Redis it runs on
	// ahead is how far the app's Stores judge time ahead of the wall clock
	// (tasks.WithClock): passTime moves it, so that a deadline passes at
	// once instead of after a real wait.
	ahead atomic.Int64
}

// now is the app's clock: the wall clock, ahead by what passTime moved.
func (a *app) now() time.Time { return time.Now().Add(time.Duration(a.ahead.Load())) }

// passTime moves the app's clock just past t (a reservation's deadline,
// say), as if the time until then had gone by; never back.
func (a *app) passTime(t time.Time) {
	if d := t.Sub(a.now()); d >= 0 {
		a.ahead.Add(int64(d + time.Millisecond))
	}
}

func newApp(t *testing.T) *app {
	t.Helper()
	return newAppOn(t, rdb)
}

// newAppOn is newApp over the Redis r (a cluster's, say).
func newAppOn(t *testing.T, r redis.UniversalClient) *app {
	t.Helper()
	t.Parallel()
	n := seq.Add(1)
	a := &app{t: t, users: users.New(r), queue: fmt.Sprintf("h%d", n), rdb: r}
	a.tasks = tasks.New(r, tasks.WithClock(a.now))
	ctx := context.Background()
	if _, err := a.tasks.PutQueue(ctx, tasks.Queue{Name: a.queue}); err != nil {
		t.Fatal(err)
	}
	mk := func(role users.Role, queues ...string) (string, string) {
		name := fmt.Sprintf("%s%d-%d", role, n, seq.Add(1))
		if err := a.users.Put(ctx, users.User{Name: name, Role: role, Queues: queues}, "password-"+name); err != nil {
			t.Fatal(err)
		}
		tok, err := a.users.NewToken(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return name, tok
	}
	_, a.producer = mk(users.Producer, a.queue)
	_, a.super = mk(users.Supervisor)
	a.opName, a.operator = mk(users.Operator, a.queue)
	_, a.other = mk(users.Operator, "elsewhere")
	cfg := a.config(r)
	// Changes the test makes to users reach the server as the command
	// line's reach every instance.
	a.users.Observe(cfg.Bus.TellUserChanged)
	a.srv = httptest.NewServer(checked(t, handlers.New(cfg)))
	t.Cleanup(a.srv.Close)
	return a
}

// config is a server configuration over r whose notice listener runs for
// the test's lifetime.
func (a *app) config(r redis.UniversalClient) handlers.Config {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	bus, hub := notify.NewBus(r, log), notify.NewHub()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); bus.Listen(ctx, hub.Deliver) }()
	a.t.Cleanup(func() { cancel(); <-done })
	ts := tasks.New(r, tasks.WithClock(a.now))
	announce := notify.NewAnnouncer(bus, log)
	ts.Observe(announce.Observe)
	a.t.Cleanup(func() {
		if err := announce.Close(context.Background()); err != nil {
			a.t.Error(err)
		}
	})
	a.hub, a.announce = hub, announce
	// The server's changes to users reach every instance, as in claimdesk.
	us := users.New(r)
	us.Observe(bus.TellUserChanged)
	sealer, err := webhooks.NewSealer(make([]byte, 32))
	if err != nil {
		a.t.Fatal(err)
	}
	hooks := webhooks.NewStore(r, ts, sealer, loopbackEgress(), durable.Policy{})
	return handlers.Config{Redis: r, Tasks: ts, Users: us, Log: log,
		PublicURL: "http://example.test", Bus: bus, Hub: hub, Webhooks: hooks}
}

// loopbackEgress is how the tests' webhooks go out: to receivers on the
// loopback, which claimdesk refuses unless it is told to allow them
// (CLAIMDESK_WEBHOOK_ALLOW_NETWORKS).
func loopbackEgress() *webhooks.Egress {
	_, loopback, _ := net.ParseCIDR("127.0.0.0/8")
	return &webhooks.Egress{Allow: []*net.IPNet{loopback}, Timeout: 5 * time.Second}
}

// serverWith starts another server of the app over r, with its
// configuration and its http.Server changed by change (if not nil). The
// app keeps the hub and announcer of its first server.
func (a *app) serverWith(r redis.UniversalClient, change func(*handlers.Config, *http.Server)) *httptest.Server {
	a.t.Helper()
	hub, announce := a.hub, a.announce
	cfg := a.config(r)
	a.hub, a.announce = hub, announce
	srv := httptest.NewUnstartedServer(nil)
	if change != nil {
		change(&cfg, srv.Config)
	}
	srv.Config.Handler = checked(a.t, handlers.New(cfg))
	srv.Start()
	a.t.Cleanup(srv.Close)
	return srv
}

// call sends a request with an API token and returns status and body.
func (a *app) call(method, path, token, body string) (int, map[string]any) {
	a.t.Helper()
	req, err := http.NewRequest(method, a.srv.URL+path, strings.NewReader(body))
	if err != nil {
		a.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var out map[string]any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			a.t.Fatalf("%s %s: body is not JSON: %s", method, path, raw)
		}
	}
	return res.StatusCode, out
}

// expect checks the status, and the error code for errors.
func (a *app) expect(method, path, token, body string, status int, code string) map[string]any {
	a.t.Helper()
	got, out := a.call(method, path, token, body)
	if got != status {
		a.t.Fatalf("%s %s: status %d, want %d (%v)", method, path, got, status, out)
	}
	if code != "" {
		e, _ := out["error"].(map[string]any)
		if e == nil || e["code"] != code || e["message"] == "" {
			a.t.Fatalf("%s %s: error %v, want code %s with a message", method, path, out, code)
		}
	}
	return out
}

func (a *app) enqueue(title string) string {
	a.t.Helper()
	out := a.expect("POST", "/api/v1/queues/"+a.queue+"/jobs", a.producer, `{"title":"`+title+`","payload":{"n":1}}`, 201, "")
	return out["job"].(map[string]any)["id"].(string)
}

func (a *app) claim() (string, string) {
	a.t.Helper()
	out := a.expect("POST", "/api/v1/queues/"+a.queue+"/claim", a.operator, "", 200, "")
	return out["job"].(map[string]any)["id"].(string), out["reservation"].(map[string]any)["token"].(string)
}

func TestEnqueueAPI(t *testing.T) {
	a := newApp(t)
	q := "/api/v1/queues/" + a.queue + "/jobs"
	out := a.expect("POST", q, a.producer, `{"title":"Check invoice","payload":{"amount":12},"priority":80}`, 201, "")
	job := out["job"].(map[string]any)
	if job["state"] != "ready" || job["priority"] != 80.0 || job["queue"] != a.queue || job["payload"].(map[string]any)["amount"] != 12.0 {
		t.Fatalf("job = %v", job)
	}
	if _, ok := job["token"]; ok {
		t.Fatal("job object carries a token")
	}
	// Idempotency: body key, then the header; a repeat answers 200 with the first job.
	first := a.expect("POST", q, a.producer, `{"title":"once","idempotency_key":"k-1"}`, 201, "")
	again := a.expect("POST", q, a.producer, `{"title":"twice","idempotency_key":"k-1"}`, 200, "")
	if first["job"].(map[string]any)["id"] != again["job"].(map[string]any)["id"] {
		t.Fatal("repeated idempotency key made a new job")
	}
	req, _ := http.NewRequest("POST", a.srv.URL+q, strings.NewReader(`{"title":"by header"}`))
	req.Header.Set("Authorization", "Bearer "+a.producer)
	req.Header.Set("Idempotency-Key", "k-1")
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("Idempotency-Key header repeat: %v %v", res.StatusCode, err)
	}
	res.Body.Close()
	// Batch.
	out = a.expect("POST", q, a.producer, `{"jobs":[{"title":"a"},{"title":"b","delay_seconds":60}]}`, 201, "")
	jobs := out["jobs"].([]any)
	if len(jobs) != 2 || jobs[1].(map[string]any)["state"] != "scheduled" {
		t.Fatalf("batch = %v", jobs)
	}

	before, _ := a.tasks.Stats(context.Background(), a.queue)
	for _, tc := range []struct {
		name, body string
		status     int
		code       string
	}{
		{"malformed JSON", `{"title":`, 400, "invalid_json"},
		{"unknown field", `{"title":"x","priorty":5}`, 400, "invalid_json"},
		{"wrong type", `{"title":"x","priority":"high"}`, 400, "invalid_field"},
		{"empty title", `{"title":""}`, 400, "invalid_field"},
		{"priority out of range", `{"title":"x","priority":101}`, 400, "invalid_field"},
		{"payload not an object", `{"title":"x","payload":[1]}`, 400, "invalid_field"},
		{"oversized payload", `{"title":"x","payload":{"t":"` + strings.Repeat("a", 70000) + `"}}`, 413, "too_large"},
		{"bad idempotency key", `{"title":"x","idempotency_key":"has space"}`, 400, "invalid_field"},
		{"one bad job in a batch", `{"jobs":[{"title":"ok"},{"title":""}]}`, 400, "invalid_field"},
		{"trailing data", `{"title":"x"} {}`, 400, "invalid_json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a.t = t
			a.expect("POST", q, a.producer, tc.body, tc.status, tc.code)
		})
	}
	a.t = t
	if after, _ := a.tasks.Stats(context.Background(), a.queue); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("bad input changed the queue: %+v → %+v", before, after)
	}
	a.expect("POST", "/api/v1/queues/no-such-queue/jobs", a.super, `{"title":"x"}`, 404, "queue_not_found")
	a.expect("POST", q, "", `{"title":"x"}`, 401, "unauthenticated")
	a.expect("POST", q, "cdt_not-a-real-token-at-all-xxxx", `{"title":"x"}`, 401, "unauthenticated")
	a.expect("POST", q, a.operator, `{"title":"x"}`, 403, "forbidden")
	a.expect("POST", q, a.super, `{"title":"by a supervisor"}`, 201, "")
	a.expect("POST", q, a.producer, `{"jobs":`+strings.Repeat(" ", 17<<20)+`[]}`, 413, "too_large")
}

// TestEnqueueRefusesAHeaderThatIsNoKey refuses an Idempotency-Key
// header that holds no key, even when the body's key would win over it,
// and makes no job.
func TestEnqueueRefusesAHeaderThatIsNoKey(t *testing.T) {
	a := newApp(t)
	q := "/api/v1/queues/" + a.queue + "/jobs"
	for _, tc := range []struct{ name, header, body string }{
		{"a space, one job", "has space", `{"title":"x"}`},
		{"a space, the body's key", "has space", `{"title":"x","idempotency_key":"k-1"}`},
		{"too long, the body's key", strings.Repeat("k", 201), `{"title":"x","idempotency_key":"k-1"}`},
		{"a space, many jobs", "has space", `{"jobs":[{"title":"x"}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", a.srv.URL+q, strings.NewReader(tc.body))
			req.Header.Set("Authorization", "Bearer "+a.producer)
			req.Header.Set("Idempotency-Key", tc.header)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusBadRequest || !strings.Contains(string(raw), `"invalid_field"`) {
				t.Fatalf("answered %d %s, want 400 invalid_field", res.StatusCode, raw)
			}
		})
	}
	if stats, _ := a.tasks.Stats(context.Background(), a.queue); stats.Ready != 0 {
		t.Fatalf("a refused enqueue made jobs: %+v", stats)
	}
}

func TestClaimAndHolderAPI(t *testing.T) {
	a := newApp(t)
	claim := "/api/v1/queues/" + a.queue + "/claim"
	a.expect("POST", claim, a.operator, "", 204, "")
	a.expect("POST", claim, a.producer, "", 403, "forbidden") // the route is for operators
	a.expect("POST", claim, a.other, "", 403, "forbidden")    // the queue is not granted them

	id := a.enqueue("first")
	out := a.expect("POST", claim, a.operator, "", 200, "")
	res := out["reservation"].(map[string]any)
	token := res["token"].(string)
	if out["job"].(map[string]any)["id"] != id || res["lease_seconds"] != 300.0 || res["deadline"] == "" {
		t.Fatalf("claim = %v", out)
	}
	job := "/api/v1/jobs/" + id
	got := a.expect("GET", job, a.operator, "", 200, "")
	if _, ok := got["token"]; got["id"] != id || got["state"] != "reserved" || got["reserved_by"] != a.opName || got["deadline"] == nil || ok {
		t.Fatalf("the job held = %v", got)
	}
	a.expect("GET", job, a.other, "", 403, "forbidden")
	a.expect("GET", "/api/v1/jobs/nope", a.super, "", 404, "job_not_found")

	a.expect("POST", job+"/complete", a.operator, `{"token":"wrong"}`, 409, "reservation_lost")
	a.expect("POST", job+"/complete", a.operator, `{}`, 400, "invalid_field")
	a.expect("POST", job+"/extend", a.operator, `{"token":"`+token+`","seconds":0}`, 400, "invalid_field")
	ext := a.expect("POST", job+"/extend", a.operator, `{"token":"`+token+`","seconds":900}`, 200, "")
	if ext["deadline"] == nil {
		t.Fatalf("extend = %v", ext)
	}
	done := a.expect("POST", job+"/complete", a.operator, `{"token":"`+token+`","result":{"ok":true}}`, 200, "")
	if done["state"] != "completed" || done["completed_by"] != a.opName || done["result"].(map[string]any)["ok"] != true {
		t.Fatalf("complete = %v", done)
	}
	a.expect("POST", "/api/v1/jobs/nope/complete", a.operator, `{"token":"x"}`, 404, "job_not_found")

	// Release, skip, fail.
	id2 := a.enqueue("second")
	_, tok := a.claim()
	if got := a.expect("POST", "/api/v1/jobs/"+id2+"/release", a.operator, `{"token":"`+tok+`"}`, 200, ""); got["state"] != "ready" {
		t.Fatalf("release = %v", got)
	}
	_, tok = a.claim()
	if got := a.expect("POST", "/api/v1/jobs/"+id2+"/skip", a.operator, `{"token":"`+tok+`"}`, 200, ""); got["state"] != "ready" || got["id"] != id2 {
		t.Fatalf("skip = %v", got)
	}
	id3 := a.enqueue("third")
	_, tok = a.claim()
	if got := a.expect("POST", "/api/v1/jobs/"+id3+"/fail", a.operator, `{"token":"`+tok+`","reason":"blurry scan"}`, 200, ""); got["state"] != "ready" || got["last_error"] != "blurry scan" {
		t.Fatalf("fail = %v", got)
	}
}

func TestSupervisorAPI(t *testing.T) {
	a := newApp(t)
	id := a.enqueue("held")
	a.claim()

	// Reservations and job lists are for supervisors only.
	a.expect("GET", "/api/v1/reservations", a.operator, "", 403, "forbidden")
	a.expect("GET", "/api/v1/jobs?queue="+a.queue, a.producer, "", 403, "forbidden")
	out := a.expect("GET", "/api/v1/reservations?queue="+a.queue, a.super, "", 200, "")
	rs := out["reservations"].([]any)
	if len(rs) != 1 || rs[0].(map[string]any)["operator"] != a.opName || out["next_cursor"] != nil {
		t.Fatalf("reservations = %v", out)
	}
	// Without a queue, the jobs of every queue: ours among them.
	found, next := false, ""
	for page := 0; !found && page < 100; page++ {
		out := a.expect("GET", "/api/v1/jobs?state=reserved&limit=500&cursor="+url.QueryEscape(next), a.super, "", 200, "")
		for _, j := range out["jobs"].([]any) {
			found = found || j.(map[string]any)["id"] == id
		}
		if next, _ = out["next_cursor"].(string); next == "" {
			break
		}
	}
	if !found {
		t.Fatal("the reserved job is not among every queue's")
	}
	a.expect("GET", "/api/v1/jobs?state=lost", a.super, "", 400, "invalid_field")
	a.expect("GET", "/api/v1/reservations?limit=abc", a.super, "", 400, "invalid_field")
	a.expect("GET", "/api/v1/reservations?cursor=%21%21", a.super, "", 400, "invalid_field")

	// Requeue of a reservation: a force release.
	if got := a.expect("POST", "/api/v1/jobs/"+id+"/requeue", a.super, "", 200, ""); got["state"] != "ready" || got["id"] != id {
		t.Fatalf("requeue = %v", got)
	}
	a.expect("POST", "/api/v1/jobs/"+id+"/requeue", a.super, "", 409, "invalid_state")
	a.expect("POST", "/api/v1/jobs/"+id+"/requeue", a.producer, "", 403, "forbidden")

	// Cancel: ?force=true cancels a reservation.
	_, _ = a.claim()
	a.expect("DELETE", "/api/v1/jobs/"+id, a.producer, "", 409, "invalid_state")
	a.expect("DELETE", "/api/v1/jobs/"+id+"?force=true", a.producer, "", 403, "forbidden")
	a.expect("DELETE", "/api/v1/jobs/"+id+"?force=yes", a.super, "", 400, "invalid_field")
	if got := a.expect("DELETE", "/api/v1/jobs/"+id+"?force=true", a.super, "", 200, ""); got["state"] != "canceled" || got["id"] != id {
		t.Fatalf("cancel = %v", got)
	}

	// Listing with a cursor.
	for i := range 3 {
		a.enqueue(fmt.Sprint("page ", i))
	}
	page := a.expect("GET", "/api/v1/jobs?queue="+a.queue+"&state=ready&limit=2", a.super, "", 200, "")
	cursor, _ := page["next_cursor"].(string)
	if len(page["jobs"].([]any)) != 2 || cursor == "" {
		t.Fatalf("page 1 = %v", page)
	}
	page = a.expect("GET", "/api/v1/jobs?queue="+a.queue+"&state=ready&limit=2&cursor="+url.QueryEscape(cursor), a.super, "", 200, "")
	if len(page["jobs"].([]any)) != 1 || page["next_cursor"] != nil {
		t.Fatalf("page 2 = %v", page)
	}
	a.expect("GET", "/api/v1/jobs?queue="+a.queue+"&state=lost", a.super, "", 400, "invalid_field")

	// Queues.
	a.expect("POST", "/api/v1/queues", a.producer, `{"name":"x"}`, 403, "forbidden")
	name := a.queue + "-new"
	got := a.expect("POST", "/api/v1/queues", a.super, `{"name":"`+name+`","lease_seconds":60,"aging_seconds":60}`, 201, "")
	if got["lease_seconds"] != 60.0 || got["max_attempts"] != 5.0 {
		t.Fatalf("new queue = %v", got)
	}
	a.expect("POST", "/api/v1/queues", a.super, `{"name":"`+name+`","lease_seconds":90}`, 409, "queue_exists")
	a.expect("POST", "/api/v1/queues", a.super, `{"name":"Bad Name"}`, 400, "invalid_field")
	list := a.expect("GET", "/api/v1/queues", a.operator, "", 200, "")
	qs := list["queues"].([]any)
	if len(qs) != 1 || qs[0].(map[string]any)["name"] != a.queue || qs[0].(map[string]any)["ready"] != 3.0 || qs[0].(map[string]any)["lease_seconds"] != 300.0 {
		t.Fatalf("operator's queues = %v", qs)
	}
}

func TestGetJobWaits(t *testing.T) {
	a := newApp(t)
	id := a.enqueue("watched")
	a.expect("GET", "/api/v1/jobs/"+id+"?wait=61", a.producer, "", 400, "invalid_field")
	_, token := a.claim()
	done := make(chan map[string]any)
	go func() {
		_, out := a.call("GET", "/api/v1/jobs/"+id+"?wait=20", a.producer, "")
		done <- out
	}()
	a.expect("POST", "/api/v1/jobs/"+id+"/complete", a.operator, `{"token":"`+token+`"}`, 200, "")
	if got := <-done; got["state"] != "completed" {
		t.Fatalf("wait returned %v", got)
	}
}

func TestHealth(t *testing.T) {
	a := newApp(t)
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		res, err := http.Get(a.srv.URL + p)
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("GET %s: %v %v", p, res.StatusCode, err)
		}
		res.Body.Close()
	}
	a.enqueue("counted")
	res, _ := http.Get(a.srv.URL + "/metrics")
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(body), `claimdesk_transitions_total{action="enqueued",to="ready"} 1`) {
		t.Fatal("metrics do not count the enqueue's transition")
	}
	// A server whose Redis is gone is not ready, and says so.
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	srv := httptest.NewServer(checked(t, handlers.New(a.config(dead))))
	defer srv.Close()
	res, err := http.Get(srv.URL + "/readyz")
	if err != nil || res.StatusCode != 503 || res.Header.Get("Retry-After") != "1" {
		t.Fatalf("readyz without Redis: %v %v, Retry-After %q", res.StatusCode, err, res.Header.Get("Retry-After"))
	}
	res.Body.Close()
	req, _ := http.NewRequest("GET", srv.URL+"/api/v1/queues", nil)
	req.Header.Set("Authorization", "Bearer cdt_whatever-token-value-000000")
	res, err = http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 503 {
		t.Fatalf("API without Redis: %v %v", res.StatusCode, err)
	}
	res.Body.Close()
	// A page whose session cannot be read says why, in words.
	req, _ = http.NewRequest("GET", srv.URL+"/", nil)
	req.AddCookie(&http.Cookie{Name: "claimdesk_session", Value: "some-session-token"})
	res, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 503 || !strings.Contains(string(page), "cannot reach its store") {
		t.Fatalf("page without Redis: %d %s", res.StatusCode, page)
	}
}

// browser is a cookie-keeping client for the pages.
type browser struct {
	t      *testing.T
	c      *http.Client
	base   string
	csrf   string
	status int
	body   string
	header http.Header // sent with every request
	got    http.Header // the last response's headers
}

var csrfRE = regexp.MustCompile(`name="_csrf" value="([^"]+)"`)

func (a *app) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: a.t, base: a.srv.URL, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

func (b *browser) do(method, path string, form url.Values) *browser {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, b.base+path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	maps.Copy(req.Header, b.header)
	res, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	b.status, b.body, b.got = res.StatusCode, string(raw), res.Header
	if m := csrfRE.FindStringSubmatch(b.body); m != nil {
		b.csrf = m[1]
	}
	if res.StatusCode == http.StatusSeeOther {
		b.body = res.Header.Get("Location")
	}
	return b
}

func (b *browser) login(name, password string) *browser {
	b.t.Helper()
	b.do("GET", "/login", nil)
	return b.do("POST", "/login", url.Values{"name": {name}, "password": {password}, "_csrf": {b.csrf}})
}

func TestPagesAuthAndCSRF(t *testing.T) {
	a := newApp(t)
	b := a.browser()
	if b.do("GET", "/", nil); b.status != 303 || b.body != "/login" {
		t.Fatalf("anonymous home: %d %s", b.status, b.body)
	}
	if b.do("GET", "/supervisor", nil); b.status != 303 || !strings.HasPrefix(b.body, "/login?next=") {
		t.Fatalf("anonymous supervisor page: %d %s", b.status, b.body)
	}
	if b.login(a.opName, "wrong-password"); b.status != 401 || !strings.Contains(b.body, "Wrong name or password") {
		t.Fatalf("bad password: %d", b.status)
	}
	// A login form without its CSRF token is refused.
	if b.do("POST", "/login", url.Values{"name": {a.opName}, "password": {"password-" + a.opName}}); b.status != 403 {
		t.Fatalf("login without CSRF: %d", b.status)
	}
	if b.login(a.opName, "password-"+a.opName); b.status != 303 || b.body != "/" {
		t.Fatalf("login: %d %s", b.status, b.body)
	}
	if b.do("GET", "/", nil); b.status != 200 || !strings.Contains(b.body, a.queue) {
		t.Fatalf("home: %d", b.status)
	}
	if b.do("GET", "/supervisor", nil); b.status != 403 || !strings.Contains(b.body, "Not for you") {
		t.Fatalf("operator on the supervisor page: %d", b.status)
	}
	// State-changing posts need the CSRF token.
	id := a.enqueue("<script>alert(1)</script> & <img src=x onerror=alert(1)>")
	if b.do("POST", "/queues/"+a.queue+"/claim", url.Values{}); b.status != 403 {
		t.Fatalf("claim without CSRF: %d", b.status)
	}
	if b.do("POST", "/queues/"+a.queue+"/claim", url.Values{"_csrf": {"forged"}}); b.status != 403 {
		t.Fatalf("claim with a forged CSRF token: %d", b.status)
	}
	if s, _ := a.tasks.Stats(context.Background(), a.queue); s.Reserved != 0 {
		t.Fatal("a refused post claimed a job")
	}
	if b.do("POST", "/queues/"+a.queue+"/claim", url.Values{"_csrf": {b.csrf}}); b.status != 303 || b.body != "/jobs/"+id {
		t.Fatalf("claim: %d %s", b.status, b.body)
	}
	b.do("GET", "/jobs/"+id, nil)
	if b.status != 200 || strings.Contains(b.body, "<script>alert") || !strings.Contains(b.body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Fatalf("work page does not escape the title: %d", b.status)
	}
	token := regexp.MustCompile(`name="token" value="([0-9a-f]+)"`).FindStringSubmatch(b.body)
	if token == nil {
		t.Fatal("work page has no reservation token")
	}
	// The supervisor takes the job back: the stale page's complete is
	// refused (409), and the page says why the reservation ended.
	a.expect("POST", "/api/v1/jobs/"+id+"/requeue", a.super, "", 200, "")
	b.do("POST", "/jobs/"+id+"/complete", url.Values{"_csrf": {b.csrf}, "token": {token[1]}, "notes": {"done"}})
	if b.status != 409 || !strings.Contains(b.body, " took this job back.") {
		t.Fatalf("stale complete: %d", b.status)
	}
	// Another operator cannot open the job's work page.
	other := a.browser()
	name := "otherop" + fmt.Sprint(seq.Add(1))
	if err := a.users.Put(context.Background(), users.User{Name: name, Role: users.Operator, Queues: []string{"elsewhere"}}, "password-x1"); err != nil {
		t.Fatal(err)
	}
	other.login(name, "password-x1")
	if other.do("GET", "/jobs/"+id, nil); other.status != 404 || !strings.Contains(other.body, "find that job. It may have been finished") {
		t.Fatalf("another operator's view of the job: %d", other.status)
	}
	// Logout ends the session.
	b.do("POST", "/logout", url.Values{"_csrf": {b.csrf}})
	if b.do("GET", "/", nil); b.status != 303 {
		t.Fatalf("home after logout: %d", b.status)
	}
}

// claimOnPage logs the operator in, enqueues a job, claims it from the
// home page and opens its work page: it returns the browser, the job's id
// and the reservation token of the page's forms.
func (a *app) claimOnPage(title string) (*browser, string, string) {
	a.t.Helper()
	b := a.browser()
	b.login(a.opName, "password-"+a.opName)
	id := a.enqueue(title)
	b.do("GET", "/", nil)
	b.do("POST", "/claim", url.Values{"_csrf": {b.csrf}})
	if b.body != "/jobs/"+id {
		a.t.Fatalf("claim any went to %s, want /jobs/%s", b.body, id)
	}
	b.do("GET", "/jobs/"+id, nil)
	m := regexp.MustCompile(`name="token" value="([0-9a-f]+)"`).FindStringSubmatch(b.body)
	if m == nil {
		a.t.Fatal("the work page has no reservation token")
	}
	return b, id, m[1]
}

func TestCompleteFromTheWorkPage(t *testing.T) {
	a := newApp(t)
	b, id, token := a.claimOnPage("form")
	// Nothing typed is dropped unsaid: a value without a name, or a name
	// twice, is refused, the job still held.
	for _, tc := range []struct {
		keys, values []string
		says         string
	}{
		{[]string{"verdict", ""}, []string{"approved", "not dropped"}, `<span id="problem-row-2" class="field-problem" data-testid="problem-row-2">This row has a value but no name`},
		{[]string{"verdict", "verdict"}, []string{"approved", "rejected"}, `<span id="problem-row-2" class="field-problem" data-testid="problem-row-2">This row has the name &#34;verdict&#34; again`},
	} {
		b.do("POST", "/jobs/"+id+"/complete", url.Values{"_csrf": {b.csrf}, "token": {token}, "key": tc.keys, "value": tc.values})
		if b.status != http.StatusBadRequest || !strings.Contains(b.body, tc.says) {
			t.Fatalf("complete with %v = %v: %d, want 400 saying %q", tc.keys, tc.values, b.status, tc.says)
		}
		// The row's name box points to the problem (the page's script
		// takes the operator there).
		box := regexp.MustCompile(`<input name="key" aria-label="Field name 2"[^>]*>`).FindString(b.body)
		if !strings.Contains(box, `aria-describedby="problem-row-2"`) || !strings.Contains(box, `aria-invalid="true"`) {
			t.Fatalf("complete with %v: the second row's name box is not marked: %s", tc.keys, box)
		}
	}
	// A row the page does not have (a hand-made form) is still refused, in words.
	b.do("POST", "/jobs/"+id+"/complete", url.Values{"_csrf": {b.csrf}, "token": {token},
		"key": {"a", "b", "c", ""}, "value": {"1", "2", "3", "4"}})
	if b.status != http.StatusBadRequest || !strings.Contains(b.body, "Result field 4 has a value but no name") {
		t.Fatalf("complete with a fourth row without a name: %d", b.status)
	}
	if j, _ := a.tasks.Get(context.Background(), id); j.State != tasks.StateReserved {
		t.Fatalf("a refused complete changed the job: %s", j.State)
	}
	b.do("POST", "/jobs/"+id+"/complete", url.Values{"_csrf": {b.csrf}, "token": {token}, "notes": {" all good "},
		"key": {"verdict", ""}, "value": {"approved", " "}})
	if b.status != 303 || b.body != "/" {
		t.Fatalf("complete: %d %s", b.status, b.body)
	}
	// The home page it leads to says so, and already lists the job among
	// the operator's recent work.
	b.do("GET", "/", nil)
	if !strings.Contains(b.body, "Completed. Nice work.") {
		t.Fatal("no flash after completing")
	}
	recent := b.body[max(0, strings.Index(b.body, `data-testid="recent-work"`)):]
	if !strings.Contains(recent, `data-job-id="`+id+`"`) {
		t.Fatal("the home page after completing does not list the job in My recent work")
	}
	j, err := a.tasks.Get(context.Background(), id)
	if err != nil || j.State != tasks.StateCompleted || string(j.Result) != `{"notes":"all good","verdict":"approved"}` {
		t.Fatalf("completed job = %+v, %v", j, err)
	}
}

func TestLoginThrottle(t *testing.T) {
	a := newApp(t)
	b := a.browser()
	for range 10 {
		b.login(a.opName, "wrong-password")
	}
	if b.login(a.opName, "password-"+a.opName); b.status != 429 {
		t.Fatalf("login after 10 failures: %d", b.status)
	}
	// The page says how long, in words: the name's 10 tries come back
	// when its 5-minute window ends.
	if !regexp.MustCompile(`Too many failed attempts\. Try again in [1-5] minutes?\.`).MatchString(b.body) {
		t.Fatalf("the throttled login page does not say how long to wait:\n%.2000s", b.body)
	}
}

func TestLoginRedirectStaysOnSite(t *testing.T) {
	a := newApp(t)
	for next, want := range map[string]string{
		"/jobs/x?a=1":                        "/jobs/x?a=1",
		"http://example.test/jobs/x":         "/jobs/x",
		"http://example.test//evil.example/": "/",
		"http://example.test.evil.example/":  "/",
		"//evil.example/":                    "/",
		"/\t/evil.example":                   "/",
		"/\\evil.example":                    "/",
		"https://evil/":                      "/",
		"javascript:x":                       "/",
		"":                                   "/",
	} {
		b := a.browser()
		b.do("GET", "/login", nil)
		b.do("POST", "/login", url.Values{"name": {a.opName}, "password": {"password-" + a.opName}, "_csrf": {b.csrf}, "next": {next}})
		if b.status != 303 || b.body != want {
			t.Errorf("next %q: %d → %q, want %q", next, b.status, b.body, want)
		}
	}
}

func TestUnknownPagesAndFlashes(t *testing.T) {
	a := newApp(t)
	name := fmt.Sprint("boss", seq.Add(1))
	if err := a.users.Put(context.Background(), users.User{Name: name, Role: users.Supervisor}, "password-boss"); err != nil {
		t.Fatal(err)
	}
	sup := a.browser()
	sup.login(name, "password-boss")
	if sup.do("GET", "/no-such-page", nil); sup.status != 404 || !strings.Contains(sup.body, "Not found") ||
		!strings.Contains(sup.body, "There is no page at this address.") {
		t.Fatalf("supervisor on an unknown page: %d", sup.status)
	}
	// A flash waits for the next whole page; htmx fragments leave it alone,
	// and so does a whole page the page's script fetches for a part of it.
	op := a.browser()
	op.login(a.opName, "password-"+a.opName)
	op.do("GET", "/", nil)
	op.do("POST", "/claim", url.Values{"_csrf": {op.csrf}}) // nothing ready: a flash
	op.do("GET", "/fragments/home", nil)
	if _, body := op.get("/", http.Header{"HX-Request": {"true"}}); strings.Contains(body, "Nothing is waiting") {
		t.Fatal("a page fetched by script showed the flash")
	}
	if op.do("GET", "/", nil); !strings.Contains(op.body, "Nothing is waiting") {
		t.Fatal("the fragment, or the page fetched by script, swallowed the flash")
	}
}
