package handlers

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"claimdesk/internal/desk"
	"claimdesk/internal/tasks"
	"claimdesk/views"

	"github.com/labstack/echo/v4"
)

// Jobs: reading a job and its history, listing jobs and reservations, and
// what supervisors and producers do to jobs (cancel, requeue, force
// release), one or many.

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

func (s *Server) apiHistory(c echo.Context) error {
	h, trimmed, err := s.desk.History(c.Request().Context(), actor(c), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, historyAnswer{h, trimmed})
}

func (s *Server) apiReservations(c echo.Context) error {
	limit, err := queryInt(c, "limit")
	if err != nil {
		return err
	}
	p, _, err := s.desk.Jobs(c.Request().Context(), actor(c),
		desk.Listing{Queue: c.QueryParam("queue"), State: tasks.StateReserved, Limit: limit, Cursor: c.QueryParam("cursor")})
	if err != nil {
		return err
	}
	out := []reservationEntry{}
	for _, r := range tasks.EachReservation(p.Jobs) { // one per holder of a job several hold
		out = append(out, reservationEntry{r, r.ReservedBy, r.ReservedAt, r.Deadline})
	}
	return c.JSON(http.StatusOK, reservationsAnswer{nullable(p.NextCursor), out})
}

func (s *Server) apiListJobs(c echo.Context) error {
	limit, err := queryInt(c, "limit")
	if err != nil {
		return err
	}
	queue := c.QueryParam("queue") // "": every queue
	// A listing by due time (sla) is of every unfinished state.
	state, sla := tasks.State(c.QueryParam("state")), tasks.SLA(c.QueryParam("sla"))
	if state == "" && sla == "" {
		state = tasks.StateReady
	}
	f, err := jobFilter(c)
	if err != nil {
		return err
	}
	l := desk.Listing{Queue: queue, State: state, SLA: sla, Filter: f, Limit: limit, Cursor: c.QueryParam("cursor")}
	if l.Descending, err = descending(c, false); err != nil {
		return err
	}
	if l.Since, err = queryTime(c, "since"); err != nil {
		return err
	}
	if l.Until, err = queryTime(c, "until"); err != nil {
		return err
	}
	p, scanned, err := s.desk.Jobs(c.Request().Context(), actor(c), l)
	if err != nil {
		return err
	}
	var out jobListAnswer
	if !f.Empty() {
		out.Scanned = &scanned
	}
	out.Jobs, out.NextCursor = p.Jobs, nullable(p.NextCursor)
	if out.Jobs == nil {
		out.Jobs = []*tasks.Job{}
	}
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

// descending reads a listing's order: "asc", the order of the state's
// index, or "desc", reversed (finished jobs newest first); absent, def.
func descending(c echo.Context, def bool) (bool, error) {
	switch c.QueryParam("order") {
	case "":
		return def, nil
	case "asc":
		return false, nil
	case "desc":
		return true, nil
	}
	return false, newError(http.StatusBadRequest, "invalid_field", "order must be asc or desc")
}

// queryTime reads a time in RFC 3339 from the query; absent, the zero time.
func queryTime(c echo.Context, name string) (time.Time, error) {
	v := c.QueryParam(name)
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return t, newError(http.StatusBadRequest, "invalid_field", "%s must be a time in RFC 3339, like 2026-11-26T08:00:00Z", name)
	}
	return t, nil
}

// apiCancel cancels a job; its reason comes in the query, as a DELETE
// carries no body.
func (s *Server) apiCancel(c echo.Context) error {
	force, err := queryBool(c, "force")
	if err != nil {
		return err
	}
	j, _, err := s.desk.Cancel(c.Request().Context(), actor(c), c.Param("id"), force, tasks.WithReason(c.QueryParam("reason")))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, j)
}

func (s *Server) apiRequeue(c echo.Context) error {
	why, err := givenReason(c)
	if err != nil {
		return err
	}
	j, _, err := s.desk.Requeue(c.Request().Context(), actor(c), c.Param("id"), why)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, j)
}

func (s *Server) apiAssign(c echo.Context) error {
	var b assignRequest
	if err := decode(c, &b); err != nil {
		return err
	}
	j, _, err := s.desk.Assign(c.Request().Context(), actor(c), c.Param("id"), b.Person, tasks.WithReason(b.Reason))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, j)
}

func (s *Server) apiCancelMany(c echo.Context) error {
	var b cancelManyRequest
	if err := decode(c, &b); err != nil {
		return err
	}
	canceled, failed, err := s.cancelMany(c, b.IDs, b.Force, b.Reason)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, cancelManyAnswer{canceled, failed})
}

// givenReason reads the reason of a request's optional body
// (reasonRequest) as the engine takes it.
func givenReason(c echo.Context) (tasks.SuperviseOption, error) {
	var b reasonRequest
	if c.Request().ContentLength != 0 {
		if err := decode(c, &b); err != nil {
			return nil, err
		}
	}
	return tasks.WithReason(b.Reason), nil
}

// cancelMany cancels each of the jobs (force: reserved ones too) for
// reason ("": none given), for the API and the pages alike, saying of
// each job it could not cancel why, as the API's errors would.
func (s *Server) cancelMany(c echo.Context, ids []string, force bool, reason string) ([]string, []bulkFailure, error) {
	canceled, failures, err := s.desk.CancelMany(c.Request().Context(), actor(c), ids, force, tasks.WithReason(reason))
	return canceled, bulkFailures(failures), err
}
func (s *Server) apiRequeueMany(c echo.Context) error {
	var b requeueManyRequest
	if err := decode(c, &b); err != nil {
		return err
	}
	requeued, failed, err := s.requeueMany(c, b.IDs, b.Reason)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, requeueManyAnswer{requeued, failed})
}

// requeueMany requeues each of the dead jobs with the reason ("": none),
// for the API and the pages alike, saying of each job it could not
// requeue why, as the API's errors would.
func (s *Server) requeueMany(c echo.Context, ids []string, reason string) ([]string, []bulkFailure, error) {
	requeued, failures, err := s.desk.RequeueMany(c.Request().Context(), actor(c), ids, tasks.WithReason(reason))
	return requeued, bulkFailures(failures), err
}

// bulkFailures says of each job a bulk action could not change why, as
// the API's errors would.
func bulkFailures(failures []desk.Failure) []bulkFailure {
	failed := make([]bulkFailure, len(failures))
	for i, f := range failures {
		pub, _ := publicError(f.Err)
		failed[i] = bulkFailure{f.ID, pub.Code, pub.Message}
	}
	return failed
}

// superviseJob runs a supervisor's action on a job: requeue (from dead, or
// force release) or cancel (forced), only if the job is still as the page
// showed it (its form says how); else it says so, and the page shows the
// job as it is now.
func (s *Server) superviseJob(c echo.Context) error {
	action := c.Param("action")
	if action != "requeue" && action != "cancel" && action != "assign" {
		return echo.ErrNotFound
	}
	back := s.localPath(c.Request().Referer(), "/supervisor")
	seen := tasks.State(c.FormValue("state")) // "": whatever it is now
	if seen != "" && !slices.Contains(tasks.States, seen) {
		return newError(http.StatusBadRequest, "invalid_field", "state must be the job's state as the page showed it")
	}
	ctx, a, id, asSeen := c.Request().Context(), actor(c), c.Param("id"), tasks.AsSeen(seen, c.FormValue("holder"))
	why := tasks.WithReason(strings.TrimSpace(c.FormValue("reason")))
	var (
		j      *tasks.Job
		holder string
		err    error
	)
	person := c.FormValue("person")
	switch action {
	case "requeue":
		j, holder, err = s.desk.Requeue(ctx, a, id, asSeen, why)
	case "assign":
		j, holder, err = s.desk.Assign(ctx, a, id, person, asSeen, why)
	default:
		j, holder, err = s.desk.Cancel(ctx, a, id, true, asSeen, why)
	}
	switch {
	case action == "assign" && errors.Is(err, desk.ErrInvalid):
		queue, _ := tasks.QueueOf(id)
		if person == "" {
			s.note(c, "Nothing was done: nobody was chosen. Choose one of "+queue+"'s operators.")
		} else {
			s.note(c, "Nothing was done: "+person+" does not work "+queue+". Choose one of its operators.")
		}
		return redirect(c, back)
	case errors.Is(err, tasks.ErrInvalidState):
		s.note(c, "Nothing was done: the job changed since the page showed it. Here it is as it is now.")
		return redirect(c, back)
	case errors.Is(err, tasks.ErrReasonRequired):
		s.note(c, views.ReasonRequired)
		return redirect(c, back)
	}
	if err != nil {
		return err
	}
	msg := quote(j.Title) + " is " + string(j.State) + "."
	if action == "assign" {
		msg = quote(j.Title) + " waits for " + person + " alone."
	}
	if holder != "" {
		msg += " " + holder + " no longer holds it."
	}
	s.flash(c, msg)
	// Back to the page the action came from, if it is one of claimdesk's.
	return redirect(c, back)
}

// cancelSelectedForm cancels the jobs ticked on a queue's page.
func (s *Server) cancelSelectedForm(c echo.Context) error {
	state := c.FormValue("state")
	return s.selectedForm(c, state, bulkForm{
		verb: "cancel", done: "canceled",
		// Forced only from the list of reserved jobs: a job of another
		// list claimed since the page showed it stays with its holder.
		run: func(ids []string, reason string) ([]string, []bulkFailure, error) {
			return s.cancelMany(c, ids, state == string(tasks.StateReserved), reason)
		},
		flash: func(n int) string { return "Canceled " + views.Plural(n, "job") + "." },
	})
}

// requeueSelectedForm requeues the dead jobs ticked on a queue's page,
// with the reason typed, if any.
func (s *Server) requeueSelectedForm(c echo.Context) error {
	return s.selectedForm(c, string(tasks.StateDead), bulkForm{
		verb: "requeue", done: "requeued",
		run: func(ids []string, reason string) ([]string, []bulkFailure, error) {
			return s.requeueMany(c, ids, reason)
		},
		flash: func(n int) string { return "Requeued " + views.Plural(n, "job") + " with fresh attempts." },
	})
}

// bulkForm is what a queue page's action on its ticked jobs does and
// says.
type bulkForm struct {
	verb  string // what it does, as "tick the jobs to cancel first"
	done  string // what it did, as "could not be canceled"
	run   func(ids []string, reason string) (changed []string, failed []bulkFailure, err error)
	flash func(n int) string // says that n jobs changed
}

// selectedForm runs a bulk action on the jobs ticked on a queue's page,
// with the reason typed, if any, then goes back to the page's list of
// jobs in state, saying how many changed and why the first job that
// could not be changed was not.
func (s *Server) selectedForm(c echo.Context, state string, f bulkForm) error {
	form, _ := c.FormParams()
	back := "/supervisor/queues/" + c.Param("queue") + "?state=" + url.QueryEscape(state)
	if len(form["id"]) == 0 {
		s.note(c, "Nothing was selected: tick the jobs to "+f.verb+" first.")
		return redirect(c, back)
	}
	changed, failed, err := f.run(form["id"], strings.TrimSpace(c.FormValue("reason")))
	if err != nil {
		return err
	}
	if len(changed) > 0 {
		s.flash(c, f.flash(len(changed)))
	}
	if len(failed) > 0 {
		s.note(c, views.Plural(len(failed), "job")+" could not be "+f.done+": "+failed[0].Message+".")
	}
	return redirect(c, back)
}
