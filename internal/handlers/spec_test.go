package handlers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"claimdesk/api"
	"claimdesk/internal/handlers"
	"claimdesk/internal/users"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"go.yaml.in/yaml/v4"
)

// The API's contract, api/openapi.yaml, holds the server to it: every
// request the tests send under /api/v1 and every answer to it are checked
// against it (checked wraps the servers of the tests' apps), every route
// the server registers under /api/v1 is in it and every operation of it is
// served, and by the end of a whole run every operation has been answered
// each of its successes (contractCoverage, from TestMain).

// contract is the loaded contract, and what the run has answered of it.
var contract struct {
	once   sync.Once
	doc    *openapi3.T
	router routers.Router
	err    error

	mu sync.Mutex
	// answered holds, by operation id, the statuses answered.
	answered map[string]map[int]bool
}

// loadContract loads and validates the contract once for the package.
func loadContract() (*openapi3.T, routers.Router, error) {
	contract.once.Do(func() {
		ctx := context.Background()
		doc, err := openapi3.NewLoader().LoadFromData(api.YAML)
		if err == nil {
			err = doc.Validate(ctx)
		}
		if err != nil {
			contract.err = fmt.Errorf("api/openapi.yaml: %w", err)
			return
		}
		closeAnswers(doc)
		contract.doc = doc
		contract.router, contract.err = gorillamux.NewRouter(doc)
		contract.answered = map[string]map[int]bool{}
	})
	return contract.doc, contract.router, contract.err
}

// closeAnswers makes every object of an answer that lists its properties
// take no others: the document leaves answers open, so that clients
// ignore fields a later version adds, but the server must send no field
// the document does not know of. The parts of an allOf (a reference's
// siblings, which narrow an error's code) each list only some of the
// properties, and stay open.
func closeAnswers(doc *openapi3.T) {
	seen := map[*openapi3.Schema]bool{}
	var walk func(s *openapi3.SchemaRef, close bool)
	walk = func(s *openapi3.SchemaRef, close bool) {
		if s == nil || s.Value == nil || seen[s.Value] {
			return
		}
		v := s.Value
		seen[v] = true
		if close && len(v.Properties) > 0 && v.AdditionalProperties.Has == nil && v.AdditionalProperties.Schema == nil {
			v.AdditionalProperties = openapi3.AdditionalProperties{Has: openapi3.Ptr(false)}
		}
		for _, p := range v.Properties {
			walk(p, true)
		}
		for _, o := range slices.Concat(v.OneOf, v.AnyOf) {
			walk(o, close)
		}
		for _, o := range v.AllOf {
			walk(o, false)
		}
		walk(v.Items, true)
		walk(v.AdditionalProperties.Schema, true)
	}
	for _, path := range doc.Paths.Map() {
		for _, op := range path.Operations() {
			for _, res := range op.Responses.Map() {
				for _, media := range res.Value.Content {
					walk(media.Schema, true)
				}
			}
		}
	}
}

// checked wraps h, a claimdesk server, so that every exchange under
// /api/v1 is held to the contract: t fails on an answer that does not fit
// it, and on a request it refuses that the server took.
func checked(t *testing.T, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/api/v1/") {
			h.ServeHTTP(w, r)
			return
		}
		// What the handler reads of the body, as it reads it: a body read
		// here first would arrive at once, however slowly it was sent.
		var sent bytes.Buffer
		if r.Body != nil {
			r.Body = struct {
				io.Reader
				io.Closer
			}{io.TeeReader(r.Body, &sent), r.Body}
		}
		req := r.Clone(context.Background())
		rec := &recorder{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		if r.Context().Err() != nil {
			return // the client left: nobody was answered
		}
		if problem := contractProblem(req, sent.Bytes(), rec.status, rec.Header(), rec.body.Bytes()); problem != "" {
			t.Errorf("%s %s answered %d %s: %s", req.Method, req.URL.RequestURI(), rec.status, excerpt(rec.body.Bytes()), problem)
		}
	})
}

// recorder passes an answer on, and keeps its status and a copy of its
// body.
type recorder struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (r *recorder) WriteHeader(status int) {
	r.status = status
	r.ResponseWriter.WriteHeader(status)
}

func (r *recorder) Write(p []byte) (int, error) {
	r.body.Write(p)
	return r.ResponseWriter.Write(p)
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// excerpt is the start of a body, for a message.
func excerpt(body []byte) string {
	const most = 300
	if len(body) > most {
		return string(body[:most]) + "…"
	}
	return string(body)
}

// contractProblem says how an exchange under /api/v1 breaks the contract,
// or "" when it keeps it: req as it was sent, with sent the body the
// server read, and its answer. A request the contract refuses may be
// refused by the server for reasons of its own; it must not be taken.
func contractProblem(req *http.Request, sent []byte, status int, header http.Header, answer []byte) string {
	_, router, err := loadContract()
	if err != nil {
		return err.Error()
	}
	ctx := context.Background()
	req.Body = io.NopCloser(bytes.NewReader(sent))
	if len(sent) > 0 && req.Header.Get("Content-Type") == "" {
		// The server reads every body as JSON, whatever it is labelled.
		req.Header.Set("Content-Type", "application/json")
	}
	route, params, err := router.FindRoute(req)
	if err != nil {
		if status >= 400 {
			return "" // not a route of the API, and not served
		}
		return "the server serves what the contract does not have: " + err.Error()
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: presented, IncludeResponseStatus: true}}
	if err := openapi3filter.ValidateRequest(ctx, in); err != nil && status < 400 {
		return "the contract refuses the request, and the server took it: " + err.Error()
	}
	op := route.Operation
	contract.mu.Lock()
	if contract.answered[op.OperationID] == nil {
		contract.answered[op.OperationID] = map[int]bool{}
	}
	contract.answered[op.OperationID][status] = true
	contract.mu.Unlock()
	if err := openapi3filter.ValidateResponse(ctx, &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: status, Header: header, Body: io.NopCloser(bytes.NewReader(answer)),
		Options: in.Options,
	}); err != nil {
		return "the answer does not fit the contract: " + err.Error()
	}
	if res := op.Responses.Status(status); len(res.Value.Content) == 0 && len(answer) > 0 {
		return "the contract has no body for this answer"
	}
	return ""
}

// presented checks that the request carries the credentials of one of
// the operation's security schemes: the server judges whether they are
// good.
func presented(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	r := in.RequestValidationInput.Request
	switch in.SecuritySchemeName {
	case "bearer":
		if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
			return errors.New("no bearer token")
		}
	case "session":
		if _, err := r.Cookie("claimdesk_session"); err != nil {
			return errors.New("no session cookie")
		}
	case "csrf":
		if r.Header.Get("X-CSRF-Token") == "" {
			return errors.New("no CSRF token")
		}
	default:
		return fmt.Errorf("unknown security scheme %s", in.SecuritySchemeName)
	}
	return nil
}

// contractCoverage says, after a whole run of the package's tests, which
// successes of the contract's operations no test was answered. A run of
// some of the tests (-run, -skip) is not held to it.
func contractCoverage() error {
	for _, name := range []string{"test.run", "test.skip"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" {
			return nil
		}
	}
	doc, _, err := loadContract()
	if err != nil {
		return err
	}
	var missing []string
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			for code := range op.Responses.Map() {
				var status int
				if _, err := fmt.Sscan(code, &status); err != nil || status >= 300 {
					continue
				}
				if !contract.answered[op.OperationID][status] {
					missing = append(missing, fmt.Sprintf("%s %s (%s) answered %d", method, path, op.OperationID, status))
				}
			}
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("no test was answered these successes of api/openapi.yaml:\n  %s", strings.Join(missing, "\n  "))
	}
	return nil
}

// openAPIParam is a parameter of an OpenAPI path, {id}, which echo
// writes :id.
var openAPIParam = regexp.MustCompile(`\{([^}]+)\}`)

// TestContractRoutes holds the server's routes under /api/v1 and the
// contract's operations to each other, both ways.
func TestContractRoutes(t *testing.T) {
	doc, _, err := loadContract()
	if err != nil {
		t.Fatal(err)
	}
	inContract := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			inContract[method+" "+openAPIParam.ReplaceAllString(path, ":$1")] = true
		}
	}
	served := map[string]bool{}
	for _, r := range handlers.Routes() {
		if !strings.HasPrefix(r.Path, "/api/v1/") || !slices.Contains([]string{"GET", "POST", "PUT", "PATCH", "DELETE"}, r.Method) {
			continue
		}
		served[r.Method+" "+r.Path] = true
		if !inContract[r.Method+" "+r.Path] {
			t.Errorf("%s %s is served, but not in api/openapi.yaml", r.Method, r.Path)
		}
	}
	for route := range inContract {
		if !served[route] {
			t.Errorf("%s is in api/openapi.yaml, but not served", route)
		}
	}
}

// codesRow is a row of the contract's codes by status, in its
// introduction's Errors: "| 409 | `reservation_lost`, … |".
var codesRow = regexp.MustCompile(`(?m)^\| ([0-9]{3}) \| (.*) \|$`)

// quotedCode is an error code as a row quotes it.
var quotedCode = regexp.MustCompile("`([a-z_]+)`")

// TestContractErrorCodes holds the contract's codes by status to its
// ErrorCode, both ways (every code in one row), and to the server's table
// of error codes: each code the table gives is in the row of its status.
func TestContractErrorCodes(t *testing.T) {
	doc, _, err := loadContract()
	if err != nil {
		t.Fatal(err)
	}
	statusOf := map[string]int{}
	for _, row := range codesRow.FindAllStringSubmatch(doc.Info.Description, -1) {
		status, _ := strconv.Atoi(row[1])
		for _, c := range quotedCode.FindAllStringSubmatch(row[2], -1) {
			if s, ok := statusOf[c[1]]; ok {
				t.Errorf("api/openapi.yaml gives %s the statuses %d and %d", c[1], s, status)
			}
			statusOf[c[1]] = status
		}
	}
	enum := doc.Components.Schemas["ErrorCode"].Value.Enum
	for _, v := range enum {
		if _, ok := statusOf[v.(string)]; !ok {
			t.Errorf("api/openapi.yaml: ErrorCode %s is in no row of the codes by status (Errors)", v)
		}
	}
	for c := range statusOf {
		if !slices.Contains(enum, any(c)) {
			t.Errorf("api/openapi.yaml: %s is in the codes by status (Errors), but not an ErrorCode", c)
		}
	}
	for _, e := range handlers.ErrorCodes() {
		if statusOf[e.Code] != e.Status {
			t.Errorf("the server answers %s with %d, api/openapi.yaml with %d", e.Code, e.Status, statusOf[e.Code])
		}
	}
}

// externalAsset is a script or stylesheet an HTML page loads from a URL.
var externalAsset = regexp.MustCompile(`<script[^>]*\ssrc=|<link[^>]*\shref="(https?:)?//`)

// TestContractServed reads the contract and its reference page from the
// server, with no token: the document is the YAML's, as JSON.
func TestContractServed(t *testing.T) {
	a := newApp(t)
	res, err := http.Get(a.srv.URL + "/api/v1/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	served, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /api/v1/openapi.json: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	var fromYAML, fromJSON any
	if err := yaml.Unmarshal(api.YAML, &fromYAML); err != nil {
		t.Fatal(err)
	}
	asJSON, _ := json.Marshal(fromYAML)
	_ = json.Unmarshal(asJSON, &fromYAML)
	if err := json.Unmarshal(served, &fromJSON); err != nil {
		t.Fatalf("the served document is not JSON: %v", err)
	}
	if fmt.Sprint(fromJSON) != fmt.Sprint(fromYAML) {
		t.Fatalf("the served document is not api/openapi.yaml: %s", excerpt(served))
	}

	res, err = http.Get(a.srv.URL + "/api/reference")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	csp := res.Header.Get("Content-Security-Policy")
	if res.StatusCode != http.StatusOK || !bytes.Equal(page, api.Reference) || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /api/reference: %d %s, %d bytes", res.StatusCode, res.Header.Get("Content-Type"), len(page))
	}
	if external := externalAsset.Find(page); external != nil {
		t.Fatalf("the reference page loads %s from elsewhere", external)
	}
	// Each of its inline scripts (each ends at the first "</script>") is
	// allowed by its hash, and nothing else inline is.
	if scripts := strings.Count(string(page), "</script>"); strings.Count(csp, "'sha256-") != scripts || scripts == 0 ||
		strings.Contains(strings.SplitN(csp, "script-src", 2)[1], "unsafe") {
		t.Fatalf("the reference page's policy allows other scripts than its %d: %s", scripts, csp)
	}
}

// TestContractCatches shows that the check of an exchange fails when the
// server breaks the contract, each way it can.
func TestContractCatches(t *testing.T) {
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
			got := contractProblem(req, []byte(tc.sent), tc.status, asJSON, []byte(tc.answer))
			if (got == "") != (tc.problem == "") || !strings.Contains(got, tc.problem) {
				t.Fatalf("problem %q, want one saying %q", got, tc.problem)
			}
		})
	}
}

// TestLiveNoticesFitContract holds every message of the websocket to the
// contract's LiveMessage: a snapshot with a reservation, and the notices
// of a job's life.
func TestLiveNoticesFitContract(t *testing.T) {
	doc, _, err := loadContract()
	if err != nil {
		t.Fatal(err)
	}
	live := doc.Components.Schemas["LiveMessage"].Value
	fits := func(raw []byte) {
		t.Helper()
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("message is not JSON: %s", raw)
		}
		if err := live.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
			t.Errorf("message does not fit LiveMessage: %s: %v", excerpt(raw), err)
		}
	}
	a := newApp(t)
	_, sup := a.person(users.Supervisor)
	held := a.enqueue("held")
	_, token := a.claim()
	s, snapshot := a.live("supervisor", sup)
	if !bytes.Contains(snapshot, []byte(held)) {
		t.Fatalf("the snapshot has no reservation: %s", snapshot)
	}
	fits(snapshot)
	// A job's life, and a batch's: every kind of notice the supervisor
	// hears of them.
	a.expect("POST", "/api/v1/jobs/"+held+"/extend", a.operator, `{"token":"`+token+`","seconds":600}`, 200, "")
	a.expect("POST", "/api/v1/jobs/"+held+"/complete", a.operator, `{"token":"`+token+`"}`, 200, "")
	id := a.enqueue("given back")
	_, token = a.claim()
	a.expect("POST", "/api/v1/jobs/"+id+"/release", a.operator, `{"token":"`+token+`"}`, 200, "")
	a.expect("POST", "/api/v1/queues/"+a.queue+"/pause", a.super, "", 200, "")
	out := a.expect("POST", "/api/v1/queues/"+a.queue+"/batches", a.producer, `{"title":"b","jobs":[{"title":"j"}]}`, 201, "")
	a.expect("DELETE", "/api/v1/batches/"+out["batch"].(map[string]any)["id"].(string), a.producer, "", 200, "")
	a.published()
	kinds := map[string]bool{}
	for !kinds["batch.finished"] {
		raw := s.read()
		fits(raw)
		var m struct {
			Type    string
			Notices []struct{ Type string }
		}
		_ = json.Unmarshal(raw, &m)
		kinds[m.Type] = true
		for _, n := range m.Notices {
			kinds[n.Type] = true
		}
	}
	for _, kind := range []string{"reservation.extended", "reservation.completed", "reservation.released", "job.available",
		"job.finished", "queue.changed", "queue.settings", "batch.changed"} {
		if !kinds[kind] {
			t.Errorf("no %s notice came: %v", kind, kinds)
		}
	}
}
