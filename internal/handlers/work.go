package handlers

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"claimdesk/internal/desk"
	"claimdesk/internal/tasks"
	"claimdesk/internal/users"
	"claimdesk/views"

	"github.com/labstack/echo/v4"
)

// Work: producers enqueue jobs (POST /api/v1/queues/{queue}/jobs);
// operators claim them, through the API and from their home page, and end
// their reservations (complete, give back, skip, more time, can't be done)
// through the API and on the job's work page.

func (s *Server) apiEnqueue(c echo.Context) error {
	if err := s.desk.MayProduce(c.Request().Context(), actor(c), c.Param("queue")); err != nil {
		return err
	}
	var body enqueueRequest
	if err := decode(c, &body); err != nil {
		return err
	}
	// The header's key stands for one job's when its body has none; a
	// header that holds no key is refused all the same.
	key := c.Request().Header.Get("Idempotency-Key")
	if err := tasks.ValidIdempotencyKey(key); err != nil {
		return err
	}
	single := body.Jobs == nil
	jobs := body.Jobs
	if single {
		if body.IdempotencyKey == "" {
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
		return c.JSON(status, jobAnswer{list[0]})
	}
	return c.JSON(status, jobsAnswer{list})
}

func (s *Server) apiClaim(c echo.Context) error {
	r, err := s.desk.Claim(c.Request().Context(), actor(c), c.Param("queue"), c.Request().Header.Get("Idempotency-Key"))
	return claimed(c, r, err)
}

// apiClaimAny claims the next job across the operator's queues, or the
// subset named in the body (tasks.Store.ClaimAny says how they rank).
func (s *Server) apiClaimAny(c echo.Context) error {
	var body claimAnyRequest
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
	return c.JSON(http.StatusOK, claimOf(r))
}

// holderAction decodes the body and runs one of the holder's actions, as
// the caller (the engine refuses anyone but the holder), answering what
// the action returns.
func (s *Server) holderAction(c echo.Context, run func(ctx context.Context, a desk.Actor, id string, b holderRequest) (any, error)) error {
	var b holderRequest
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
	return s.holderAction(c, func(ctx context.Context, a desk.Actor, id string, b holderRequest) (any, error) {
		if !next {
			j, err := s.desk.Complete(ctx, a, id, b.Token, b.Result)
			return desk.AsHolderReads(j, a.Name()), err
		}
		j, r, why, err := s.desk.CompleteNext(ctx, a, id, b.Token, b.Result)
		j = desk.AsHolderReads(j, a.Name())
		if err != nil || r == nil {
			out := completeNextAnswer{Job: j}
			if why != nil {
				// Why nothing was claimed: the queue is paused, or the
				// holder is at its max_held.
				pub, _ := publicError(why)
				out.NextError = &nextError{pub.Code, pub.Message}
			}
			return out, err
		}
		return completeNextAnswer{Job: j, Next: claimOf(r)}, nil
	})
}

func (s *Server) apiRelease(c echo.Context) error {
	return s.holderAction(c, func(ctx context.Context, a desk.Actor, id string, b holderRequest) (any, error) {
		return s.desk.GiveBack(ctx, a, id, b.Token)
	})
}

func (s *Server) apiSkip(c echo.Context) error {
	return s.holderAction(c, func(ctx context.Context, a desk.Actor, id string, b holderRequest) (any, error) {
		return s.desk.Skip(ctx, a, id, b.Token)
	})
}

func (s *Server) apiExtend(c echo.Context) error {
	return s.holderAction(c, func(ctx context.Context, a desk.Actor, id string, b holderRequest) (any, error) {
		j, err := s.desk.MoreTime(ctx, a, id, b.Token, b.Seconds, c.Request().Header.Get("Idempotency-Key"))
		if err != nil {
			return nil, err
		}
		return extendAnswer{j.Deadline}, nil
	})
}

// apiClaimReview claims the next completion of the queue that waits for
// review, for a reviewer (desk.ClaimReview).
func (s *Server) apiClaimReview(c echo.Context) error {
	r, err := s.desk.ClaimReview(c.Request().Context(), actor(c), c.Param("queue"), c.Request().Header.Get("Idempotency-Key"))
	return claimed(c, r, err)
}

// apiApprove completes the job its reviewer holds for review.
func (s *Server) apiApprove(c echo.Context) error {
	return s.holderAction(c, func(ctx context.Context, a desk.Actor, id string, b holderRequest) (any, error) {
		return s.desk.Approve(ctx, a, id, b.Token, b.Result)
	})
}

// apiSendBack ends the review its reviewer holds, with a note.
func (s *Server) apiSendBack(c echo.Context) error {
	var b sendBackRequest
	if err := decode(c, &b); err != nil {
		return err
	}
	if b.Token == "" {
		return newError(http.StatusBadRequest, "invalid_field", "token is required")
	}
	j, err := s.desk.SendBack(c.Request().Context(), actor(c), c.Param("id"), b.Token, b.Note)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, j)
}

func (s *Server) apiFail(c echo.Context) error {
	return s.holderAction(c, func(ctx context.Context, a desk.Actor, id string, b holderRequest) (any, error) {
		return s.desk.CantBeDone(ctx, a, id, b.Token, b.Reason)
	})
}

// apiSaveDraft saves what the holder has typed so far as the job's live
// draft (desk.SaveDraft).
func (s *Server) apiSaveDraft(c echo.Context) error {
	var b draftRequest
	if err := decode(c, &b); err != nil {
		return err
	}
	switch {
	case b.Token == "":
		return newError(http.StatusBadRequest, "invalid_field", "token is required")
	case b.Values == nil:
		return newError(http.StatusBadRequest, "invalid_field", "values is required")
	}
	at, err := s.desk.SaveDraft(c.Request().Context(), actor(c), c.Param("id"), b.Token, b.Values)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, draftAnswer{at})
}

// apiDrafts answers the job's drafts (desk.Drafts).
func (s *Server) apiDrafts(c echo.Context) error {
	d, err := s.desk.Drafts(c.Request().Context(), actor(c), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, d)
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
// they did lately (desk.MyWork).
func (s *Server) operatorHome(ctx context.Context, u users.User) (views.Home, error) {
	w, err := s.desk.MyWork(ctx, desk.Person(u))
	if err != nil {
		return views.Home{}, err
	}
	reviews, err := s.desk.ReviewsWaiting(ctx, desk.Person(u))
	return views.Home{Queues: w.Queues, Reservations: w.Holding, Recent: w.Recent, Results: w.Results, Now: time.Now(), Away: u.Away,
		For: w.For, Assigned: w.Assigned, Reviews: reviews, Reviewer: u}, err
}

// claimFrom claims the next job of one queue and opens its work page.
func (s *Server) claimFrom(c echo.Context) error {
	r, err := s.desk.Claim(c.Request().Context(), actor(c), c.Param("queue"), "")
	return s.openClaimed(c, r, err)
}

// claimReview claims the next completion of one queue that waits for
// review, and opens its work page.
func (s *Server) claimReview(c echo.Context) error {
	r, err := s.desk.ClaimReview(c.Request().Context(), actor(c), c.Param("queue"), "")
	if err == nil && r == nil {
		s.flash(c, "Nothing waits for your review in "+c.Param("queue")+" right now.")
		return redirect(c, "/")
	}
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
	ctx := c.Request().Context()
	o, err := s.desk.Open(ctx, actor(c), c.Param("id"))
	if err != nil {
		return views.Work{}, err
	}
	w := views.Work{Now: time.Now(), Job: o.Job, Token: o.Token, History: o.History, Trimmed: o.Trimmed, Lost: o.Lost, Drafts: o.Drafts}
	if o.Token != "" {
		w.Attempts, w.MoreTimeKey = views.EarlierAttempts(o.History), rand.Text()
		// The form starts from the holder's own draft, saved before the
		// page was left; or from a kept one they chose (?draft=n).
		w.StartFrom(o.Drafts.Live)
		if n, err := strconv.Atoi(c.QueryParam("draft")); err == nil && n >= 0 && n < len(o.Drafts.Kept) {
			w.Typed = nil
			w.StartFrom(&o.Drafts.Kept[n])
		}
	}
	slices.Reverse(w.History)
	if o.Ended != nil {
		w.Ended = views.EndedBecause(*o.Ended, actor(c).Name())
	}
	if u, _ := currentUser(c); o.Token != "" || u.Role == users.Supervisor {
		// The queue's limits on more time and its outcome form, for the
		// holder; whether it requires a reason, for supervisors.
		if w.Queue, err = s.queueSettings(ctx, w.Job.Queue); err != nil && !errors.Is(err, tasks.ErrQueueNotFound) {
			return w, err
		}
	}
	if u, _ := currentUser(c); u.Role == users.Supervisor && !w.Job.State.Terminal() {
		// Whom a supervisor may give the job to: its queue's operators.
		people, err := s.desk.People(ctx, actor(c))
		if err != nil {
			return w, err
		}
		for _, p := range people {
			if !p.Disabled && p.CanWork(w.Job.Queue) {
				w.Workers = append(w.Workers, p.Name)
			}
		}
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
		w.Problems = views.OutcomeProblems(w.Queue.Outcome, oe, viewerLocale(c))
		w.Refused.Message = "Not completed: " + views.Plural(len(oe.Fields), "value") + " above " + needs(len(oe.Fields)) + " a look."
	case errors.As(err, &re) && re.row < views.FreeRows:
		w.Problems = map[string]string{views.FreeRowKey(re.row): "This row " + re.problem + "."}
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
		if err == nil && !completed(j) {
			msg = notYetWords(j)
		}
	case "approve":
		j, err = s.desk.Approve(ctx, a, id, token, nil)
		msg = "Approved: the job is completed."
	case "send-back":
		j, err = s.desk.SendBack(ctx, a, id, token, strings.TrimSpace(c.FormValue("note")))
		msg = "Sent back with your note."
	case "release":
		j, err = s.desk.GiveBack(ctx, a, id, token)
		msg = "Given back: it keeps its place in line."
	case "skip":
		return s.skipNext(c, id, token)
	case "draft":
		// Sent by the page's script as the holder types: it needs no page.
		form, _ := c.FormParams()
		if _, err := s.desk.SaveDraft(ctx, a, id, token, views.TypedDraft(form)); err != nil {
			return err
		}
		return c.NoContent(http.StatusNoContent)
	case "fail":
		if j, err = s.desk.CantBeDone(ctx, a, id, token, strings.TrimSpace(c.FormValue("reason"))); err != nil {
			break
		}
		s.flash(c, views.FailedWords(j))
		return redirect(c, "/")
	case "extend":
		// The choice is an amount added to the time left; the form's key,
		// fresh on each page, makes a form sent twice one extension.
		secs, _ := strconv.Atoi(c.FormValue("add"))
		if j, err = s.desk.AddTime(ctx, a, id, token, time.Duration(secs)*time.Second, c.FormValue("extend_key")); err != nil {
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
	done := "Completed " + quote(j.Title) + "."
	if !completed(j) {
		done = notYetWords(j)
	}
	if next == nil {
		if why != nil {
			s.flash(c, done)
			s.note(c, noClaimWords(why, j.Queue))
		} else {
			s.flash(c, done+" Nothing else is waiting in "+j.Queue+" for you.")
		}
		return redirect(c, "/")
	}
	s.flash(c, done+" Here is the next one.")
	return redirect(c, "/jobs/"+next.Job.ID)
}

// completed reports whether a completion completed its job: not when it
// was one answer of several (a queue with overlap) nor when it waits for
// review.
func completed(j *tasks.Job) bool { return j.State == tasks.StateCompleted }

// notYetWords says to the person who completed a job that did not
// complete why it did not.
func notYetWords(j *tasks.Job) string {
	if j.Review != nil {
		return "Done " + quote(j.Title) + ": a reviewer looks at it before it counts."
	}
	next := "someone else answers it next"
	if j.State == tasks.StateReserved {
		next = "others are answering it too" // held by several at once
	}
	return fmt.Sprintf("Answered %s: %d of %d answers are in; %s.", quote(j.Title), len(j.Answers), j.Overlap, next)
}

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
		return outcome.FromForm(form.Get, viewerLocale(c))
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
