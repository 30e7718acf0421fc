package handlers

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"claimdesk/internal/desk"
	"claimdesk/internal/storeerr"
	"claimdesk/internal/tasks"
	"claimdesk/internal/users"
	"claimdesk/internal/webhooks"
	"claimdesk/views"

	"github.com/labstack/echo/v4"
)

// apiError is an error with its HTTP status and snake_case code: what the
// user sees. Everything else is an internal error.
type apiError struct {
	Status  int
	Code    string
	Message string
	// RetryAfter, if set, is sent as the Retry-After header.
	RetryAfter time.Duration
	// Fields, if set, says what is wrong with each field of the input
	// (a result that does not fit its queue's outcome form).
	Fields map[string]string
}

// body is the JSON body of the error: {"error": {"code", "message" and,
// when known, "fields"}}.
func (e *apiError) body() errorAnswer {
	return errorAnswer{errorDetail{Code: e.Code, Fields: e.Fields, Message: e.Message}}
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

func newError(status int, code, format string, args ...any) *apiError {
	return &apiError{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

// errorCodes maps the sentinel errors of the engine, the user store, the
// webhooks' registry and the desk to what the user sees: the one table of
// error codes.
var errorCodes = []struct {
	err    error
	status int
	code   string
}{
	{tasks.ErrNotFound, http.StatusNotFound, "job_not_found"},
	{tasks.ErrQueueNotFound, http.StatusNotFound, "queue_not_found"},
	{tasks.ErrQueueExists, http.StatusConflict, "queue_exists"},
	{tasks.ErrQueueNotEmpty, http.StatusConflict, "queue_not_empty"},
	{tasks.ErrQueuePaused, http.StatusConflict, "queue_paused"},
	{tasks.ErrHoldLimit, http.StatusConflict, "hold_limit"},
	{tasks.ErrBatchNotFound, http.StatusNotFound, "batch_not_found"},
	{tasks.ErrReservationLost, http.StatusConflict, "reservation_lost"},
	{tasks.ErrInvalidState, http.StatusConflict, "invalid_state"},
	{tasks.ErrExtensionLimit, http.StatusConflict, "extension_limit"},
	{tasks.ErrSkipLimit, http.StatusConflict, "skip_limit"},
	{tasks.ErrForbidden, http.StatusForbidden, "forbidden"},
	{tasks.ErrNotReady, http.StatusConflict, "not_ready"},
	{tasks.ErrReasonRequired, http.StatusUnprocessableEntity, "reason_required"},
	{tasks.ErrTooLarge, http.StatusRequestEntityTooLarge, "too_large"},
	{tasks.ErrInvalid, http.StatusBadRequest, "invalid_field"},
	{users.ErrNotFound, http.StatusNotFound, "user_not_found"},
	{users.ErrTokenNotFound, http.StatusNotFound, "token_not_found"},
	{users.ErrExists, http.StatusConflict, "user_exists"},
	{users.ErrInvalid, http.StatusBadRequest, "invalid_field"},
	{users.ErrThrottled, http.StatusTooManyRequests, "rate_limited"},
	{webhooks.ErrNotFound, http.StatusNotFound, "not_found"},
	{webhooks.ErrDeliveryNotFound, http.StatusNotFound, "not_found"},
	{webhooks.ErrTooMany, http.StatusConflict, "webhook_limit"},
	{webhooks.ErrInvalid, http.StatusUnprocessableEntity, "invalid_webhook"},
	{desk.ErrForbidden, http.StatusForbidden, "forbidden"},
	{desk.ErrInvalid, http.StatusBadRequest, "invalid_field"},
}

// publicError turns any error into what the user may see, and reports
// whether it was an internal error (to be logged, never shown).
func publicError(err error) (*apiError, bool) {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae, false
	}
	for _, m := range errorCodes {
		if errors.Is(err, m.err) {
			msg := err.Error()
			var v *tasks.ValidationError
			if errors.As(err, &v) {
				msg = v.Field + " " + v.Message
			}
			pub := &apiError{Status: m.status, Code: m.code, Message: msg}
			var te *users.ThrottledError
			if errors.As(err, &te) {
				pub.RetryAfter = te.RetryAfter
			}
			var oe *tasks.OutcomeError
			if errors.As(err, &oe) {
				pub.Fields = oe.Fields
			}
			var we *webhooks.InvalidError
			if errors.As(err, &we) {
				pub.Fields = map[string]string{we.Field: we.Message}
			}
			return pub, false
		}
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		switch he.Code {
		case http.StatusRequestEntityTooLarge:
			return newError(he.Code, "too_large", "request body too large"), false
		case http.StatusNotFound:
			return newError(he.Code, "not_found", "no such page"), false
		case http.StatusMethodNotAllowed:
			return newError(he.Code, "method_not_allowed", "method not allowed"), false
		}
		if he.Code < 500 {
			return newError(he.Code, strings.ReplaceAll(strings.ToLower(http.StatusText(he.Code)), " ", "_"), "%v", he.Message), false
		}
	}
	if storeerr.Transient(err) {
		pub := newError(http.StatusServiceUnavailable, "unavailable", "the store is busy or out of reach for a moment; retrying is safe")
		pub.RetryAfter = unavailableRetry
		return pub, true
	}
	return newError(http.StatusInternalServerError, "internal", "internal error"), true
}

// storeTrouble logs a failed store call outside a request's answer: its
// passing troubles once per burst, anything else as a warning.
func (s *Server) storeTrouble(msg string, err error, args ...any) {
	if storeerr.Transient(err) {
		s.unavailable.Add(msg, err, args...)
		return
	}
	s.log.Warn(msg, append([]any{"err", err}, args...)...)
}

// unavailableRetry is the Retry-After of a 503: a Redis restart, a
// failover or a replica catching up takes seconds, and a client that
// comes back after one finds most of them over.
const unavailableRetry = time.Second

// logFailure logs a request that failed inside (internal is what
// publicError said): the store's passing troubles as a warning, once per
// burst; anything else as an error.
func (s *Server) logFailure(err error, pub *apiError, reqID, method, path, what string) {
	if pub.Code == "unavailable" {
		s.unavailable.Add("store unavailable: answering 503", err, "request_id", reqID, "method", method, "path", path)
		return
	}
	s.log.Error(what, "err", err, "request_id", reqID, "method", method, "path", path)
}

// statusClientLeft is the status the access log gives a request whose
// client went away before it was answered (nginx's 499).
const statusClientLeft = 499

// errorHandler is echo's HTTPErrorHandler: JSON for the API, a friendly
// page for browsers; internal errors are logged with the request id and
// shown only as "internal error".
func (s *Server) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	pub, internal := publicError(err)
	if pub.Code == "job_not_found" && s.movedAway(c) {
		return
	}
	reqID := c.Response().Header().Get(echo.HeaderXRequestID)
	if internal && c.Request().Context().Err() != nil {
		// The client left while the request waited: nobody to answer,
		// and nothing went wrong here. 499 is what the access log says.
		c.Response().Status = statusClientLeft
		s.log.Debug("request abandoned by the client", "err", err, "request_id", reqID)
		return
	}
	if internal {
		s.logFailure(err, pub, reqID, c.Request().Method, c.Request().URL.Path, "request failed")
	} else {
		s.log.Debug("request refused", "code", pub.Code, "msg", pub.Message, "request_id", reqID)
	}
	if pub.RetryAfter > 0 {
		setRetryAfter(c, pub.RetryAfter)
	}
	if isAPI(c) || c.Request().URL.Path == "/ws" { // no browser shows a refused upgrade
		_ = c.JSON(pub.Status, pub.body())
		return
	}
	// A request refused before its session was loaded gets the page
	// without what the session holds (the user, a CSRF token, a flash).
	p := views.Page{Title: "Something went wrong"}
	if c.Get(withSession) == true {
		p = s.page(c, p.Title)
	}
	_ = s.render(c, pub.Status, views.ErrorPage(p, pub.Status, friendly(pub)))
}

// movedAway answers a request about a job that is not found under its id
// because it moved to its queue's breach queue when it missed its due
// time (tasks.Store.MovedTo): 308 Permanent Redirect to the same path
// with the job's new id, which a client follows with the same method and
// body, if the user may read the job there (else it stays not found). It
// reports whether it answered.
func (s *Server) movedAway(c echo.Context) bool {
	id := c.Param("id")
	if id == "" {
		return false
	}
	to, ok, err := s.tasks.MovedTo(c.Request().Context(), id)
	if err != nil || !ok {
		return false
	}
	if _, err := s.desk.Job(c.Request().Context(), actor(c), to); err != nil {
		return false
	}
	u := *c.Request().URL
	u.Path = strings.Replace(u.Path, "/"+id, "/"+to, 1)
	u.RawPath = ""
	c.Response().Header().Set(echo.HeaderLocation, u.RequestURI())
	if isAPI(c) {
		pub := newError(http.StatusPermanentRedirect, "job_moved", "the job missed its due time and moved to another queue: its id is now %s", to)
		_ = c.JSON(pub.Status, pub.body())
		return true
	}
	_ = c.NoContent(http.StatusPermanentRedirect)
	return true
}

// sessionError answers a request whose session could not be loaded or
// saved (the session manager's ErrorFunc), as errorHandler would, in
// plain words: the page itself cannot be drawn without a session.
func (s *Server) sessionError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		return // the client left: nobody to answer, nothing went wrong
	}
	pub, internal := publicError(err)
	if internal {
		s.logFailure(err, pub, w.Header().Get(echo.HeaderXRequestID), r.Method, r.URL.Path, "session not loaded or saved")
	}
	if pub.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(retrySeconds(pub.RetryAfter)))
	}
	if strings.HasPrefix(r.URL.Path, "/api/") {
		writeError(w, pub)
		return
	}
	// The error page, without what the session would hold (the user, a
	// CSRF token, a flash).
	w.Header().Set(echo.HeaderContentType, echo.MIMETextHTMLCharsetUTF8)
	w.WriteHeader(pub.Status)
	_ = views.ErrorPage(views.Page{Title: "Something went wrong"}, pub.Status, friendly(pub)).Render(r.Context(), w)
}

// writeError answers with the JSON error body, outside echo.
func writeError(w http.ResponseWriter, e *apiError) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	_ = json.NewEncoder(w).Encode(e.body())
}

// friendly is the message a person reads on an error page.
func friendly(e *apiError) string {
	switch e.Code {
	case "reservation_lost":
		return "This job is no longer yours: its reservation ended (the deadline passed, or a supervisor took it back). Nothing you sent was saved."
	case "extension_limit":
		return "No more time can be added: this job has had all the extensions its queue allows, or has been held as long as it may be. Finish it or give it back."
	case "forbidden":
		return "You don't have access to this page."
	case "not_found":
		return "There is no page at this address. Check it, or start again from your home page."
	case "job_not_found":
		return "We couldn't find that job. It may have been finished and cleaned up."
	case "queue_not_found":
		return "We couldn't find that queue. It may have been deleted."
	case "internal":
		return "Something went wrong on our side. Please try again."
	case "unavailable":
		return "claimdesk cannot reach its store for a moment. Wait a few seconds and try again: whatever went through before is kept."
	case "too_large":
		return "That was more than claimdesk takes in one request. Nothing was saved."
	}
	return e.Message
}

func isAPI(c echo.Context) bool { return strings.HasPrefix(c.Request().URL.Path, "/api/") }
