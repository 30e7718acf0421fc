package handlers

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"claimdesk/internal/desk"
	"claimdesk/internal/notify"
	"claimdesk/internal/tasks"
	"claimdesk/internal/users"
	"claimdesk/views"

	"github.com/labstack/echo/v4"
)

func (s *Server) pageRoutes(e *echo.Echo) {
	e.GET("/login", s.loginPage)
	e.POST("/login", s.login, s.rates.logins)

	// Middleware per route, not per group: a group's middleware would also
	// guard its catch-all route and turn unknown pages into 403s.
	user := s.requireUser
	e.POST("/logout", s.logout, user)
	e.GET("/", s.home, user)
	e.GET("/jobs/:id", s.jobPage, user)

	op := requireRole(users.Operator)
	e.GET("/fragments/home", s.homeFragment, user, op)
	e.POST("/claim", s.claimAny, user, op)
	e.POST("/queues/:queue/claim", s.claimFrom, user, op)
	e.POST("/jobs/:id/claim", s.claimJob, user, op)
	e.POST("/jobs/:id/:action", s.workAction, user, op)

	sup := requireRole(users.Supervisor)
	e.GET("/supervisor", s.supervisorHome, user, sup)
	e.GET("/supervisor/fragments/reservations", s.reservationsFragment, user, sup)
	e.GET("/supervisor/fragments/stats", s.statsFragment, user, sup)
	e.GET("/supervisor/queues/new", s.newQueuePage, user, sup)
	e.POST("/supervisor/queues", s.createQueueForm, user, sup)
	e.POST("/supervisor/queues/:queue/settings", s.queueSettingsForm, user, sup)
	e.POST("/supervisor/queues/:queue/pause", s.pauseForm(true), user, sup)
	e.POST("/supervisor/queues/:queue/resume", s.pauseForm(false), user, sup)
	e.POST("/supervisor/queues/:queue/delete", s.deleteQueueForm, user, sup)
	e.POST("/supervisor/queues/:queue/requeue-dead", s.requeueDeadForm, user, sup)
	e.POST("/supervisor/queues/:queue/cancel-selected", s.cancelSelectedForm, user, sup)
	e.GET("/supervisor/queues/:queue", s.queuePage, user, sup)
	e.POST("/supervisor/jobs/:id/:action", s.superviseJob, user, sup)
	e.GET("/supervisor/batches", s.batchesPage, user, sup)
	e.GET("/supervisor/fragments/batches", s.batchesFragment, user, sup)
	e.POST("/supervisor/batches/:id/cancel", s.cancelBatchForm, user, sup)
}

// flash tells the next whole page that an action succeeded.
func (s *Server) flash(c echo.Context, msg string) {
	s.sessions.Put(c.Request().Context(), flashKey, msg)
}

// note tells the next whole page why an action did nothing (not a
// failure of claimdesk's, nor a success).
func (s *Server) note(c echo.Context, msg string) {
	s.sessions.Put(c.Request().Context(), noteKey, msg)
}

func (s *Server) home(c echo.Context) error {
	u, _ := currentUser(c)
	if u.Role == users.Supervisor {
		return redirect(c, "/supervisor")
	}
	if u.Role != users.Operator {
		return forbidden()
	}
	h, err := s.operatorHome(c.Request().Context(), u)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, views.OperatorHome(s.page(c, "My work"), h))
}

func (s *Server) homeFragment(c echo.Context) error {
	u, _ := currentUser(c)
	h, err := s.operatorHome(c.Request().Context(), u)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, views.HomeLive(s.fragment(c), h))
}

// operatorHome gathers an operator's queues, what they hold and what
// they did lately: the queues from the instance's board, the rest in one
// round trip. What they hold is looked for in every queue: a job of a
// queue taken from them since they claimed it is still theirs to finish.
func (s *Server) operatorHome(ctx context.Context, u users.User) (views.Home, error) {
	all, err := s.board.queues.get(ctx, s.tasks.Queues)
	if err != nil {
		return views.Home{}, err
	}
	h := views.Home{Now: time.Now(), Away: u.Away}
	if h.Queues, err = s.desk.VisibleQueues(ctx, desk.Person(u)); err != nil {
		return h, err
	}
	names := make([]string, len(all))
	for i, q := range all {
		names[i] = q.Queue.Name
	}
	recent := make(chan error, 1)
	go func() {
		var err error
		h.Recent, err = notify.RecentWork(ctx, s.rdb, u.Name)
		recent <- err
	}()
	h.Reservations, err = s.tasks.Holding(ctx, u.Name, names)
	err = cmp.Or(<-recent, err)
	return h, err
}

// claimFrom claims the next job of one queue and opens its work page.
func (s *Server) claimFrom(c echo.Context) error {
	r, err := s.desk.Claim(c.Request().Context(), actor(c), c.Param("queue"), "")
	return s.openClaimed(c, r, err)
}

// claimAny claims the next job across the operator's queues
// (tasks.Store.ClaimAny says how they rank).
func (s *Server) claimAny(c echo.Context) error {
	r, err := s.desk.ClaimAny(c.Request().Context(), actor(c), nil, "")
	return s.openClaimed(c, r, err)
}

// claimJob claims the job a toast named, if it is still waiting for the
// operator; otherwise the home page says so and offers the next.
func (s *Server) claimJob(c echo.Context) error {
	r, err := s.desk.ClaimJob(c.Request().Context(), actor(c), c.Param("id"))
	if errors.Is(err, tasks.ErrNotReady) {
		s.flash(c, "That job is no longer waiting: someone else took it, or it was withdrawn. Claim the next one below.")
		return redirect(c, "/")
	}
	return s.openClaimed(c, r, err)
}

// openClaimed opens the work page of a job just claimed, or says on the
// home page that nothing is waiting.
func (s *Server) openClaimed(c echo.Context, r *tasks.Reservation, err error) error {
	if words := noClaimWords(err, c.Param("queue")); words != "" {
		s.note(c, words)
		return redirect(c, "/")
	}
	if err != nil {
		return err
	}
	if r == nil {
		s.flash(c, "Nothing is waiting right now. New jobs show up here as they arrive.")
		return redirect(c, "/")
	}
	return redirect(c, "/jobs/"+r.Job.ID)
}

// noClaimWords says why a claim in queue took nothing, when a queue's
// rule refused it (paused, or the hold limit reached); empty otherwise.
func noClaimWords(err error, queue string) string {
	name, in := "", ""
	if queue != "" {
		name, in = " "+queue, " in "+queue
	}
	switch {
	case errors.Is(err, tasks.ErrQueuePaused):
		return "The queue" + name + " is paused: no new jobs can be claimed from it until a supervisor resumes it."
	case errors.Is(err, tasks.ErrHoldLimit):
		return "You hold as many jobs" + in + " as one person may at once. Finish or give one back to claim another."
	}
	return ""
}

// jobPage is the work page for the job's holder, and a read-only view for
// supervisors.
func (s *Server) jobPage(c echo.Context) error {
	w, err := s.workView(c)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, views.WorkPage(s.page(c, w.Job.Title), w))
}

// workView gathers the work page of the job of the request's id, as its
// viewer may see it.
func (s *Server) workView(c echo.Context) (views.Work, error) {
	u, _ := currentUser(c)
	ctx := c.Request().Context()
	id := c.Param("id")
	w := views.Work{Now: time.Now()}
	if u.Role == users.Operator {
		r, err := s.tasks.Held(ctx, id, u.Name)
		switch {
		case err == nil:
			w.Job, w.Token = r.Job, r.Token
			// The queue's limits on more time and its outcome form.
			if w.Queue, err = s.queueSettings(ctx, w.Job.Queue); err != nil && !errors.Is(err, tasks.ErrQueueNotFound) {
				return w, err
			}
		case errors.Is(err, tasks.ErrReservationLost):
			// Held before perhaps, but not now: the operator may see the
			// job only to learn that it is gone.
			j, err := s.tasks.Get(ctx, id)
			if err != nil || !u.CanWork(j.Queue) {
				return w, tasks.ErrNotFound
			}
			h, trimmed, err := j.History()
			if err != nil {
				return w, err
			}
			if j.State == tasks.StateCompleted && j.CompletedBy == u.Name {
				// Theirs, done (come back to later, or by the browser's
				// Back): what it was, and what they sent.
				slices.Reverse(h)
				w.Job, w.History, w.Trimmed = j, h, trimmed
				break
			}
			w.Job, w.Lost, w.Ended = redacted(j), true, views.EndedBecause(h, u.Name)
		default:
			return w, err
		}
	} else if u.Role == users.Supervisor {
		j, err := s.tasks.Get(ctx, id)
		if err != nil {
			return w, err
		}
		h, trimmed, err := j.History()
		if err != nil {
			return w, err
		}
		slices.Reverse(h)
		w.Job, w.History, w.Trimmed = j, h, trimmed
	} else {
		return w, forbidden()
	}
	if w.Job.BatchID != "" {
		if b, err := s.tasks.GetBatch(ctx, w.Job.BatchID); err == nil {
			w.Batch = b.Title
		}
	}
	return w, nil
}

// refused answers a holder's action that was not taken: the work page as
// it is now, with why next to the action, and what the holder typed as
// they typed it. The page's script takes the action's box out of it (200,
// so that htmx swaps it), or, when the reservation is gone, the whole
// page, which says why; without the script it is the page, with the
// error's status.
func (s *Server) refused(c echo.Context, action string, err error) error {
	pub, internal := publicError(err)
	if internal {
		return err
	}
	w, werr := s.workView(c)
	if werr != nil {
		return werr
	}
	w.Refused = views.Refusal{Action: action, Message: friendly(pub)}
	var oe *tasks.OutcomeError
	var re *rowError
	switch {
	case errors.As(err, &oe):
		w.Problems = oe.Fields
		w.Refused.Message = "Not completed: " + views.Plural(len(oe.Fields), "value") + " above " + needs(len(oe.Fields)) + " a look."
	case errors.As(err, &re) && re.row < views.FreeRows:
		w.Problems = map[string]string{views.FreeRowKey(re.row): "row " + re.problem}
		w.Refused.Message = "Not completed: a result field above needs a look."
	}
	if form, err := c.FormParams(); err == nil {
		w.Typed = form
	}
	status := pub.Status
	if fromScript(c) {
		status = http.StatusOK
		if w.Lost {
			c.Response().Header().Set("HX-Retarget", "article.work")
			c.Response().Header().Set("HX-Reselect", "article.work")
		}
	}
	return s.render(c, status, views.WorkPage(s.page(c, w.Job.Title), w))
}

func needs(n int) string {
	if n == 1 {
		return "needs"
	}
	return "need"
}

// redacted keeps only what an operator who lost a job may still see.
func redacted(j *tasks.Job) *tasks.Job {
	return &tasks.Job{ID: j.ID, Queue: j.Queue, Title: j.Title, Priority: j.Priority, State: j.State,
		Attempts: j.Attempts, MaxAttempts: j.MaxAttempts, Payload: json.RawMessage("{}")}
}

// workAction runs a holder's button on the work page. One that is
// refused answers the page again, saying why next to the button (refused).
func (s *Server) workAction(c echo.Context) error {
	ctx := c.Request().Context()
	a, id, token := actor(c), c.Param("id"), c.FormValue("token")
	var (
		j   *tasks.Job
		err error
		msg string
	)
	action := c.Param("action")
	switch action {
	case "complete":
		var result json.RawMessage
		if result, err = s.resultFromForm(c, id); err != nil {
			return s.refused(c, action, err)
		}
		if c.FormValue("next") != "" {
			return s.completeNext(c, id, token, result)
		}
		j, err = s.desk.Complete(ctx, a, id, token, result)
		msg = "Completed. Nice work."
	case "release":
		j, err = s.desk.GiveBack(ctx, a, id, token)
		msg = "Given back: it keeps its place in line."
	case "skip":
		return s.skipNext(c, id, token)
	case "fail":
		j, err = s.desk.CantBeDone(ctx, a, id, token, strings.TrimSpace(c.FormValue("reason")))
		msg = "Reported as failed."
	case "extend":
		secs, _ := strconv.Atoi(c.FormValue("seconds"))
		if j, err = s.desk.MoreTime(ctx, a, id, token, secs); err != nil {
			break
		}
		if fromScript(c) {
			// The countdown and the More time box, saying so.
			w, err := s.workView(c)
			if err != nil {
				return err
			}
			w.Extended = true
			return s.render(c, http.StatusOK, views.WorkPage(s.page(c, w.Job.Title), w))
		}
		s.flash(c, "More time: the deadline is now "+j.Deadline.UTC().Format("15:04:05")+" UTC.")
		return redirect(c, "/jobs/"+id)
	default:
		return echo.ErrNotFound
	}
	if err != nil {
		return s.refused(c, action, err)
	}
	s.flash(c, msg+" "+quote(j.Title))
	return redirect(c, "/")
}

// skipNext skips the job and opens the next of its queue (desk.SkipNext);
// or, when nothing else is waiting for the operator (or the queue is no
// longer theirs), goes home.
func (s *Server) skipNext(c echo.Context, id, token string) error {
	ctx := c.Request().Context()
	skipped, next, why, err := s.desk.SkipNext(ctx, actor(c), id, token)
	if err != nil {
		return s.refused(c, "skip", err)
	}
	done := "Skipped " + quote(skipped.Title) + ": someone else will get it."
	switch words := noClaimWords(why, skipped.Queue); {
	case errors.Is(why, desk.ErrForbidden):
		s.flash(c, done)
	case words != "":
		s.flash(c, done)
		s.note(c, words)
	case why != nil:
		// The skip stands; the claim can be asked for again from home.
		s.storeTrouble("claim after skip", why, "queue", skipped.Queue)
		s.flash(c, done)
		s.note(c, "The next job could not be claimed just now: claim it below.")
	case next == nil:
		s.flash(c, done+" Nothing else is waiting in "+skipped.Queue+" for you.")
	default:
		s.flash(c, done+" Here is the next one.")
		return redirect(c, "/jobs/"+next.Job.ID)
	}
	return redirect(c, "/")
}

// completeNext completes the job and claims the next of its queue in one
// call, and opens the next job's work page; or, when nothing else is
// waiting (or the queue is no longer the operator's), goes home.
func (s *Server) completeNext(c echo.Context, id, token string, result json.RawMessage) error {
	ctx := c.Request().Context()
	j, next, why, err := s.desk.CompleteNext(ctx, actor(c), id, token, result)
	if err != nil {
		return s.refused(c, "complete", err)
	}
	if next == nil {
		if why != nil {
			s.flash(c, "Completed "+quote(j.Title)+".")
			s.note(c, noClaimWords(why, j.Queue))
		} else {
			s.flash(c, "Completed "+quote(j.Title)+". Nothing else is waiting in "+j.Queue+" for you.")
		}
		return redirect(c, "/")
	}
	s.flash(c, "Completed "+quote(j.Title)+". Here is the next one.")
	return redirect(c, "/jobs/"+next.Job.ID)
}

// quote sets a title off in running text, in quotation marks: a title may
// hold parentheses of its own.
func quote(title string) string { return "“" + title + "”" }

// resultFromForm builds the result object of the complete form: by the
// queue's outcome form if it has one (tasks.Outcome.FromForm), else the
// notes and the filled name/value rows. Every value must be valid UTF-8
// (json.Marshal would put U+FFFD in place of what is not, and store what
// nobody wrote).
func (s *Server) resultFromForm(c echo.Context, id string) (json.RawMessage, error) {
	form, err := c.FormParams()
	if err != nil {
		return nil, err
	}
	for field, values := range form {
		if slices.ContainsFunc(values, func(v string) bool { return !utf8.ValidString(v) }) {
			return nil, newError(http.StatusBadRequest, "invalid_field", "%s must be valid UTF-8", field)
		}
	}
	outcome, err := s.outcomeOf(c.Request().Context(), id)
	if err != nil {
		return nil, err
	}
	if !outcome.Empty() {
		return outcome.FromForm(form.Get)
	}
	result := map[string]string{}
	if notes := strings.TrimSpace(form.Get("notes")); notes != "" {
		result["notes"] = notes
	}
	// Nothing typed is dropped unsaid: a value needs its name, and a name
	// may be given once (notes is the box's above).
	keys, values := form["key"], form["value"]
	for i, k := range keys {
		k = strings.TrimSpace(k)
		v := ""
		if i < len(values) {
			v = values[i]
		}
		switch _, taken := result[k]; {
		case k == "" && strings.TrimSpace(v) == "":
			continue
		case k == "":
			return nil, &rowError{i, "has a value but no name: name it, or clear it"}
		case taken:
			return nil, &rowError{i, fmt.Sprintf("has the name %q again: give each value its own", k)}
		}
		result[k] = v
	}
	if len(result) == 0 {
		return nil, nil
	}
	return json.Marshal(result)
}

// rowError is a problem with a free name/value row of the complete form
// (row counts from 0), refused next to that row.
type rowError struct {
	row     int
	problem string // what follows "Result field 2 " or "This row "
}

func (e *rowError) Error() string { return fmt.Sprintf("Result field %d %s.", e.row+1, e.problem) }

// Is makes a rowError a tasks.ErrInvalid: 400 invalid_field.
func (e *rowError) Is(target error) bool { return target == tasks.ErrInvalid }

// overview gathers what the supervisor's page shows: the queues' counts
// (withQueues) and a page of live reservations (withReservations), the
// first page from the instance's board.
func (s *Server) overview(c echo.Context, withQueues, withReservations bool) (views.Overview, error) {
	ctx := c.Request().Context()
	o := views.Overview{Now: time.Now(), Cursor: c.QueryParam("cursor")}
	var err error
	if withQueues {
		if o.Queues, err = s.desk.VisibleQueues(ctx, actor(c)); err != nil {
			return o, err
		}
	}
	if !withReservations {
		return o, nil
	}
	var p tasks.Page
	if o.Cursor == "" {
		p, err = s.board.reservations.get(ctx, s.firstReservations)
	} else {
		p, err = s.reservationsAfter(ctx, o.Cursor)
	}
	o.Reservations, o.NextCursor = p.Jobs, p.NextCursor
	return o, err
}

// reservationsPage is how many live reservations the supervisor's page
// lists at a time.
const reservationsPage = 50

// reservationsAfter reads a page of live reservations, every queue's,
// soonest deadline first, after the cursor; without payloads, which the
// table does not show.
func (s *Server) reservationsAfter(ctx context.Context, cursor string) (tasks.Page, error) {
	return s.tasks.ListReservations(ctx, "", reservationsPage, cursor, tasks.WithoutPayloads)
}

// firstReservations reads the first page of live reservations (the
// board's).
func (s *Server) firstReservations(ctx context.Context) (tasks.Page, error) {
	return s.reservationsAfter(ctx, "")
}

func (s *Server) supervisorHome(c echo.Context) error {
	o, err := s.overview(c, true, true)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, views.SupervisorHome(s.page(c, "Supervise"), o))
}

func (s *Server) statsFragment(c echo.Context) error {
	o, err := s.overview(c, true, false)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, views.QueueStats(o))
}

func (s *Server) reservationsFragment(c echo.Context) error {
	o, err := s.overview(c, false, true)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, views.Reservations(s.fragment(c), o))
}

func (s *Server) queuePage(c echo.Context) error {
	q, err := s.tasks.Queue(c.Request().Context(), c.Param("queue"))
	if err != nil {
		return err
	}
	return s.renderQueuePage(c, http.StatusOK, q, views.SettingsProblem{})
}

// renderQueuePage draws a queue's page with the jobs of the state asked
// for, and its settings form showing q (as typed, when problem says what
// is wrong with it).
func (s *Server) renderQueuePage(c echo.Context, status int, q tasks.Queue, problem views.SettingsProblem) error {
	ctx := c.Request().Context()
	state := tasks.State(cmp.Or(c.QueryParam("state"), string(tasks.StateReady)))
	f, err := jobFilter(c)
	if err != nil {
		return err
	}
	var p tasks.Page
	scanned := 0
	if f.Empty() {
		p, err = s.tasks.ListJobs(ctx, q.Name, state, 50, c.QueryParam("cursor"), tasks.WithoutPayloads)
	} else {
		p, scanned, err = s.tasks.FindJobs(ctx, q.Name, state, f, 50, c.QueryParam("cursor"), tasks.WithoutPayloads)
	}
	if err != nil {
		return err
	}
	st, err := s.tasks.Stats(ctx, q.Name)
	if err != nil {
		return err
	}
	day, err := s.tasks.Numbers(ctx, q.Name)
	if err != nil {
		return err
	}
	now := time.Now()
	v := views.QueueView{Queue: q, Stats: st, State: state, Jobs: p.Jobs, NextCursor: p.NextCursor, Now: now, Problem: problem, Typed: typedSettings(c),
		Filter: f, Scanned: scanned, Day: views.DaySeries(day, now)}
	return s.render(c, status, views.QueuePage(s.page(c, q.Name), v))
}

func (s *Server) newQueuePage(c echo.Context) error {
	return s.render(c, http.StatusOK, views.NewQueuePage(s.page(c, "New queue"), tasks.Queue{
		LeaseSeconds: 300, MaxAttempts: 5, MaxExtensions: 10, MaxHoldSeconds: 4 * 3600}, nil, views.SettingsProblem{}))
}

// settingsForm reads the settings form: every setting it shows, as a
// patch, and the same written over q, to show again. A field that cannot
// be read (views.ReadSetting) is a problem, in words.
func settingsForm(c echo.Context, q *tasks.Queue) (tasks.QueuePatch, views.SettingsProblem) {
	var p tasks.QueuePatch
	for _, f := range []struct {
		name string
		to   *int
		set  **int
	}{
		{"lease_seconds", &q.LeaseSeconds, &p.LeaseSeconds}, {"max_attempts", &q.MaxAttempts, &p.MaxAttempts},
		{"max_extensions", &q.MaxExtensions, &p.MaxExtensions}, {"max_hold_seconds", &q.MaxHoldSeconds, &p.MaxHoldSeconds},
		{"aging_seconds", &q.AgingSeconds, &p.AgingSeconds}, {"max_held", &q.MaxHeld, &p.MaxHeld},
	} {
		n, problem := views.ReadSetting(f.name, c.FormValue(f.name))
		if problem.Message != "" {
			return p, problem
		}
		*f.to, *f.set = n, &n
	}
	// The outcome form, when the form sent its box (a box left empty
	// removes it).
	if form, err := c.FormParams(); err != nil || form["outcome"] == nil {
		return p, views.SettingsProblem{}
	}
	o, err := tasks.ParseOutcome(c.FormValue("outcome"))
	var v *tasks.ValidationError
	if errors.As(err, &v) {
		return p, views.SettingProblem(v)
	}
	if o == nil {
		o = &tasks.Outcome{}
	}
	q.Outcome, p.Outcome = o, o
	return p, views.SettingsProblem{}
}

// typedSettings is what the settings form sent, to show again as typed
// (nil when it sent nothing).
func typedSettings(c echo.Context) url.Values {
	if form, err := c.FormParams(); err == nil && c.Request().Method == http.MethodPost {
		return form
	}
	return nil
}

// settingProblem says in words what the store refused of a queue's
// settings, or returns err when it was no such refusal.
func settingProblem(err error) (views.SettingsProblem, error) {
	var v *tasks.ValidationError
	if errors.As(err, &v) {
		return views.SettingProblem(v), nil
	}
	return views.SettingsProblem{}, err
}

// createQueueForm creates a queue from the new queue form. A taken name
// or a bad setting shows the form again, as typed, saying what is wrong.
func (s *Server) createQueueForm(c echo.Context) error {
	q := tasks.Queue{Name: strings.TrimSpace(c.FormValue("name"))}.WithDefaults()
	_, problem := settingsForm(c, &q)
	status := http.StatusBadRequest
	if problem.Message == "" {
		// Every setting was typed: a zero is no call for the default.
		_, err := s.desk.CreateQueue(c.Request().Context(), actor(c), q, true)
		switch {
		case err == nil:
			s.flash(c, "Created queue "+q.Name+". Grant it to the people who will work it.")
			return redirect(c, "/supervisor/queues/"+q.Name)
		case errors.Is(err, tasks.ErrQueueExists):
			status, problem = http.StatusConflict, views.SettingsProblem{Field: "name",
				Message: "A queue named " + q.Name + " already exists. Choose another name, or open that queue to change its settings."}
		default:
			if problem, err = settingProblem(err); err != nil {
				return err
			}
		}
	}
	return s.render(c, status, views.NewQueuePage(s.page(c, "New queue"), q, typedSettings(c), problem))
}

// queueSettingsForm saves the settings form of a queue's page. A bad
// setting shows the page again with the form as typed, saying what is
// wrong; nothing is saved then.
func (s *Server) queueSettingsForm(c echo.Context) error {
	q, err := s.tasks.Queue(c.Request().Context(), c.Param("queue"))
	if err != nil {
		return err
	}
	patch, problem := settingsForm(c, &q)
	if problem.Message == "" {
		if _, err = s.desk.ChangeQueue(c.Request().Context(), actor(c), q.Name, patch); err == nil {
			s.flash(c, "Saved the settings of "+q.Name+".")
			return redirect(c, "/supervisor/queues/"+q.Name)
		}
		if problem, err = settingProblem(err); err != nil {
			return err
		}
	}
	return s.renderQueuePage(c, http.StatusBadRequest, q, problem)
}

// pauseForm pauses or resumes a queue from its page.
func (s *Server) pauseForm(paused bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		q, err := s.setPaused(c, c.Param("queue"), paused)
		if err != nil {
			return err
		}
		if paused {
			s.flash(c, "Paused "+q.Name+": nobody can claim its jobs until you resume it. Jobs can still be added.")
		} else {
			s.flash(c, "Resumed "+q.Name+": its jobs can be claimed again.")
		}
		return redirect(c, "/supervisor/queues/"+q.Name)
	}
}

// deleteQueueForm deletes an empty queue from its page.
func (s *Server) deleteQueueForm(c echo.Context) error {
	name := c.Param("queue")
	err := s.desk.DeleteQueue(c.Request().Context(), actor(c), name)
	if errors.Is(err, tasks.ErrQueueNotEmpty) {
		s.note(c, "Not deleted: only an empty queue can be deleted, and "+name+
			" still has jobs ready, scheduled, in progress or dead, or a batch that has not finished.")
		return redirect(c, "/supervisor/queues/"+name)
	}
	if err != nil {
		return err
	}
	s.flash(c, "Deleted queue "+name+".")
	return redirect(c, "/supervisor")
}

// requeueDeadForm puts the queue's dead jobs back in line, maxBulk at a
// step; the page says how many are left, and offers the next step.
func (s *Server) requeueDeadForm(c echo.Context) error {
	queue := c.Param("queue")
	n, left, err := s.desk.RequeueDead(c.Request().Context(), actor(c), queue, desk.MaxBulk)
	if err != nil {
		return err
	}
	msg := "Requeued " + views.Plural(n, "dead job") + " with fresh attempts."
	if left > 0 {
		msg += " " + views.Plural(int(left), "dead job") + " left: press Requeue all dead again to go on."
	}
	s.flash(c, msg)
	return redirect(c, "/supervisor/queues/"+queue+"?state=dead")
}

// cancelSelectedForm cancels the jobs ticked on a queue's page.
func (s *Server) cancelSelectedForm(c echo.Context) error {
	queue := c.Param("queue")
	form, _ := c.FormParams()
	back := "/supervisor/queues/" + queue + "?state=" + url.QueryEscape(c.FormValue("state"))
	if len(form["id"]) == 0 {
		s.note(c, "Nothing was selected: tick the jobs to cancel first.")
		return redirect(c, back)
	}
	// Forced only from the list of reserved jobs: a job of another list
	// claimed since the page showed it stays with its holder.
	canceled, failed, err := s.cancelMany(c, form["id"], c.FormValue("state") == string(tasks.StateReserved))
	if err != nil {
		return err
	}
	if len(canceled) > 0 {
		s.flash(c, "Canceled "+views.Plural(len(canceled), "job")+".")
	}
	if len(failed) > 0 {
		s.note(c, views.Plural(len(failed), "job")+" could not be canceled: "+failed[0].Message+".")
	}
	return redirect(c, back)
}

// superviseJob runs a supervisor's action on a job: requeue (from dead, or
// force release) or cancel (forced), only if the job is still as the page
// showed it (its form says how); else it says so, and the page shows the
// job as it is now.
func (s *Server) superviseJob(c echo.Context) error {
	action := c.Param("action")
	if action != "requeue" && action != "cancel" {
		return echo.ErrNotFound
	}
	back := s.localPath(c.Request().Referer(), "/supervisor")
	seen := tasks.State(c.FormValue("state")) // "": whatever it is now
	if seen != "" && !slices.Contains(tasks.States, seen) {
		return newError(http.StatusBadRequest, "invalid_field", "state must be the job's state as the page showed it")
	}
	ctx, a, id, asSeen := c.Request().Context(), actor(c), c.Param("id"), tasks.AsSeen(seen, c.FormValue("holder"))
	var (
		j      *tasks.Job
		holder string
		err    error
	)
	if action == "requeue" {
		j, holder, err = s.desk.Requeue(ctx, a, id, asSeen)
	} else {
		j, holder, err = s.desk.Cancel(ctx, a, id, true, asSeen)
	}
	if errors.Is(err, tasks.ErrInvalidState) {
		s.note(c, "Nothing was done: the job changed since the page showed it. Here it is as it is now.")
		return redirect(c, back)
	}
	if err != nil {
		return err
	}
	msg := quote(j.Title) + " is " + string(j.State) + "."
	if holder != "" {
		msg += " " + holder + " no longer holds it."
	}
	s.flash(c, msg)
	// Back to the page the action came from, if it is one of claimdesk's.
	return redirect(c, back)
}

// batchesView lists the newest batches of every queue.
func (s *Server) batchesView(c echo.Context) (views.BatchesView, error) {
	bs, err := s.tasks.ListBatches(c.Request().Context(), "", 50)
	return views.BatchesView{Batches: bs, Now: time.Now()}, err
}

func (s *Server) batchesPage(c echo.Context) error {
	v, err := s.batchesView(c)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, views.BatchesPage(s.page(c, "Batches"), v))
}

func (s *Server) batchesFragment(c echo.Context) error {
	v, err := s.batchesView(c)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, views.BatchList(s.fragment(c), v))
}

// cancelBatchForm cancels a batch from the batches page.
func (s *Server) cancelBatchForm(c echo.Context) error {
	b, err := s.desk.CancelBatch(c.Request().Context(), actor(c), c.Param("id"))
	if err != nil {
		return err
	}
	msg := "Canceled the batch " + quote(b.Title) + "."
	if !b.Ended() {
		msg += " " + views.Plural(b.Reserved, "job") + " in progress may still finish."
	}
	s.flash(c, msg)
	return redirect(c, "/supervisor/batches")
}
