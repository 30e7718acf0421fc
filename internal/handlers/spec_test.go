package handlers_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"claimdesk/api"
	"claimdesk/api/apitest"
	"claimdesk/internal/handlers"
	"claimdesk/internal/users"

	"github.com/getkin/kin-openapi/openapi3"
	"go.yaml.in/yaml/v4"
)

// The API's contract, api/openapi.yaml, holds the server to it: every
// request the tests send under /api/v1 and every answer to it are checked
// against it (checked wraps the servers of the tests' apps), every route
// the server registers under /api/v1 is in it and every operation of it is
// served, and by the end of a whole run every operation has been answered
// each of its successes (contractCoverage, from TestMain).

// answered holds, by operation id, the statuses the run was answered.
var answered struct {
	sync.Mutex
	by map[string]map[int]bool
}

// checked wraps h, a claimdesk server, so that every exchange under
// /api/v1 is held to the contract: t fails on an answer that does not fit
// it, and on a request it refuses that the server took.
func checked(t *testing.T, h http.Handler) http.Handler {
	return apitest.Checked(h, func(x apitest.Exchange, v apitest.Verdict) {
		if v.Operation != "" {
			answered.Lock()
			if answered.by == nil {
				answered.by = map[string]map[int]bool{}
			}
			if answered.by[v.Operation] == nil {
				answered.by[v.Operation] = map[int]bool{}
			}
			answered.by[v.Operation][x.Status] = true
			answered.Unlock()
		}
		if v.Problem != "" {
			t.Errorf("%s %s answered %d %s: %s", x.Request.Method, x.Request.URL.RequestURI(), x.Status, apitest.Excerpt(x.Answer), v.Problem)
		}
	})
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
	c, err := apitest.Contract()
	if err != nil {
		return err
	}
	var missing []string
	for path, item := range c.Doc.Paths.Map() {
		for method, op := range item.Operations() {
			for code := range op.Responses.Map() {
				var status int
				if _, err := fmt.Sscan(code, &status); err != nil || status >= 300 {
					continue
				}
				if !answered.by[op.OperationID][status] {
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
	c, err := apitest.Contract()
	if err != nil {
		t.Fatal(err)
	}
	inContract := map[string]bool{}
	for path, item := range c.Doc.Paths.Map() {
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
	c, err := apitest.Contract()
	if err != nil {
		t.Fatal(err)
	}
	doc := c.Doc
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
		t.Fatalf("the served document is not api/openapi.yaml: %s", apitest.Excerpt(served))
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

// TestLiveNoticesFitContract holds every message of the websocket to the
// contract's LiveMessage: a snapshot with a reservation, and the notices
// of a job's life.
func TestLiveNoticesFitContract(t *testing.T) {
	c, err := apitest.Contract()
	if err != nil {
		t.Fatal(err)
	}
	live := c.Doc.Components.Schemas["LiveMessage"].Value
	fits := func(raw []byte) {
		t.Helper()
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("message is not JSON: %s", raw)
		}
		if err := live.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
			t.Errorf("message does not fit LiveMessage: %s: %v", apitest.Excerpt(raw), err)
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
