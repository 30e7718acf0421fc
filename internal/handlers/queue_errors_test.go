package handlers_test

import (
	"strings"
	"testing"

	"claimdesk/internal/users"
)

// Every API call that takes a queue answers 404 queue_not_found for a
// queue that does not exist, whoever asks, and 403 naming the queue and
// the role or grant missing for one that exists but is not theirs; and
// changes nothing either way.
func TestQueueRoutesSayNotFoundAndWhatGrantIsMissing(t *testing.T) {
	a := newApp(t)
	a.enqueue("stays")
	stranger, strangerToken := a.newUser(users.Producer, "elsewhere")
	otherOp := a.nameOf(a.other)
	for _, tc := range []struct {
		name, method, path, body string
		// who exists but is not granted the queue; missing is what the
		// refusal must name.
		who, missing string
	}{
		{"enqueue", "POST", "/api/v1/queues/{q}/jobs", `{"title":"x"}`, strangerToken, "is not granted to " + stranger},
		{"enqueue by an operator", "POST", "/api/v1/queues/{q}/jobs", `{"title":"x"}`, a.operator, "needs the producer or supervisor role"},
		{"create a batch", "POST", "/api/v1/queues/{q}/batches", `{"title":"b","jobs":[{"title":"x"}]}`, strangerToken, "is not granted to " + stranger},
		{"claim", "POST", "/api/v1/queues/{q}/claim", "", a.other, "is not granted to " + otherOp},
		{"claim by a producer", "POST", "/api/v1/queues/{q}/claim", "", a.producer, "needs the operator role"},
		{"claim any of a list", "POST", "/api/v1/claim", `{"queues":["{q}"]}`, a.other, "is not granted to " + otherOp},
		{"list jobs", "GET", "/api/v1/jobs?queue={q}", "", a.producer, "needs the supervisor role"},
		{"numbers", "GET", "/api/v1/queues/{q}/numbers", "", a.producer, "needs the supervisor role"},
		{"requeue dead", "POST", "/api/v1/queues/{q}/requeue-dead", "", a.operator, "needs the supervisor role"},
		{"change", "PATCH", "/api/v1/queues/{q}", `{"max_attempts":3}`, a.producer, "needs the supervisor role"},
		{"pause", "POST", "/api/v1/queues/{q}/pause", "", a.operator, "needs the supervisor role"},
		{"resume", "POST", "/api/v1/queues/{q}/resume", "", a.operator, "needs the supervisor role"},
		{"delete", "DELETE", "/api/v1/queues/{q}", "", a.producer, "needs the supervisor role"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at := func(q string) (string, string) {
				return strings.ReplaceAll(tc.path, "{q}", q), strings.ReplaceAll(tc.body, "{q}", q)
			}
			path, body := at(a.queue + "-misspelled")
			for _, who := range []string{tc.who, a.super} {
				a.expect(tc.method, path, who, body, 404, "queue_not_found")
			}
			path, body = at(a.queue)
			out := a.expect(tc.method, path, tc.who, body, 403, "forbidden")
			msg, _ := out["error"].(map[string]any)["message"].(string)
			if !strings.Contains(msg, "queue "+a.queue) || !strings.Contains(msg, tc.missing) {
				t.Errorf("%s: %q, want the queue %s and %q named", tc.name, msg, a.queue, tc.missing)
			}
		})
	}
	out := a.expect("GET", "/api/v1/queues", a.super, "", 200, "")
	for _, q := range out["queues"].([]any) {
		if q := q.(map[string]any); q["name"] == a.queue && (q["ready"] != 1.0 || q["paused"] == true) {
			t.Fatalf("refused calls changed the queue: %v", q)
		}
	}
}
