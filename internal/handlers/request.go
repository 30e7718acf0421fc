package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	"claimdesk/internal/notify"
	"claimdesk/internal/strictjson"

	"github.com/labstack/echo/v4"
)

// Reading a request: a JSON body strictly, and the query's parameters.

// decode reads a JSON body into v strictly (decodeJSON).
func decode(c echo.Context, v any) error {
	body, err := io.ReadAll(c.Request().Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) || errors.Is(err, echo.ErrStatusRequestEntityTooLarge) {
			return newError(http.StatusRequestEntityTooLarge, "too_large", "request body too large")
		}
		return err
	}
	return decodeJSON(body, v)
}

// decodeJSON decodes body, one JSON value, into v strictly. Malformed JSON,
// data after the value and unknown fields are invalid_json; wrong types,
// text that is not valid UTF-8 or escapes half a surrogate pair, a key
// twice in one object (at any depth, payloads and results included) and a
// field name in other letter case ({"Title": …}, which encoding/json would
// take for "title") are invalid_field, naming the field. Either way v is
// not to be used.
func decodeJSON(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var typeErr *json.UnmarshalTypeError
		var timeErr *time.ParseError
		switch {
		case errors.As(err, &typeErr):
			return newError(http.StatusBadRequest, "invalid_field", "%s must be %s", typeErrorAt(body, typeErr), typeWords(typeErr.Type))
		case errors.As(err, &timeErr):
			return newError(http.StatusBadRequest, "invalid_field", "a time must be written as in RFC 3339, like 2026-11-23T09:30:00Z, not %q", timeErr.Value)
		case strings.HasPrefix(err.Error(), "Time.UnmarshalJSON"):
			// A time given as something else than a string: time.Time
			// says so in Go's words, which are not the sender's.
			return newError(http.StatusBadRequest, "invalid_field", "a time must be a string written as in RFC 3339, like 2026-11-23T09:30:00Z")
		}
		return newError(http.StatusBadRequest, "invalid_json", "body is not valid JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return newError(http.StatusBadRequest, "invalid_json", "body has data after the JSON value")
	}
	if e := strictjson.Check(body, reflect.TypeOf(v)); e != nil {
		return newError(http.StatusBadRequest, "invalid_field", "%s %s", e.In(""), e.Problem)
	}
	return nil
}

// typeErrorAt names the value of body a type error is about, as the
// sender wrote it: "jobs[1].title", or "the body".
func typeErrorAt(body []byte, e *json.UnmarshalTypeError) string {
	path, ok := strictjson.PathAt(body, e.Offset)
	switch {
	case !ok:
		return e.Field // encoding/json's words, without indexes
	case path == "":
		return "the body"
	}
	return (&strictjson.Error{Path: path}).In("")
}

// typeWords names the JSON a Go type is decoded from.
func typeWords(t reflect.Type) string {
	if t == reflect.TypeFor[time.Time]() {
		return "a time written as in RFC 3339"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Pointer:
		return typeWords(t.Elem())
	}
	return "a JSON object"
}

// queryBool reads a flag of the query: true or false, absent for false.
func queryBool(c echo.Context, name string) (bool, error) {
	switch c.QueryParam(name) {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	}
	return false, newError(http.StatusBadRequest, "invalid_field", "%s must be true or false", name)
}

func queryInt(c echo.Context, name string) (int, error) {
	v := c.QueryParam(name)
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, newError(http.StatusBadRequest, "invalid_field", "%s must be a number", name)
	}
	return n, nil
}

// limitParam reads the limit query parameter: def when absent, else 1 to
// most.
func limitParam(c echo.Context, def, most int) (int, error) {
	limit, err := queryInt(c, "limit")
	if err != nil {
		return 0, err
	}
	if limit == 0 {
		return def, nil
	}
	if limit < 1 || limit > most {
		return 0, newError(http.StatusBadRequest, "invalid_field", "limit must be between 1 and %d", most)
	}
	return limit, nil
}

// nullable is s, or null when it is empty.
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func optional(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// maxWait bounds GET /api/v1/jobs/{id}?wait=N.
const maxWait = 60

// waitParam reads ?wait=N, 0 to maxWait seconds.
func waitParam(c echo.Context) (time.Duration, error) {
	w := c.QueryParam("wait")
	if w == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(w)
	if err != nil || n < 0 || n > maxWait {
		return 0, newError(http.StatusBadRequest, "invalid_field", "wait must be 0 to %d seconds", maxWait)
	}
	return time.Duration(n) * time.Second, nil
}

// waitUntil returns what get(id) answers once done says it is finished,
// or as it is when the wait is over (read again then: a change whose notice
// was lost is not missed). It sleeps on the hub until a notice says the job
// or batch finished: no polling loop.
func waitUntil[T any](ctx context.Context, hub *notify.Hub, id string, wait time.Duration,
	get func(context.Context, string) (T, error), done func(T) bool) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for {
		// Wait first, then look: a finish between the two is not missed.
		woken, stop := hub.Wait(id)
		v, err := get(context.WithoutCancel(ctx), id)
		if err != nil || done(v) {
			stop()
			return v, err
		}
		select {
		case <-ctx.Done():
			stop()
			return get(context.WithoutCancel(ctx), id)
		case <-woken:
		}
	}
}
