package apitest_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"claimdesk/api/apitest"
)

// TestJudgeCatches shows that an exchange is judged to break the
// contract when the server breaks it, each way it can.
func TestJudgeCatches(t *testing.T) {
	job := `{"id":"01KAQ3Z7M8R2C4V6X9B1N5T0HD.q","queue":"q","title":"t","payload":{},"priority":50,"state":"ready",` +
		`"attempts":0,"max_attempts":5,"lease_seconds":300,"created_at":"2026-11-23T09:12:04Z","run_at":"2026-11-23T09:12:04Z"}`
	token := http.Header{"Authorization": {"Bearer cdt_x"}}
	asJSON := http.Header{"Content-Type": {"application/json"}}
	for _, tc := range []struct {
		name, method, path string
		header             http.Header
		sent               string
		status             int
		answer             string
		problem            string // in the problem said; "" when none
	}{
		{"a job as it is", "GET", "/api/v1/jobs/x", token, "", 200, job, ""},
		{"a field left out", "GET", "/api/v1/jobs/x", token, "", 200, strings.Replace(job, `"state":"ready",`, "", 1), "state"},
		{"a field of another type", "GET", "/api/v1/jobs/x", token, "", 200, strings.Replace(job, `"priority":50`, `"priority":"50"`, 1), "priority"},
		{"a field the contract does not know", "GET", "/api/v1/jobs/x", token, "", 200, strings.Replace(job, `{`, `{"token":"secret",`, 1), "token"},
		{"a state it does not know", "GET", "/api/v1/jobs/x", token, "", 200, strings.Replace(job, `"ready"`, `"waiting"`, 1), "state"},
		{"a status it does not have", "GET", "/api/v1/jobs/x", token, "", 202, job, "status"},
		{"an error of another status", "GET", "/api/v1/jobs/x", token, "", 404,
			`{"error":{"code":"queue_not_found","message":"queue not found"}}`, "code"},
		{"a 429 without Retry-After", "GET", "/api/v1/jobs/x", token, "", 429,
			`{"error":{"code":"rate_limited","message":"Too many requests."}}`, "Retry-After"},
		{"a body where it has none", "DELETE", "/api/v1/queues/q", token, "", 204, `{}`, "no body"},
		{"a route it does not have, served", "GET", "/api/v1/secrets", token, "", 200, `{}`, "does not have"},
		{"a route it does not have, refused", "GET", "/api/v1/secrets", token, "", 404,
			`{"error":{"code":"not_found","message":"no such page"}}`, ""},
		{"a request it refuses, taken", "POST", "/api/v1/queues/q/jobs", token, `{"title":"t","priority":101}`, 201,
			`{"job":` + job + `}`, "refuses the request"},
		{"a request it refuses, refused", "POST", "/api/v1/queues/q/jobs", token, `{"title":"t","priority":101}`, 400,
			`{"error":{"code":"invalid_field","message":"priority must be between 0 and 100"}}`, ""},
		{"no credentials, taken", "GET", "/api/v1/jobs/x", nil, "", 200, job, "refuses the request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, tc.path, nil)
			req.Header = tc.header.Clone()
			got := apitest.Judge(apitest.Exchange{Request: req, Sent: []byte(tc.sent), Status: tc.status, Header: asJSON,
				Answer: []byte(tc.answer)}).Problem
			if (got == "") != (tc.problem == "") || !strings.Contains(got, tc.problem) {
				t.Fatalf("problem %q, want one saying %q", got, tc.problem)
			}
		})
	}
}

// TestCheckedJudgesTheAPIAlone hears of each exchange under /api/v1 with
// its verdict, the body as the server read it, and of nothing else.
func TestCheckedJudgesTheAPIAlone(t *testing.T) {
	server := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"job":{}}`)
	})
	var heard []string
	h := apitest.Checked(server, func(x apitest.Exchange, v apitest.Verdict) {
		heard = append(heard, fmt.Sprintf("%s %s %d %s", v.Operation, x.Sent, x.Status, v.Problem))
	})
	for _, path := range []string{"/api/v1/queues/q/jobs", "/login"} {
		req := httptest.NewRequest("POST", path, strings.NewReader(`{"title":"t"}`))
		req.Header.Set("Authorization", "Bearer cdt_x")
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	if len(heard) != 1 || !strings.HasPrefix(heard[0], `enqueue {"title":"t"} 201 the answer does not fit the contract`) {
		t.Fatalf("heard %q, want the enqueue alone, its answer refused", heard)
	}
}
