// Package apitest holds exchanges with claimdesk's HTTP API to its
// contract, api/openapi.yaml. The handlers' tests check every request
// they send under /api/v1, and its answer, through it; so does the run of
// generated requests against a live server in cmd/web.
package apitest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"claimdesk/api"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// Contract returns the contract, loaded and validated once, and a router
// that finds the operation of a request. Its answers take no property
// that they do not list (see closeAnswers).
var Contract = sync.OnceValues(func() (*Spec, error) {
	doc, err := openapi3.NewLoader().LoadFromData(api.YAML)
	if err == nil {
		err = doc.Validate(context.Background())
	}
	if err != nil {
		return nil, fmt.Errorf("api/openapi.yaml: %w", err)
	}
	closeAnswers(doc)
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("api/openapi.yaml: %w", err)
	}
	return &Spec{Doc: doc, Router: router}, nil
})

// Spec is the contract as Contract loads it.
type Spec struct {
	Doc    *openapi3.T
	Router routers.Router
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

// Exchange is one request under /api/v1 and the server's answer to it.
type Exchange struct {
	// Request is the request as it was sent, without its body: Sent is
	// the body, as the server read it.
	Request *http.Request
	Sent    []byte
	Status  int
	Header  http.Header
	Answer  []byte
}

// Verdict is what the contract says of an exchange.
type Verdict struct {
	// Operation is the id of the exchange's operation, "" when the
	// contract has no route for the request.
	Operation string
	// Refused says why the contract refuses the request; nil when it
	// takes it. The server may refuse a request for reasons of its own,
	// but must not take one that the contract refuses.
	Refused error
	// Problem says how the exchange breaks the contract; "" when it keeps
	// it.
	Problem string
}

// Judge holds an exchange to the contract.
func Judge(x Exchange) Verdict {
	c, err := Contract()
	if err != nil {
		return Verdict{Problem: err.Error()}
	}
	ctx := context.Background()
	req := x.Request.Clone(ctx)
	req.Body = io.NopCloser(bytes.NewReader(x.Sent))
	if len(x.Sent) > 0 && req.Header.Get("Content-Type") == "" {
		// The server reads every body as JSON, whatever it is labelled.
		req.Header.Set("Content-Type", "application/json")
	}
	route, params, err := c.Router.FindRoute(req)
	if err != nil {
		if x.Status >= 400 {
			return Verdict{} // not a route of the API, and not served
		}
		return Verdict{Problem: "the server serves what the contract does not have: " + err.Error()}
	}
	v := Verdict{Operation: route.Operation.OperationID}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: presented, IncludeResponseStatus: true}}
	v.Refused = openapi3filter.ValidateRequest(ctx, in)
	if v.Refused != nil && x.Status < 400 {
		v.Problem = "the contract refuses the request, and the server took it: " + v.Refused.Error()
		return v
	}
	if err := openapi3filter.ValidateResponse(ctx, &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: x.Status, Header: x.Header, Body: io.NopCloser(bytes.NewReader(x.Answer)),
		Options: in.Options,
	}); err != nil {
		v.Problem = "the answer does not fit the contract: " + err.Error()
		return v
	}
	if res := route.Operation.Responses.Status(x.Status); len(res.Value.Content) == 0 && len(x.Answer) > 0 {
		v.Problem = "the contract has no body for this answer"
	}
	return v
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

// Checked wraps h, a claimdesk server or a proxy to one, so that judged
// hears of every exchange under /api/v1 whose client stayed for the
// answer, with the contract's verdict. Other requests pass through.
func Checked(h http.Handler, judged func(Exchange, Verdict)) http.Handler {
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
		req.Body = nil
		rec := &recorder{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		if r.Context().Err() != nil {
			return // the client left: nobody was answered
		}
		x := Exchange{Request: req, Sent: sent.Bytes(), Status: rec.status, Header: rec.Header(), Answer: rec.body.Bytes()}
		judged(x, Judge(x))
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

// Excerpt is the start of a body, for a message.
func Excerpt(body []byte) string {
	const most = 300
	if len(body) > most {
		return string(body[:most]) + "…"
	}
	return string(body)
}
