package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"claimdesk/internal/durable"
	"claimdesk/internal/keys"
	"claimdesk/internal/tasks"
	"claimdesk/internal/tasks/taskstest"
	"claimdesk/internal/webhooks/receivertest"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// The tests share one standalone Redis and one 3-master Redis Cluster;
// each works in queues and endpoints of its own.
var backends []struct {
	name string
	rdb  redis.UniversalClient
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	server, err := taskstest.NewServer()
	if err != nil {
		fmt.Fprintln(os.Stderr, "webhooks tests:", err)
		return 1
	}
	defer server.Close()
	cluster, err := taskstest.NewCluster(3)
	if err != nil {
		fmt.Fprintln(os.Stderr, "webhooks tests:", err)
		return 1
	}
	defer cluster.Close()
	backends = append(backends, struct {
		name string
		rdb  redis.UniversalClient
	}{"standalone", server.Client()}, struct {
		name string
		rdb  redis.UniversalClient
	}{"cluster", cluster.Client()})
	return m.Run()
}

var queueSeq atomic.Int64

// fixture is a queue, a registry and a deliverer, for one test.
type fixture struct {
	t      *testing.T
	ctx    context.Context
	rdb    redis.UniversalClient
	tasks  *tasks.Store
	store  *Store
	egress *Egress
	queue  string
}

func newFixture(t *testing.T, rdb redis.UniversalClient) *fixture {
	t.Helper()
	f := &fixture{t: t, ctx: context.Background(), rdb: rdb, tasks: tasks.New(rdb),
		egress: &Egress{Allow: loopback(t), Timeout: 2 * time.Second}}
	sealer, err := NewSealer(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	f.store = NewStore(rdb, f.tasks, sealer, f.egress, durable.Policy{})
	f.queue = f.newQueue()
	t.Cleanup(func() {
		all, err := f.store.List(f.ctx)
		for _, e := range all {
			if _, err := f.store.Delete(f.ctx, e.ID); err != nil {
				t.Error(err)
			}
		}
		if err != nil {
			t.Error(err)
		}
	})
	return f
}

func (f *fixture) newQueue() string {
	f.t.Helper()
	name := fmt.Sprintf("wh%d", queueSeq.Add(1))
	if _, err := f.tasks.CreateQueue(f.ctx, tasks.Queue{Name: name}); err != nil {
		f.t.Fatal(err)
	}
	return name
}

// onEachBackend runs fn as a subtest on each backend, at once. The tests
// themselves run one after another: every deliverer delivers every
// endpoint of its Redis, as instances do.
func onEachBackend(t *testing.T, fn func(f *fixture)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			fn(newFixture(t, b.rdb))
		})
	}
}

// endpoint registers an endpoint for the fixture's queue and turns the
// outboxes on, as the desk does.
func (f *fixture) endpoint(url string, events ...tasks.EventType) (Endpoint, string) {
	f.t.Helper()
	if len(events) == 0 {
		events = tasks.EventTypes
	}
	e, secret, err := f.store.Create(f.ctx, NewEndpoint{URL: url, Events: events, Queues: []string{f.queue}, Owner: "pat"})
	if err != nil {
		f.t.Fatal(err)
	}
	if err := f.store.Sync(f.ctx); err != nil {
		f.t.Fatal(err)
	}
	return e, secret
}

// deliverer runs a deliverer, named instance, until the test ends.
func (f *fixture) deliverer(instance string, schedule []time.Duration) *Deliverer {
	return f.delivererTo(instance, schedule, nil)
}

// delivererTo runs a deliverer whose metrics reg takes.
func (f *fixture) delivererTo(instance string, schedule []time.Duration, reg prometheus.Registerer) *Deliverer {
	return f.run(Config{Schedule: schedule, Instance: instance, Registerer: reg})
}

// run runs a deliverer of cfg, on the fixture's stores, until the test
// ends.
func (f *fixture) run(cfg Config) *Deliverer {
	cfg.Store, cfg.Tasks, cfg.Egress, cfg.Takeover = f.store, f.tasks, f.egress, time.Second
	cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	d := NewDeliverer(cfg)
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan struct{})
	go func() { d.Run(ctx); close(done) }()
	f.t.Cleanup(func() { cancel(); <-done })
	f.tasks.Observe(d.Observe)
	return d
}

// complete enqueues and completes n jobs, each with its number as result.
func (f *fixture) complete(n int) []string {
	f.t.Helper()
	var ids []string
	for i := range n {
		out, err := f.tasks.Enqueue(f.ctx, f.queue, "pat", []tasks.NewJob{{Title: fmt.Sprint("job ", i)}})
		if err != nil {
			f.t.Fatal(err)
		}
		r, err := f.tasks.Claim(f.ctx, f.queue, "ann")
		if err != nil || r == nil {
			f.t.Fatalf("claim: %v, %v", r, err)
		}
		if _, err := f.tasks.Complete(f.ctx, r.Job.ID, r.Hold(), json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))); err != nil {
			f.t.Fatal(err)
		}
		ids = append(ids, out[0].Job.ID)
	}
	return ids
}

// distinct counts the distinct webhook-ids among the deliveries answered
// 2xx, if the receiver answered them so.
func distinct(ds []receivertest.Delivery) int {
	seen := map[string]bool{}
	for _, d := range ds {
		seen[d.ID] = true
	}
	return len(seen)
}

// A completed job reaches the endpoint as a signed job.completed with the
// job as the API answers it; the log shows the delivery succeeded.
func TestDeliversSignedEvents(t *testing.T) {
	onEachBackend(t, func(f *fixture) {
		rc := receivertest.Start(t)
		e, secret := f.endpoint(rc.URL())
		rc.SetSecrets(secret)
		reg := prometheus.NewRegistry()
		f.delivererTo("one", nil, reg)
		ids := f.complete(3)
		rc.Wait(t, func(ds []receivertest.Delivery) bool { return len(ds) >= 3 }, 10*time.Second)
		if bad := rc.Bad(); len(bad) > 0 {
			t.Fatalf("bad deliveries: %v", bad)
		}
		byJob := map[string]receivertest.Delivery{}
		for _, d := range rc.Deliveries() {
			var job tasks.Job
			if err := json.Unmarshal(d.Event.Data, &job); err != nil {
				t.Fatal(err)
			}
			if d.Event.Type != string(tasks.EventJobCompleted) || job.CompletedBy != "ann" || job.State != tasks.StateCompleted {
				t.Fatalf("delivery %s: %s %s", d.ID, d.Event.Type, d.Event.Data)
			}
			byJob[job.ID] = d
		}
		for i, id := range ids {
			d, ok := byJob[id]
			if !ok {
				t.Fatalf("no delivery of %s", id)
			}
			stored, _ := f.tasks.Get(f.ctx, id)
			want, _ := json.Marshal(stored)
			if string(d.Event.Data) != string(want) || !strings.Contains(string(d.Event.Data), fmt.Sprintf(`"result":{"n":%d}`, i)) {
				t.Fatalf("data %s, want %s", d.Event.Data, want)
			}
		}
		waitFor(t, "deliveries logged as succeeded", func() bool {
			ds, err := f.store.Deliveries(f.ctx, e.ID, 10)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, d := range ds {
				if d.State == StateSucceeded && d.Attempts == 1 && d.LastStatus == http.StatusNoContent {
					n++
				}
			}
			return n == 3
		})
		want := map[string]float64{
			`claimdesk_webhook_deliveries_total{result="succeeded"}`:       3,
			`claimdesk_webhook_first_attempt_seconds_count`:                3,
			`claimdesk_webhook_pending{webhook="` + e.ID + `"}`:            0,
			`claimdesk_webhook_lag_seconds{webhook="` + e.ID + `"}`:        0,
			`claimdesk_webhook_outbox_events{queue="` + f.queue + `"}`:     0,
			`claimdesk_webhook_outbox_lost_total{queue="` + f.queue + `"}`: 0,
		}
		got := gather(t, reg)
		for name, v := range want {
			if g, ok := got[name]; !ok || g != v {
				t.Errorf("%s = %v (there: %t), want %v", name, g, ok, v)
			}
		}
	})
}

// A job that misses its due time and moves to its queue's breach queue
// stays its first queue's endpoints' job: they receive its breach there,
// then its completion in the breach queue, which the endpoint does not
// name.
func TestMovedJobsEvents(t *testing.T) {
	onEachBackend(t, func(f *fixture) {
		leads := f.newQueue()
		if _, _, err := f.tasks.PatchQueue(f.ctx, f.queue, tasks.QueuePatch{BreachQueue: &leads}); err != nil {
			t.Fatal(err)
		}
		rc := receivertest.Start(t)
		_, secret := f.endpoint(rc.URL(), tasks.EventJobSLABreached, tasks.EventJobCompleted)
		rc.SetSecrets(secret)
		f.deliverer("one", nil)
		past := time.Now().Add(-time.Minute)
		if _, err := f.tasks.Enqueue(f.ctx, f.queue, "pat", []tasks.NewJob{{Title: "late", DueAt: &past}}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := f.tasks.WatchDue(f.ctx, f.queue, 10); err != nil {
			t.Fatal(err)
		}
		if n, _, err := f.tasks.MoveBreached(f.ctx, f.queue, 10); err != nil || n != 1 {
			t.Fatalf("MoveBreached = %d, %v", n, err)
		}
		r, err := f.tasks.Claim(f.ctx, leads, "ann")
		if err != nil || r == nil {
			t.Fatalf("claim: %v, %v", r, err)
		}
		if _, err := f.tasks.Complete(f.ctx, r.Job.ID, r.Hold(), json.RawMessage(`{}`)); err != nil {
			t.Fatal(err)
		}
		rc.Wait(t, func(ds []receivertest.Delivery) bool { return len(ds) >= 2 }, 10*time.Second)
		got := map[string]tasks.Job{}
		for _, d := range rc.Deliveries() {
			var job tasks.Job
			if err := json.Unmarshal(d.Event.Data, &job); err != nil {
				t.Fatal(err)
			}
			got[d.Event.Type] = job
		}
		breached, done := got[string(tasks.EventJobSLABreached)], got[string(tasks.EventJobCompleted)]
		if len(got) != 2 || breached.Queue != f.queue || done.Queue != leads || done.MovedFrom != f.queue || done.State != tasks.StateCompleted {
			t.Fatalf("delivered %+v", got)
		}
	})
}

// The log names what each delivery carries, for the pages: the job of a
// job's event, by id and title, and the batch of batch.finished.
func TestDeliveriesNameTheirSubject(t *testing.T) {
	onEachBackend(t, func(f *fixture) {
		rc := receivertest.Start(t)
		e, secret := f.endpoint(rc.URL())
		rc.SetSecrets(secret)
		f.deliverer("one", nil)
		b, jobs, err := f.tasks.CreateBatch(f.ctx, f.queue, "pat", tasks.NewBatch{Title: "Q3 invoices", Jobs: []tasks.NewJob{{Title: "INV-7"}}})
		if err != nil {
			t.Fatal(err)
		}
		r, err := f.tasks.Claim(f.ctx, f.queue, "ann")
		if err != nil || r == nil {
			t.Fatalf("claim: %v, %v", r, err)
		}
		if _, err := f.tasks.Complete(f.ctx, r.Job.ID, r.Hold(), json.RawMessage(`{}`)); err != nil {
			t.Fatal(err)
		}
		want := map[tasks.EventType]string{tasks.EventJobCompleted: jobs[0].Job.ID + " INV-7", tasks.EventBatchFinished: b.ID + " Q3 invoices"}
		waitFor(t, "both deliveries logged", func() bool {
			ds, err := f.store.Deliveries(f.ctx, e.ID, 10)
			if err != nil {
				t.Fatal(err)
			}
			got := map[tasks.EventType]string{}
			for _, d := range ds {
				got[d.Event] = d.Subject + " " + d.Title
			}
			return len(ds) == 2 && got[tasks.EventJobCompleted] == want[tasks.EventJobCompleted] &&
				got[tasks.EventBatchFinished] == want[tasks.EventBatchFinished]
		})
		// The API's object of a delivery is as it was.
		ds, _ := f.store.Deliveries(f.ctx, e.ID, 1)
		if raw, _ := json.Marshal(ds[0]); strings.Contains(string(raw), "INV-7") || strings.Contains(string(raw), "Q3 invoices") {
			t.Fatalf("a delivery's JSON names its subject: %s", raw)
		}
	})
}

// gather reads the registry's metrics, as name{labels} → value (a
// histogram as its _count).
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, fam := range families {
		for _, m := range fam.GetMetric() {
			name := fam.GetName()
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+`="`+l.GetValue()+`"`)
			}
			if len(labels) > 0 {
				name += "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case m.Counter != nil:
				out[name] = m.GetCounter().GetValue()
			case m.Gauge != nil:
				out[name] = m.GetGauge().GetValue()
			case m.Histogram != nil:
				out[name+"_count"] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

// waitFor waits until cond holds, looking again every few milliseconds,
// for up to 10 seconds: for what only the store shows.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not so within 10s: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Failed attempts are retried on the schedule under the same webhook-id
// and body, each signed afresh, until one succeeds; Retry-After holds the
// next attempt back.
func TestRetries(t *testing.T) {
	onEachBackend(t, func(f *fixture) {
		rc := receivertest.Start(t)
		rc.Answer(func(n int, _ receivertest.Delivery) receivertest.Reply {
			switch n {
			case 1:
				return receivertest.Reply{Status: http.StatusInternalServerError}
			case 2:
				return receivertest.Reply{Status: http.StatusTooManyRequests, RetryAfter: "1"}
			}
			return receivertest.Reply{Status: http.StatusOK}
		})
		e, secret := f.endpoint(rc.URL())
		rc.SetSecrets(secret)
		f.deliverer("one", []time.Duration{0, 10 * time.Millisecond, 10 * time.Millisecond, 10 * time.Millisecond})
		f.complete(1)
		rc.Wait(t, func(ds []receivertest.Delivery) bool { return len(ds) >= 3 }, 10*time.Second)
		ds := rc.Deliveries()
		if bad := rc.Bad(); len(bad) > 0 || distinct(ds) != 1 || string(ds[0].Body) != string(ds[2].Body) {
			t.Fatalf("retries: bad %v, %d ids", bad, distinct(ds))
		}
		if gap := ds[2].Arrived.Sub(ds[1].Arrived); gap < 900*time.Millisecond {
			t.Fatalf("attempt after a 429 with Retry-After: 1 came %v later", gap)
		}
		waitFor(t, "the delivery logged as succeeded at its third attempt", func() bool {
			got, _ := f.store.Deliveries(f.ctx, e.ID, 10)
			return len(got) == 1 && got[0].State == StateSucceeded && got[0].Attempts == 3
		})
	})
}

// A delivery whose attempts are used up stays in the log, failed, and a
// replay delivers it again under the same webhook-id.
func TestFailedThenReplayed(t *testing.T) {
	onEachBackend(t, func(f *fixture) {
		rc := receivertest.Start(t)
		var failing atomic.Bool
		failing.Store(true)
		rc.Answer(func(int, receivertest.Delivery) receivertest.Reply {
			if failing.Load() {
				return receivertest.Reply{Status: http.StatusBadGateway, Body: "upstream down"}
			}
			return receivertest.Reply{Status: http.StatusNoContent}
		})
		e, secret := f.endpoint(rc.URL())
		rc.SetSecrets(secret)
		f.deliverer("one", []time.Duration{0, 10 * time.Millisecond})
		f.complete(1)
		var failed Delivery
		waitFor(t, "the delivery failed for good", func() bool {
			got, _ := f.store.Deliveries(f.ctx, e.ID, 10)
			if len(got) == 1 && got[0].State == StateFailed {
				failed = got[0]
				return true
			}
			return false
		})
		if failed.Attempts != 2 || failed.LastStatus != http.StatusBadGateway || failed.LastResponse != "upstream down" || failed.NextAttemptAt != nil {
			t.Fatalf("failed delivery %+v", failed)
		}
		if got, err := f.store.Get(f.ctx, e.ID); err != nil || got.FailingSince == nil || !got.Enabled {
			t.Fatalf("endpoint after failures: %+v, %v", got, err)
		}
		failing.Store(false)
		if _, err := f.store.Replay(f.ctx, e.ID, failed.ID); err != nil {
			t.Fatal(err)
		}
		rc.Wait(t, func(ds []receivertest.Delivery) bool { return len(ds) == 3 }, 10*time.Second)
		if ds := rc.Deliveries(); distinct(ds) != 1 || len(rc.Bad()) > 0 {
			t.Fatalf("replay: %d ids, bad %v", distinct(ds), rc.Bad())
		}
		waitFor(t, "the endpoint healthy again", func() bool {
			got, _ := f.store.Get(f.ctx, e.ID)
			return got.FailingSince == nil
		})
		if _, err := f.store.Replay(f.ctx, e.ID, "evt_nope"); err != ErrDeliveryNotFound {
			t.Fatalf("replay of no delivery: %v", err)
		}
	})
}

// 410 Gone disables the endpoint: what follows waits for it, undelivered.
func TestGoneDisables(t *testing.T) {
	onEachBackend(t, func(f *fixture) {
		rc := receivertest.Start(t)
		rc.Answer(func(int, receivertest.Delivery) receivertest.Reply {
			return receivertest.Reply{Status: http.StatusGone}
		})
		e, secret := f.endpoint(rc.URL())
		rc.SetSecrets(secret)
		d := f.deliverer("one", nil)
		if n := d.Disabled(); n != 0 {
			t.Fatalf("%d endpoints counted disabled before any", n)
		}
		f.complete(1)
		waitFor(t, "the endpoint disabled as gone", func() bool {
			got, _ := f.store.Get(f.ctx, e.ID)
			return !got.Enabled && got.DisabledReason == DisabledGone
		})
		waitFor(t, "the deliverer counting it disabled", func() bool { return d.Disabled() == 1 })
		f.complete(1)
		waitFor(t, "the next event waiting for the endpoint", func() bool {
			n, _, _ := f.store.Pending(f.ctx, e.ID)
			return n == 1
		})
		if n := len(rc.Deliveries()); n != 1 {
			t.Fatalf("%d requests to a disabled endpoint's URL, want the one answered 410", n)
		}
		// Paused, it is no longer disabled by its receiver: not counted.
		off, on := false, true
		if _, _, err := f.store.Update(f.ctx, e.ID, Patch{Enabled: &off}); err != nil {
			t.Fatal(err)
		}
		d.Changed(f.ctx)
		if n := d.Disabled(); n != 0 {
			t.Fatalf("a paused endpoint counted disabled: %d", n)
		}
		if _, _, err := f.store.Update(f.ctx, e.ID, Patch{Enabled: &on}); err != nil {
			t.Fatal(err)
		}
		rc.Answer(func(int, receivertest.Delivery) receivertest.Reply { return receivertest.Reply{Status: http.StatusOK} })
		rc.Wait(t, func(ds []receivertest.Delivery) bool { return len(ds) == 2 }, 10*time.Second)
	})
}

// An endpoint whose attempts have all failed for FailingLimit is disabled
// at its next failure.
func TestFailingForDaysDisables(t *testing.T) {
	onEachBackend(t, func(f *fixture) {
		rc := receivertest.Start(t)
		rc.Answer(func(int, receivertest.Delivery) receivertest.Reply {
			return receivertest.Reply{Status: http.StatusInternalServerError}
		})
		e, secret := f.endpoint(rc.URL())
		rc.SetSecrets(secret)
		since := time.Now().Add(-FailingLimit - time.Minute).UnixMilli()
		if err := f.rdb.HSet(f.ctx, keys.WebhookHealth(e.ID), "failing_since", since).Err(); err != nil {
			t.Fatal(err)
		}
		f.deliverer("one", nil)
		f.complete(1)
		waitFor(t, "the endpoint disabled as failing", func() bool {
			got, _ := f.store.Get(f.ctx, e.ID)
			return !got.Enabled && got.DisabledReason == DisabledFailing
		})
	})
}

// During a rotation each attempt is signed with the new secret and the
// one before, so a receiver that knows either verifies it; once the
// overlap ends, only the new one signs.
func TestRotation(t *testing.T) {
	onEachBackend(t, func(f *fixture) {
		rc := receivertest.Start(t)
		e, old := f.endpoint(rc.URL())
		f.deliverer("one", nil)
		_, fresh, err := f.store.Rotate(f.ctx, e.ID)
		if err != nil || fresh == old {
			t.Fatalf("rotate: %v", err)
		}
		f.deliverer("two", nil).Changed(f.ctx)
		for i, secrets := range [][]string{{old}, {fresh}} {
			rc.SetSecrets(secrets...)
			f.complete(1)
			rc.Wait(t, func(ds []receivertest.Delivery) bool { return len(ds) == i+1 }, 10*time.Second)
		}
		if bad := rc.Bad(); len(bad) > 0 {
			t.Fatalf("during the rotation: %v", bad)
		}
		if sig := rc.Deliveries()[1].Signature; len(strings.Fields(sig)) != 2 {
			t.Fatalf("signature during a rotation %q, want two", sig)
		}
		got, _ := f.store.Get(f.ctx, e.ID)
		if got.PreviousSecretUntil == nil || time.Until(*got.PreviousSecretUntil) < RotationOverlap-time.Minute {
			t.Fatalf("previous secret until %v", got.PreviousSecretUntil)
		}
		f.store.clock = func() time.Time { return time.Now().Add(RotationOverlap + time.Minute) }
		r, _ := f.store.read(f.ctx, e.ID)
		ks, err := f.store.signingKeys(r, f.store.clock())
		if err != nil || len(ks) != 1 {
			t.Fatalf("after the overlap: %d keys, %v", len(ks), err)
		}
	})
}

// An event read by an instance that died before handing it on is taken
// over by another once it has waited Takeover.
func TestTakeover(t *testing.T) {
	onEachBackend(t, func(f *fixture) {
		rc := receivertest.Start(t)
		_, secret := f.endpoint(rc.URL())
		rc.SetSecrets(secret)
		f.complete(1)
		if got, err := f.tasks.ReadOutbox(f.ctx, f.queue, "died", 10, time.Hour); err != nil || len(got) != 1 {
			t.Fatalf("the dead instance's read: %v, %v", got, err)
		}
		f.deliverer("lives", nil)
		rc.Wait(t, func(ds []receivertest.Delivery) bool { return len(ds) == 1 }, 10*time.Second)
	})
}

// An attempt the endpoint answered while Redis was away is recorded once
// Redis is back, within the delivery's lease: it is not made again when
// the lease ends.
func TestSettlesWhenRedisIsBack(t *testing.T) {
	t.Parallel()
	srv, err := taskstest.NewServer("--appendonly", "yes")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	// No retries of the client's own, as claimdesk's client makes none.
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	f := newFixture(t, rdb)
	rc := receivertest.Start(t)
	e, secret := f.endpoint(rc.URL())
	rc.SetSecrets(secret)
	restarted := make(chan error, 1)
	rc.Answer(func(n int, _ receivertest.Delivery) receivertest.Reply {
		if n == 1 {
			// Redis dies before the answer goes, for 2 s.
			srv.Kill()
			go func() {
				time.Sleep(2 * time.Second)
				restarted <- srv.Restart()
			}()
		}
		return receivertest.Reply{}
	})
	f.deliverer("one", nil)
	f.complete(1)
	if err := <-restarted; err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the attempt recorded as succeeded", func() bool {
		got, _ := f.store.Deliveries(f.ctx, e.ID, 10)
		return len(got) == 1 && got[0].State == StateSucceeded && got[0].Attempts == 1
	})
	if n := len(rc.Deliveries()); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
}

// Registration refuses what would reach inside the network, events and
// queues that are not, and changes nothing.
func TestCreateRefuses(t *testing.T) {
	onEachBackend(t, func(f *fixture) {
		strict := NewStore(f.rdb, f.tasks, f.store.sealer, &Egress{}, durable.Policy{})
		for _, c := range []struct {
			n     NewEndpoint
			field string
		}{
			{NewEndpoint{URL: "http://127.0.0.1:9/hook", Events: tasks.EventTypes}, "url"},
			{NewEndpoint{URL: "https://169.254.169.254/latest", Events: tasks.EventTypes}, "url"},
			{NewEndpoint{URL: "https://localhost/x", Events: tasks.EventTypes}, "url"},
			{NewEndpoint{URL: "https://93.184.215.14/x"}, "events"},
			{NewEndpoint{URL: "https://93.184.215.14/x", Events: []tasks.EventType{"job.eaten"}}, "events"},
			{NewEndpoint{URL: "https://93.184.215.14/x", Events: tasks.EventTypes, Queues: []string{"Bad Name"}}, "queues"},
		} {
			_, _, err := strict.Create(f.ctx, c.n)
			inv, ok := err.(*InvalidError)
			if !ok || inv.Field != c.field || !errors.Is(err, ErrInvalid) {
				t.Errorf("Create(%+v) = %v, want refused for %s, an ErrInvalid", c.n, err, c.field)
			}
		}
		all, err := strict.List(f.ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range all {
			if strings.Contains(e.URL, "169.254") || strings.Contains(e.URL, "93.184.215.14") || strings.Contains(e.URL, "localhost") {
				t.Fatalf("a refusal registered %+v", e)
			}
		}
	})
}

// The secret is stored sealed: the registry in Redis does not hold it.
func TestSecretSealed(t *testing.T) {
	onEachBackend(t, func(f *fixture) {
		e, secret := f.endpoint("http://127.0.0.1:9/hook")
		raw, err := f.rdb.HGet(f.ctx, keys.WebhookEndpoints, e.ID).Result()
		if err != nil || strings.Contains(raw, strings.TrimPrefix(secret, SecretPrefix)) || !strings.HasPrefix(secret, SecretPrefix) {
			t.Fatalf("stored %q, %v", raw, err)
		}
		if _, err := f.store.Delete(f.ctx, e.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := f.store.Get(f.ctx, e.ID); err != ErrNotFound {
			t.Fatalf("after delete: %v", err)
		}
	})
}

// Beyond Backlog deliveries still to make, the oldest is dropped, counted
// and kept in the log, replayable.
func TestBacklogCap(t *testing.T) {
	f := newFixture(t, backends[0].rdb)
	e, _ := f.endpoint("http://127.0.0.1:9/hook")
	for i := range Backlog + 1 {
		d := stored{ID: fmt.Sprintf("evt_%06d", i), Event: tasks.EventJobCompleted, Queue: f.queue, At: int64(1000 + i), Body: "{}", State: StatePending}
		if err := f.store.add(f.ctx, e.ID, []stored{d}, 0); err != nil {
			t.Fatal(err)
		}
	}
	got, err := f.store.Get(f.ctx, e.ID)
	if n, _, _ := f.store.Pending(f.ctx, e.ID); err != nil || got.Lost != 1 || n != Backlog {
		t.Fatalf("lost %d, pending %d, %v", got.Lost, n, err)
	}
	ds, _ := f.store.Deliveries(f.ctx, e.ID, Backlog+1)
	if last := ds[len(ds)-1]; last.ID != "evt_000000" || last.State != StateDropped {
		t.Fatalf("oldest delivery %+v, want dropped", last)
	}
}

// An endpoint's events and queues in words, as the audit log and the
// command line say them.
func TestEndpointInWords(t *testing.T) {
	e := Endpoint{Events: []tasks.EventType{tasks.EventJobCompleted, tasks.EventBatchFinished}}
	if got := e.EventList() + " / " + e.QueueList(); got != "job.completed,batch.finished / every queue" {
		t.Fatalf("in words: %q", got)
	}
	e.Queues = []string{"invoice-review", "kyc"}
	if got := e.QueueList(); got != "invoice-review,kyc" {
		t.Fatalf("queues in words: %q", got)
	}
}

// An endpoint whose owner may no longer see the queue gets none of its
// events; they leave the outbox all the same.
func TestOwnerMayNotSee(t *testing.T) {
	onEachBackend(t, func(f *fixture) {
		rc := receivertest.Start(t)
		e, secret := f.endpoint(rc.URL())
		rc.SetSecrets(secret)
		f.run(Config{Instance: "one", May: func(_ context.Context, owner, queue string) bool {
			return owner != "pat" || queue != f.queue
		}})
		f.complete(2)
		waitFor(t, "the outbox emptied", func() bool {
			st, err := f.tasks.Outbox(f.ctx, f.queue)
			return err == nil && st.Waiting == 0
		})
		if ds, err := f.store.Deliveries(f.ctx, e.ID, 10); err != nil || len(ds) != 0 || len(rc.Deliveries()) != 0 {
			t.Fatalf("deliveries to an owner who may not see the queue: %+v, %v", ds, err)
		}
	})
}
