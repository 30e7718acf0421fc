package faults

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"claimdesk/internal/tasks"
	"claimdesk/internal/webhooks/receivertest"
)

// The webhook settings of the deployment: loopback allowed (the receiver
// listens there), attempts cut short after 1 s, and retries within
// seconds, so that the events of a short test can use up their attempts
// only if something is wrong.
var webhookEnv = []string{
	"CLAIMDESK_WEBHOOK_ALLOW_NETWORKS=127.0.0.0/8",
	"CLAIMDESK_WEBHOOK_TIMEOUT=1s",
	"CLAIMDESK_WEBHOOK_RETRY_SCHEDULE=0s,100ms,200ms,500ms,1s,1s,2s,2s,3s,3s",
}

// reply is how the test's receiver answers its n-th request: one in ten
// 500, one in ten slowly but in time, one in twenty too late (after the
// instances' 1 s timeout), the others at once. It reports whether the
// answer was a 2xx in time: the receiver took the delivery.
func reply(n int) (receivertest.Reply, bool) {
	switch {
	case n%10 == 3:
		return receivertest.Reply{Status: http.StatusInternalServerError}, false
	case n%10 == 6:
		return receivertest.Reply{Delay: 300 * time.Millisecond}, true
	case n%20 == 9:
		return receivertest.Reply{Delay: 1500 * time.Millisecond}, false
	}
	return receivertest.Reply{}, true
}

// A webhook, registered with claimdesk's command, listens to the queue for
// job.completed and batch.finished while producers and operators work
// through the API and each instance, then Redis, is killed and started
// again; the receiver answers some requests 500 and some slowly or too
// late. Every job the store holds
// completed and every batch reaches the receiver and is taken (answered
// 2xx in time) at least once; every repeat of an event comes under its one
// webhook-id with its one body; every request verifies; and in the end
// nothing is left in the outbox or waiting for an attempt.
func TestWebhooksThroughKills(t *testing.T) {
	t.Parallel()
	redis := aofRedis(t)
	rc := receivertest.Start(t)
	rc.Answer(func(n int, _ receivertest.Delivery) receivertest.Reply {
		r, _ := reply(n)
		return r
	})
	d := deploy(t, "redis://"+redis.Addr(), 10, webhookEnv...)
	hook, secret := d.addWebhook(rc.URL(), "job.completed,batch.finished")
	rc.SetSecrets(secret)

	l := run(t, d, plan{loadFor: 30 * time.Second, faults: kills(t, d, redis), batchSize: 5})
	end := time.Now()
	completed := l.c.jobs(t, "completed")

	// Wait for an event taken by the receiver for every completed job and
	// every batch; what arrives is read once, as it arrives.
	want := map[string]bool{}
	for _, id := range completed {
		want[string(tasks.EventJobCompleted)+" "+id] = true
	}
	for id := range l.batches {
		want[string(tasks.EventBatchFinished)+" "+id] = true
	}
	taken := map[string]receivertest.Delivery{} // event (type and id) → its first taken
	read := 0
	rc.Wait(t, func(ds []receivertest.Delivery) bool {
		for _, dl := range ds[read:] {
			if _, ok := reply(dl.N); ok && dl.Bad == "" {
				key := eventOf(t, dl)
				if _, seen := taken[key]; !seen {
					taken[key] = dl
				}
			}
		}
		read = len(ds)
		for key := range want {
			if _, ok := taken[key]; !ok {
				return false
			}
		}
		return true
	}, 90*time.Second)
	waited := time.Since(end)

	// Nothing left, as an instance's metrics tell: the outbox handed on
	// and emptied, none of its events dropped, no delivery waiting for an
	// attempt (one whose attempt an instance killed was making is
	// attempted again once its lease ends).
	deadline := time.Now().Add(90 * time.Second)
	for {
		m := d.webs[0].metrics()
		waiting, lost, pending := m[`claimdesk_webhook_outbox_events{queue="`+queue+`"}`],
			m[`claimdesk_webhook_outbox_lost_total{queue="`+queue+`"}`], m[`claimdesk_webhook_pending{webhook="`+hook+`"}`]
		if waiting == "0" && pending == "0" {
			if lost != "0" {
				t.Errorf("the outbox's cap dropped %s events", lost)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not settled within 90s: %s events in the outbox, %s deliveries pending", waiting, pending)
		}
		time.Sleep(100 * time.Millisecond)
	}
	settled := time.Since(end)

	ds := rc.Deliveries()
	if bad := rc.Bad(); len(bad) > 0 {
		t.Errorf("%d requests were not deliveries as they should be, the first: %s", len(bad), bad[0])
	}
	// One event, one webhook-id and one body, however often it came; and
	// no event of a job the store does not hold completed.
	idOf, bodyOf := map[string]string{}, map[string]string{}
	again := 0 // requests of an event the receiver had taken already
	for _, dl := range ds {
		if dl.Bad != "" {
			continue
		}
		key := eventOf(t, dl)
		if dl.N > taken[key].N {
			again++
		}
		if !want[key] {
			t.Errorf("an event of nothing the store holds finished: %s", dl.Body)
		}
		first, seen := idOf[key]
		switch {
		case !seen:
			idOf[key], bodyOf[key] = dl.ID, string(dl.Body)
		case first != dl.ID:
			t.Errorf("%s came as %s and as %s", key, first, dl.ID)
		case bodyOf[key] != string(dl.Body):
			t.Errorf("%s came with two bodies:\n%s\n%s", key, bodyOf[key], dl.Body)
		}
	}
	// The row ends ENABLED, FAILING SINCE, LOST (the owner may hold a
	// space).
	if row := d.webhookRow(hook); len(row) < 8 || row[len(row)-3] != "yes" || row[len(row)-1] != "0" {
		t.Errorf("the webhook at the end, as claimdesk webhook list shows it: %q, want it enabled, none lost", row)
	}
	var lags []time.Duration
	for _, dl := range taken {
		lags = append(lags, dl.Arrived.Sub(dl.Event.Timestamp))
	}
	slices.Sort(lags)
	t.Logf("%d events (%d jobs completed, %d batches) taken by the receiver in %d requests (%d of an event taken already); the last %v after the load ended, all settled after %v; from an event to its taking: median %v, slowest %v",
		len(want), len(completed), len(l.batches), len(ds), again, waited.Round(10*time.Millisecond), settled.Round(10*time.Millisecond),
		lags[len(lags)/2].Round(time.Millisecond), lags[len(lags)-1].Round(time.Millisecond))
}

// eventOf names the event a delivery carries: its type and its job's or
// batch's id.
func eventOf(t *testing.T, dl receivertest.Delivery) string {
	t.Helper()
	var data struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(dl.Event.Data, &data); err != nil || data.ID == "" {
		t.Fatalf("delivery %d: data %s", dl.N, dl.Event.Data)
	}
	return fmt.Sprintf("%s %s", dl.Event.Type, data.ID)
}

// addWebhook registers a webhook for the events of the queue with
// claimdesk's command, and returns its id and secret.
func (d *deployment) addWebhook(url, events string) (id, secret string) {
	d.t.Helper()
	out := d.admin("webhook", "add", "--url", url, "--events", events, "--queues", queue)
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "webhook "); ok {
			id, _, _ = strings.Cut(rest, " ")
		}
		if rest, ok := strings.CutPrefix(line, "secret "); ok {
			secret = rest
		}
	}
	if id == "" || secret == "" {
		d.t.Fatalf("claimdesk webhook add printed no id or secret:\n%s", out)
	}
	return id, secret
}

// webhookRow is the webhook's row of claimdesk webhook list, its columns
// split at spaces.
func (d *deployment) webhookRow(id string) []string {
	d.t.Helper()
	for _, line := range strings.Split(d.admin("webhook", "list"), "\n") {
		if row := strings.Fields(line); len(row) > 0 && row[0] == id {
			return row
		}
	}
	return nil
}

// metrics is what the instance's /metrics says: each series, labels and
// all, to its value as written.
func (w *web) metrics() map[string]string {
	w.t.Helper()
	res, err := http.Get("http://" + w.addr + "/metrics")
	if err != nil {
		w.t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil || res.StatusCode != http.StatusOK {
		w.t.Fatalf("/metrics answered %d: %v", res.StatusCode, err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if series, value, ok := strings.Cut(line, " "); ok && !strings.HasPrefix(line, "#") {
			out[series] = value
		}
	}
	return out
}
