package handlers

import (
	"cmp"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"claimdesk/internal/desk"
	"claimdesk/internal/tasks"
	"claimdesk/views"

	"github.com/labstack/echo/v4"
)

// Queues: the queues with their counts, the supervisor's overview of them
// and of the live reservations, a queue's page with its jobs and numbers,
// and its settings: create, change, pause, resume, delete, requeue its
// dead.

func (s *Server) apiQueues(c echo.Context) error {
	qs, err := s.desk.VisibleQueues(c.Request().Context(), actor(c))
	if err != nil {
		return err
	}
	out := make([]queueSummary, len(qs))
	for i, q := range qs {
		st := q.Stats
		out[i] = queueSummary{q.Queue.Name, st.Ready, st.Held, st.Scheduled, st.Reserved, st.Dead,
			q.Queue.LeaseSeconds, q.Queue.MaxAttempts, q.Queue.MaxHeld, q.Queue.Paused, q.Queue.Outcome, st.AtRisk, st.Breached}
	}
	return c.JSON(http.StatusOK, queuesAnswer{out})
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

func (s *Server) apiNumbers(c echo.Context) error {
	ms, err := s.desk.Numbers(c.Request().Context(), actor(c), c.Param("queue"))
	if err != nil {
		return err
	}
	out := make([]minuteJSON, len(ms))
	for i, m := range ms {
		out[i] = minuteJSON{m.At, m.Ready, m.Claims, m.Completed, m.Dead, m.OldestWait.Seconds()}
	}
	return c.JSON(http.StatusOK, minutesAnswer{out})
}

func (s *Server) apiRequeueDead(c echo.Context) error {
	limit, err := limitParam(c, 100, desk.MaxBulk)
	if err != nil {
		return err
	}
	why, err := givenReason(c)
	if err != nil {
		return err
	}
	n, left, err := s.desk.RequeueDead(c.Request().Context(), actor(c), c.Param("queue"), limit, why)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, requeueDeadAnswer{DeadLeft: left, Requeued: n})
}

// reviewsShown is how many completions waiting for review the supervisor's
// page lists of each queue.
const reviewsShown = 20

// overview gathers what the supervisor's page shows: the queues' counts
// (withQueues) and a page of live reservations (withReservations).
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
	p, err := s.desk.LiveReservations(ctx, actor(c), o.Cursor)
	o.Reservations, o.NextCursor = p.Jobs, p.NextCursor
	return o, err
}

func (s *Server) supervisorHome(c echo.Context) error {
	o, err := s.overview(c, true, true)
	if err != nil {
		return err
	}
	if o.Reviews, err = s.desk.ReviewBacklog(c.Request().Context(), actor(c), reviewsShown); err != nil {
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
	q, err := s.desk.Queue(c.Request().Context(), actor(c), c.Param("queue"))
	if err != nil {
		return err
	}
	return s.renderQueuePage(c, http.StatusOK, q, nil, views.SettingsProblem{})
}

// renderQueuePage draws a queue's page with the jobs of the state asked
// for, and its settings form showing q, or what was typed in it (when
// problem says what is wrong with it, or an edit of its outcome form
// asked for it again).
func (s *Server) renderQueuePage(c echo.Context, status int, q tasks.Queue, typed url.Values, problem views.SettingsProblem) error {
	ctx, a := c.Request().Context(), actor(c)
	state, sla, f, err := queueListing(c)
	if err != nil {
		return err
	}
	now := time.Now()
	l := desk.Listing{Queue: q.Name, State: state, SLA: sla, Filter: f, Limit: 50, Cursor: c.QueryParam("cursor")}
	var finished views.Finished
	opts := []tasks.ListOption{tasks.WithoutPayloads}
	if state.Terminal() {
		// Finished jobs are reviewed newest first, with what they came to.
		if l.Descending, err = descending(c, true); err != nil {
			return err
		}
		finished = finishedRange(c)
		var ok bool
		if l.Since, l.Until, ok = finished.Bounds(now); !ok {
			return newError(http.StatusBadRequest, "invalid_field", "the time range must be today, 24h or 7d, or from and to as date and time, in a known time zone")
		}
		if state == tasks.StateCompleted {
			opts = append(opts, tasks.WithResults)
		}
	}
	p, scanned, err := s.desk.Jobs(ctx, a, l, opts...)
	if err != nil {
		return err
	}
	v, err := s.queueNumbers(c, q, state, sla, f)
	if err != nil {
		return err
	}
	if v.Others, err = s.otherQueues(c, q.Name); err != nil {
		return err
	}
	v.Jobs, v.NextCursor, v.Problem, v.Typed, v.Scanned = p.Jobs, p.NextCursor, problem, typed, scanned
	v.Finished, v.Newest = finished, l.Descending
	return s.render(c, status, views.QueuePage(s.page(c, q.Name), v))
}

// queueListing reads which of a queue's jobs its page lists: the state
// (ready unless said), or instead the jobs at risk or overdue (sla), and
// the filter.
func queueListing(c echo.Context) (tasks.State, tasks.SLA, tasks.Filter, error) {
	if sla := tasks.SLA(c.QueryParam("sla")); sla != "" {
		if sla != tasks.SLAAtRisk && sla != tasks.SLABreached {
			return "", "", tasks.Filter{}, newError(http.StatusBadRequest, "invalid_field", "sla must be at_risk or breached")
		}
		f, err := jobFilter(c)
		return "", sla, f, err
	}
	state := tasks.State(cmp.Or(c.QueryParam("state"), string(tasks.StateReady)))
	if err := state.Check(); err != nil {
		return state, "", tasks.Filter{}, err
	}
	f, err := jobFilter(c)
	return state, "", f, err
}

// finishedRange is the time range a queue page's finished jobs are
// listed for, as the address says it.
func finishedRange(c echo.Context) views.Finished {
	return views.Finished{When: c.QueryParam("when"), From: c.QueryParam("from"), To: c.QueryParam("to"), TZ: c.QueryParam("tz")}
}

// queueNumbers reads what a queue's page says of its numbers: the counts
// of its tabs, and its day, whose quarter hour under way ends with those
// same counts (views.DaySeries).
func (s *Server) queueNumbers(c echo.Context, q tasks.Queue, state tasks.State, sla tasks.SLA, f tasks.Filter) (views.QueueView, error) {
	ctx, a := c.Request().Context(), actor(c)
	st, err := s.desk.Stats(ctx, a, q.Name)
	if err != nil {
		return views.QueueView{}, err
	}
	day, err := s.desk.Numbers(ctx, a, q.Name)
	if err != nil {
		return views.QueueView{}, err
	}
	now := time.Now()
	return views.QueueView{Queue: q, Stats: st, State: state, SLA: sla, Now: now, Filter: f, Day: views.DaySeries(day, st, now)}, nil
}

// queueNumbersFragment is a queue's tabs and charts, fetched again as the
// queue changes.
func (s *Server) queueNumbersFragment(c echo.Context) error {
	q, err := s.desk.Queue(c.Request().Context(), actor(c), c.Param("queue"))
	if err != nil {
		return err
	}
	state, sla, f, err := queueListing(c)
	if err != nil {
		return err
	}
	v, err := s.queueNumbers(c, q, state, sla, f)
	if err != nil {
		return err
	}
	v.Finished = finishedRange(c)
	return s.render(c, http.StatusOK, views.QueueNumbers(v))
}

func (s *Server) newQueuePage(c echo.Context) error {
	others, err := s.otherQueues(c, "")
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, views.NewQueuePage(s.page(c, "New queue"), tasks.Queue{}.WithDefaults(), others, nil, views.SettingsProblem{}))
}

// otherQueues names the queues the user sees but the one named: where a
// queue's settings may send its overdue jobs.
func (s *Server) otherQueues(c echo.Context, name string) ([]string, error) {
	qs, err := s.desk.VisibleQueues(c.Request().Context(), actor(c))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, q := range qs {
		if q.Queue.Name != name {
			names = append(names, q.Queue.Name)
		}
	}
	return names, nil
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
	boxSettings(c, q, &p)
	if problem := dueSettings(c, q, &p); problem.Message != "" {
		return p, problem
	}
	// The outcome form, when the form sent it (from its editor or as
	// JSON; emptied, it is removed).
	form, err := c.FormParams()
	if err != nil {
		return p, views.SettingsProblem{}
	}
	o, sent, problem := views.OutcomeFromSettings(form)
	if sent && problem.Message == "" {
		q.Outcome, p.Outcome = o, o
	}
	return p, problem
}

// dueSettings reads the settings form's due times, overlap and review,
// those it sent (a page made before there were any sends none).
func dueSettings(c echo.Context, q *tasks.Queue, p *tasks.QueuePatch) views.SettingsProblem {
	form, err := c.FormParams()
	if err != nil {
		return views.SettingsProblem{}
	}
	for _, f := range []struct {
		name string
		to   *int
		set  **int
	}{{"sla_seconds", &q.SLASeconds, &p.SLASeconds}, {"breach_priority", &q.BreachPriority, &p.BreachPriority}, {"overlap", &q.Overlap, &p.Overlap}} {
		if form[f.name] == nil {
			continue
		}
		n, problem := views.ReadSetting(f.name, form.Get(f.name))
		if problem.Message != "" {
			return problem
		}
		*f.to, *f.set = n, &n
	}
	if form["warn_fraction"] != nil {
		warn, problem := views.ReadWarnPercent(form.Get("warn_fraction"))
		if problem.Message != "" {
			return problem
		}
		q.WarnFraction, p.WarnFraction = warn, &warn
	}
	if form["order"] != nil {
		order := form.Get("order")
		q.Order, p.Order = order, &order
	}
	for _, f := range []struct {
		name string
		to   *float64
		set  **float64
	}{{"review_fraction", &q.ReviewFraction, &p.ReviewFraction}, {"min_agreement", &q.MinAgreement, &p.MinAgreement}} {
		if form[f.name] == nil {
			continue
		}
		share, problem := views.ReadSharePercent(f.name, form.Get(f.name))
		if problem.Message != "" {
			return problem
		}
		*f.to, *f.set = share, &share
	}
	if form["breach_queue"] != nil {
		to := form.Get("breach_queue")
		q.BreachQueue, p.BreachQueue = to, &to
	}
	return views.SettingsProblem{}
}

// boxSettings reads the settings form's boxes, "a reason is required" and
// "held at once", when the form sent them (a hidden "0" before each box,
// "1" from the box ticked).
func boxSettings(c echo.Context, q *tasks.Queue, p *tasks.QueuePatch) {
	form, err := c.FormParams()
	if err != nil {
		return
	}
	for _, b := range []struct {
		name string
		to   *bool
		set  **bool
	}{{"require_reason", &q.RequireReason, &p.RequireReason}, {"overlap_at_once", &q.OverlapAtOnce, &p.OverlapAtOnce}} {
		if form[b.name] != nil {
			on := slices.Contains(form[b.name], "1")
			*b.to, *b.set = on, &on
		}
	}
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
	others, err := s.otherQueues(c, "")
	if err != nil {
		return err
	}
	if typed, ok := outcomeEdit(c); ok {
		typed, problem := views.EditOutcome(typed)
		return s.render(c, http.StatusOK, views.NewQueuePage(s.page(c, "New queue"), q, others, typed, problem))
	}
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
	return s.render(c, status, views.NewQueuePage(s.page(c, "New queue"), q, others, typedSettings(c), problem))
}

// queueSettingsForm saves the settings form of a queue's page. A bad
// setting shows the page again with the form as typed, saying what is
// wrong; nothing is saved then.
func (s *Server) queueSettingsForm(c echo.Context) error {
	q, err := s.desk.Queue(c.Request().Context(), actor(c), c.Param("queue"))
	if err != nil {
		return err
	}
	if typed, ok := outcomeEdit(c); ok {
		typed, problem := views.EditOutcome(typed)
		return s.renderQueuePage(c, http.StatusOK, q, typed, problem)
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
	return s.renderQueuePage(c, http.StatusBadRequest, q, typedSettings(c), problem)
}

// outcomeEdit is what the settings form sent when one of its outcome
// editor's buttons did (views.EditOutcome): to show again changed, not
// to save.
func outcomeEdit(c echo.Context) (url.Values, bool) {
	form, err := c.FormParams()
	if err != nil || form.Get("edit") == "" {
		return nil, false
	}
	return form, true
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
	n, left, err := s.desk.RequeueDead(c.Request().Context(), actor(c), queue, desk.MaxBulk,
		tasks.WithReason(strings.TrimSpace(c.FormValue("reason"))))
	if errors.Is(err, tasks.ErrReasonRequired) {
		s.note(c, views.ReasonRequired)
		return redirect(c, "/supervisor/queues/"+queue+"?state=dead")
	}
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
