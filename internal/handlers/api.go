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

	"claimdesk/internal/desk"
	"claimdesk/internal/notify"
	"claimdesk/internal/strictjson"
	"claimdesk/internal/tasks"
	"claimdesk/internal/users"

	"github.com/labstack/echo/v4"
)

func (s *Server) apiRoutes(g *echo.Group) {
	super := requireRole(users.Supervisor)
	producers := requireRole(users.Producer, users.Supervisor)
	g.GET("/queues", s.apiQueues)
	g.POST("/queues", s.apiCreateQueue, super)
	g.PATCH("/queues/:queue", s.apiPatchQueue, super)
	g.DELETE("/queues/:queue", s.apiDeleteQueue, super)
	g.POST("/queues/:queue/pause", s.apiPause(true), super)
	g.POST("/queues/:queue/resume", s.apiPause(false), super)
	g.POST("/queues/:queue/jobs", s.apiEnqueue, producers)
	g.POST("/queues/:queue/claim", s.apiClaim, requireRole(users.Operator))
	g.POST("/claim", s.apiClaimAny, requireRole(users.Operator))
	g.GET("/jobs", s.apiListJobs, super)
	g.GET("/jobs/:id", s.apiGetJob)
	g.GET("/jobs/:id/history", s.apiHistory)
	g.DELETE("/jobs/:id", s.apiCancel, producers)
	g.POST("/jobs/:id/complete", s.apiComplete)
	g.POST("/jobs/:id/release", s.apiRelease)
	g.POST("/jobs/:id/skip", s.apiSkip)
	g.POST("/jobs/:id/extend", s.apiExtend)
	g.POST("/jobs/:id/fail", s.apiFail)
	g.POST("/jobs/:id/requeue", s.apiRequeue, super)
	g.POST("/jobs/cancel", s.apiCancelMany, super)
	g.POST("/queues/:queue/requeue-dead", s.apiRequeueDead, super)
	g.GET("/queues/:queue/numbers", s.apiNumbers, super)
	g.GET("/reservations", s.apiReservations, super)
	s.batchRoutes(g)
}

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

// queueSummary is one entry of GET /api/v1/queues.
type queueSummary struct {
	Name         string `json:"name"`
	Ready        int64  `json:"ready"`
	Held         int64  `json:"held"`
	Scheduled    int64  `json:"scheduled"`
	Reserved     int64  `json:"reserved"`
	Dead         int64  `json:"dead"`
	LeaseSeconds int    `json:"lease_seconds"`
	MaxAttempts  int    `json:"max_attempts"`
	MaxHeld      int    `json:"max_held"`
	Paused       bool   `json:"paused"`
	// Outcome is the queue's outcome form, which a completion's result
	// must fit.
	Outcome *tasks.Outcome `json:"outcome,omitempty"`
}

func (s *Server) apiQueues(c echo.Context) error {
	qs, err := s.desk.VisibleQueues(c.Request().Context(), actor(c))
	if err != nil {
		return err
	}
	out := make([]queueSummary, len(qs))
	for i, q := range qs {
		st := q.Stats
		out[i] = queueSummary{q.Queue.Name, st.Ready, st.Held, st.Scheduled, st.Reserved, st.Dead,
			q.Queue.LeaseSeconds, q.Queue.MaxAttempts, q.Queue.MaxHeld, q.Queue.Paused, q.Queue.Outcome}
	}
	return c.JSON(http.StatusOK, map[string]any{"queues": out})
}

func (s *Server) apiCreateQueue(c echo.Context) error {
	var q tasks.Queue
	if err := decode(c, &q); err != nil {
		return err
	}
	q, err := s.desk.CreateQueue(c.Request().Context(), actor(c), q, false)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, q)
}

func (s *Server) apiPatchQueue(c echo.Context) error {
	var p tasks.QueuePatch
	if err := decode(c, &p); err != nil {
		return err
	}
	q, err := s.desk.ChangeQueue(c.Request().Context(), actor(c), c.Param("queue"), p)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, q)
}

func (s *Server) apiPause(paused bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		q, err := s.setPaused(c, c.Param("queue"), paused)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, q)
	}
}

func (s *Server) apiDeleteQueue(c echo.Context) error {
	if err := s.desk.DeleteQueue(c.Request().Context(), actor(c), c.Param("queue")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// setPaused pauses or resumes the queue, for the API and the pages alike.
func (s *Server) setPaused(c echo.Context, name string, paused bool) (tasks.Queue, error) {
	if paused {
		return s.desk.PauseQueue(c.Request().Context(), actor(c), name)
	}
	return s.desk.ResumeQueue(c.Request().Context(), actor(c), name)
}

// enqueueBody is one job, or a batch in "jobs".
type enqueueBody struct {
	tasks.NewJob
	Jobs []tasks.NewJob `json:"jobs"`
}

func (s *Server) apiEnqueue(c echo.Context) error {
	var body enqueueBody
	if err := decode(c, &body); err != nil {
		return err
	}
	single := body.Jobs == nil
	jobs := body.Jobs
	if single {
		if key := c.Request().Header.Get("Idempotency-Key"); key != "" && body.IdempotencyKey == "" {
			body.IdempotencyKey = key
		}
		jobs = []tasks.NewJob{body.NewJob}
	} else if body.NewJob.Title != "" || body.NewJob.Payload != nil {
		return newError(http.StatusBadRequest, "invalid_field", "give one job or \"jobs\", not both")
	}
	out, err := s.desk.Enqueue(c.Request().Context(), actor(c), c.Param("queue"), jobs)
	if err != nil {
		return err
	}
	status := http.StatusOK
	list := make([]*tasks.Job, len(out))
	for i, e := range out {
		list[i] = e.Job
		if e.Created {
			status = http.StatusCreated
		}
	}
	if single {
		return c.JSON(status, map[string]any{"job": list[0]})
	}
	return c.JSON(status, map[string]any{"jobs": list})
}

// reservationJSON is the claim's proof, sent only to the claimer.
type reservationJSON struct {
	Token        string    `json:"token"`
	Deadline     time.Time `json:"deadline"`
	LeaseSeconds int       `json:"lease_seconds"`
}

func (s *Server) apiClaim(c echo.Context) error {
	r, err := s.desk.Claim(c.Request().Context(), actor(c), c.Param("queue"), c.Request().Header.Get("Idempotency-Key"))
	return claimed(c, r, err)
}

// apiClaimAny claims the next job across the operator's queues, or the
// subset named in the body (tasks.Store.ClaimAny says how they rank).
func (s *Server) apiClaimAny(c echo.Context) error {
	var body struct {
		Queues []string `json:"queues"`
	}
	if c.Request().ContentLength != 0 {
		if err := decode(c, &body); err != nil {
			return err
		}
	}
	r, err := s.desk.ClaimAny(c.Request().Context(), actor(c), body.Queues, c.Request().Header.Get("Idempotency-Key"))
	return claimed(c, r, err)
}

// claimed answers a claim: the job and its reservation, or 204.
func claimed(c echo.Context, r *tasks.Reservation, err error) error {
	if err != nil {
		return err
	}
	if r == nil {
		return c.NoContent(http.StatusNoContent)
	}
	return c.JSON(http.StatusOK, map[string]any{"job": r.Job,
		"reservation": reservationJSON{r.Token, r.Deadline, r.Job.LeaseSeconds}})
}

func (s *Server) apiHistory(c echo.Context) error {
	h, trimmed, err := s.desk.History(c.Request().Context(), actor(c), c.Param("id"))
	if err != nil {
		return err
	}
	out := map[string]any{"history": h}
	if trimmed > 0 {
		out["trimmed"] = trimmed
	}
	return c.JSON(http.StatusOK, out)
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

func (s *Server) apiGetJob(c echo.Context) error {
	ctx := c.Request().Context()
	wait, err := waitParam(c)
	if err != nil {
		return err
	}
	j, err := s.desk.Job(ctx, actor(c), c.Param("id"))
	if err != nil {
		return err
	}
	if wait > 0 && !j.State.Terminal() {
		if _, err = waitUntil(ctx, s.hub, j.ID, wait, s.tasks.Get, func(j *tasks.Job) bool { return j.State.Terminal() }); err != nil {
			return err
		}
		// What it became may be no longer the waiter's to read (its holder
		// gave it back, and another completed it): read as the waiter.
		if j, err = s.desk.Job(context.WithoutCancel(ctx), actor(c), j.ID); err != nil {
			return err
		}
	}
	return c.JSON(http.StatusOK, j)
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

func (s *Server) apiCancel(c echo.Context) error {
	force, err := queryBool(c, "force")
	if err != nil {
		return err
	}
	j, _, err := s.desk.Cancel(c.Request().Context(), actor(c), c.Param("id"), force)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, j)
}

func (s *Server) apiRequeue(c echo.Context) error {
	j, _, err := s.desk.Requeue(c.Request().Context(), actor(c), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, j)
}

// holderBody is the body of the holder's actions.
type holderBody struct {
	Token   string          `json:"token"`
	Result  json.RawMessage `json:"result"`
	Reason  string          `json:"reason"`
	Seconds int             `json:"seconds"`
}

// holderAction decodes the body and runs one of the holder's actions, as
// the caller (the engine refuses anyone but the holder), answering what
// the action returns.
func (s *Server) holderAction(c echo.Context, run func(ctx context.Context, a desk.Actor, id string, b holderBody) (any, error)) error {
	var b holderBody
	if err := decode(c, &b); err != nil {
		return err
	}
	if b.Token == "" {
		return newError(http.StatusBadRequest, "invalid_field", "token is required")
	}
	answer, err := run(c.Request().Context(), actor(c), c.Param("id"), b)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, answer)
}

// apiComplete completes the job; with ?next=true it also claims the next
// job of the queue for the holder in the same atomic call, and answers
// both: {"job": the completed job, "next": {"job", "reservation"} or null}.
func (s *Server) apiComplete(c echo.Context) error {
	next, err := queryBool(c, "next")
	if err != nil {
		return err
	}
	return s.holderAction(c, func(ctx context.Context, a desk.Actor, id string, b holderBody) (any, error) {
		if !next {
			return s.desk.Complete(ctx, a, id, b.Token, b.Result)
		}
		j, r, why, err := s.desk.CompleteNext(ctx, a, id, b.Token, b.Result)
		if err != nil || r == nil {
			out := map[string]any{"job": j, "next": nil}
			if why != nil {
				// Why nothing was claimed: the queue is paused, or the
				// holder is at its max_held.
				pub, _ := publicError(why)
				out["next_error"] = map[string]string{"code": pub.Code, "message": pub.Message}
			}
			return out, err
		}
		return map[string]any{"job": j, "next": map[string]any{"job": r.Job,
			"reservation": reservationJSON{r.Token, r.Deadline, r.Job.LeaseSeconds}}}, nil
	})
}

func (s *Server) apiRelease(c echo.Context) error {
	return s.holderAction(c, func(ctx context.Context, a desk.Actor, id string, b holderBody) (any, error) {
		return s.desk.GiveBack(ctx, a, id, b.Token)
	})
}

func (s *Server) apiSkip(c echo.Context) error {
	return s.holderAction(c, func(ctx context.Context, a desk.Actor, id string, b holderBody) (any, error) {
		return s.desk.Skip(ctx, a, id, b.Token)
	})
}

func (s *Server) apiExtend(c echo.Context) error {
	return s.holderAction(c, func(ctx context.Context, a desk.Actor, id string, b holderBody) (any, error) {
		j, err := s.desk.MoreTime(ctx, a, id, b.Token, b.Seconds)
		if err != nil {
			return nil, err
		}
		return map[string]any{"deadline": j.Deadline}, nil
	})
}

func (s *Server) apiFail(c echo.Context) error {
	return s.holderAction(c, func(ctx context.Context, a desk.Actor, id string, b holderBody) (any, error) {
		return s.desk.CantBeDone(ctx, a, id, b.Token, b.Reason)
	})
}

// reservationEntry is one entry of GET /api/v1/reservations.
type reservationEntry struct {
	Job        *tasks.Job `json:"job"`
	Operator   string     `json:"operator"`
	ReservedAt *time.Time `json:"reserved_at"`
	Deadline   *time.Time `json:"deadline"`
}

func (s *Server) apiReservations(c echo.Context) error {
	limit, err := queryInt(c, "limit")
	if err != nil {
		return err
	}
	p, err := s.tasks.ListReservations(c.Request().Context(), c.QueryParam("queue"), limit, c.QueryParam("cursor"))
	if err != nil {
		return err
	}
	out := make([]reservationEntry, len(p.Jobs))
	for i, j := range p.Jobs {
		out[i] = reservationEntry{j, j.ReservedBy, j.ReservedAt, j.Deadline}
	}
	return c.JSON(http.StatusOK, map[string]any{"reservations": out, "next_cursor": nullable(p.NextCursor)})
}

func (s *Server) apiListJobs(c echo.Context) error {
	limit, err := queryInt(c, "limit")
	if err != nil {
		return err
	}
	queue := c.QueryParam("queue") // "": every queue
	state := tasks.State(c.QueryParam("state"))
	if state == "" {
		state = tasks.StateReady
	}
	f, err := jobFilter(c)
	if err != nil {
		return err
	}
	out := map[string]any{}
	var p tasks.Page
	if f.Empty() {
		p, err = s.tasks.ListJobs(c.Request().Context(), queue, state, limit, c.QueryParam("cursor"))
	} else {
		var scanned int
		p, scanned, err = s.tasks.FindJobs(c.Request().Context(), queue, state, f, limit, c.QueryParam("cursor"))
		out["scanned"] = scanned
	}
	if err != nil {
		return err
	}
	jobs := p.Jobs
	if jobs == nil {
		jobs = []*tasks.Job{}
	}
	out["jobs"], out["next_cursor"] = jobs, nullable(p.NextCursor)
	return c.JSON(http.StatusOK, out)
}

// jobFilter reads a job listing's filter from the query: person, batch,
// priority and q (text in the title).
func jobFilter(c echo.Context) (tasks.Filter, error) {
	f := tasks.Filter{Person: c.QueryParam("person"), Batch: c.QueryParam("batch"), Text: c.QueryParam("q")}
	if v := c.QueryParam("priority"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 100 {
			return f, newError(http.StatusBadRequest, "invalid_field", "priority must be a number from 0 to 100")
		}
		f.Priority = &n
	}
	return f, nil
}

// minuteJSON is one minute of a queue's numbers.
type minuteJSON struct {
	At        time.Time `json:"at"`
	Ready     int64     `json:"ready"`
	Claims    int64     `json:"claims"`
	Completed int64     `json:"completed"`
	Dead      int64     `json:"dead"`
	// OldestWaitSeconds is how long the oldest ready job had waited.
	OldestWaitSeconds float64 `json:"oldest_wait_seconds"`
}

func (s *Server) apiNumbers(c echo.Context) error {
	ctx := c.Request().Context()
	if _, err := s.tasks.Queue(ctx, c.Param("queue")); err != nil {
		return err
	}
	ms, err := s.tasks.Numbers(ctx, c.Param("queue"))
	if err != nil {
		return err
	}
	out := make([]minuteJSON, len(ms))
	for i, m := range ms {
		out[i] = minuteJSON{m.At, m.Ready, m.Claims, m.Completed, m.Dead, m.OldestWait.Seconds()}
	}
	return c.JSON(http.StatusOK, map[string]any{"minutes": out})
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

func (s *Server) apiRequeueDead(c echo.Context) error {
	limit, err := limitParam(c, 100, desk.MaxBulk)
	if err != nil {
		return err
	}
	n, left, err := s.desk.RequeueDead(c.Request().Context(), actor(c), c.Param("queue"), limit)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"requeued": n, "dead_left": left})
}

func (s *Server) apiCancelMany(c echo.Context) error {
	var b struct {
		IDs   []string `json:"ids"`
		Force bool     `json:"force"`
	}
	if err := decode(c, &b); err != nil {
		return err
	}
	canceled, failed, err := s.cancelMany(c, b.IDs, b.Force)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"canceled": canceled, "failed": failed})
}

// bulkFailure is a job a bulk action could not change, and why.
type bulkFailure struct {
	ID      string `json:"id"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// cancelMany cancels each of the jobs (force: reserved ones too), for
// the API and the pages alike, saying of each job it could not cancel
// why, as the API's errors would.
func (s *Server) cancelMany(c echo.Context, ids []string, force bool) ([]string, []bulkFailure, error) {
	canceled, failures, err := s.desk.CancelMany(c.Request().Context(), actor(c), ids, force)
	failed := make([]bulkFailure, len(failures))
	for i, f := range failures {
		pub, _ := publicError(f.Err)
		failed[i] = bulkFailure{f.ID, pub.Code, pub.Message}
	}
	return canceled, failed, err
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

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}
