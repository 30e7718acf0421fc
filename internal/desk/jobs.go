package desk

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"claimdesk/internal/audit"
	"claimdesk/internal/tasks"
	"claimdesk/internal/users"
)

// Jobs: who may read a job and its history, and what supervisors and
// producers do to jobs (cancel, requeue, force release).

// mayRead reports whether a may read the job: supervisors, producers of
// its queue, its holder (who may finish what they hold, granted the queue
// or no longer), and whoever completed it (so a holder whose answer was
// lost can see that it was done) while the queue is still theirs.
func mayRead(a Actor, j *tasks.Job) bool {
	switch {
	case a.is(users.Supervisor):
		return true
	case a.is(users.Producer):
		return mayProduce(a, j)
	}
	return j.HeldBy(a.Name()) != nil || a.canWork(j.Queue) && j.CompletedBy == a.Name()
}

// mayProduce reports whether the job is in a queue that a may put work
// into, or was enqueued in one and moved since (tasks.Job.MovedFrom).
func mayProduce(a Actor, j *tasks.Job) bool {
	return a.canSee(j.Queue) || j.MovedFrom != "" && a.canSee(j.MovedFrom)
}

// errReadJob refuses a job to whom may not read it.
var errReadJob = forbidden("only its holder, supervisors and the producers of its queue may read this job")

// Job returns the job, if a may read it (mayRead).
func (d *Desk) Job(ctx context.Context, a Actor, id string) (*tasks.Job, error) {
	j, err := d.tasks.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if !mayRead(a, j) {
		return nil, errReadJob
	}
	if mine := j.HeldBy(a.Name()); mine != nil && !a.is(users.Supervisor) {
		// Its holder reads their own reservation of it (HeldBy: not who
		// else holds it), as the holder reads it.
		j = AsHolderReads(mine, a.Name())
	}
	return j, nil
}

// AsHolderReads is the job as the person who holds it, or who has just
// completed their part of it, reads it: each answers on their own (overlap),
// so the answers given before theirs and their agreement are not theirs
// to read until the job is completed, unless they hold it to review it.
// The API answers a completion so; the work page's words after one count
// its answers, and show none.
func AsHolderReads(j *tasks.Job, person string) *tasks.Job {
	if j == nil || j.Answers == nil && j.Agreement == nil || j.State == tasks.StateCompleted ||
		j.Review != nil && j.HeldBy(person) != nil {
		return j
	}
	v := *j
	v.Answers, v.Agreement = nil, nil
	return &v
}

// History returns the job's history, oldest first, and how many of its
// oldest entries were trimmed, if a may read it: supervisors and producers
// of its queue read it whole; operators who held it, while the queue is
// still theirs, as historyFor says.
func (d *Desk) History(ctx context.Context, a Actor, id string) ([]tasks.Entry, int, error) {
	j, err := d.tasks.Get(ctx, id)
	if err != nil {
		return nil, 0, err
	}
	h, trimmed, err := j.History()
	if err != nil {
		return nil, 0, err
	}
	h, ok := historyFor(a, j, h)
	if !ok {
		return nil, 0, forbidden("only supervisors, the producers of its queue and operators who held it may read this job's history")
	}
	return h, trimmed, nil
}

// historyFor returns the part of the job's history h that a may read, and
// whether a may read any. An operator who holds the job or completed it
// reads it whole; one who held it and whose reservation ended (given back,
// skipped, failed, ran out, taken back) reads it up to and including their
// own last part, not what later holders did with it.
func historyFor(a Actor, j *tasks.Job, h []tasks.Entry) ([]tasks.Entry, bool) {
	if !a.is(users.Operator) {
		return h, mayRead(a, j)
	}
	me := a.Name()
	if !a.canWork(j.Queue) {
		return nil, false
	}
	if j.HeldBy(me) != nil || j.CompletedBy == me {
		return h, true
	}
	// Only a holder acts on a job, and a change that ends a reservation
	// names its holder: the last entry of theirs ends their part.
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Actor == me || h[i].Holder == me {
			return h[:i+1], true
		}
	}
	return nil, false
}

// Drafts are a job's unfinished work: its holder's live draft and those
// kept from reservations taken from their holders (tasks.Draft).
type Drafts struct {
	Live *tasks.Draft  `json:"live"`
	Kept []tasks.Draft `json:"kept"`
}

// Drafts returns the job's drafts, for supervisors and its holder: what
// operators typed and did not finish is theirs and their supervisors'
// alone, not the producers'.
func (d *Desk) Drafts(ctx context.Context, a Actor, id string) (Drafts, error) {
	j, err := d.tasks.Get(ctx, id)
	if err != nil {
		return Drafts{}, err
	}
	if mine := j.HeldBy(a.Name()); mine != nil {
		j = mine // their own reservation's draft
	} else if !a.is(users.Supervisor) {
		if !mayRead(a, j) {
			return Drafts{}, errReadJob
		}
		return Drafts{}, forbidden("only supervisors and the job's holder may read its drafts")
	}
	return d.drafts(ctx, j)
}

// drafts reads the job's drafts.
func (d *Desk) drafts(ctx context.Context, j *tasks.Job) (Drafts, error) {
	live, kept, err := d.tasks.Drafts(ctx, j)
	if kept == nil {
		kept = []tasks.Draft{}
	}
	return Drafts{Live: live, Kept: kept}, err
}

// Cancel cancels the job, for a producer of its queue or a supervisor; a
// reserved job only when force says so, which is a supervisor's alone;
// opts may say why (tasks.WithReason), which the audit log keeps too. It
// returns the job and whose reservation the cancel ended ("": none).
func (d *Desk) Cancel(ctx context.Context, a Actor, id string, force bool, opts ...tasks.SuperviseOption) (*tasks.Job, string, error) {
	if err := need(a, users.Producer, users.Supervisor); err != nil {
		return nil, "", err
	}
	if force && !a.is(users.Supervisor) {
		return nil, "", forbidden("only supervisors may force a cancel")
	}
	if !a.is(users.Supervisor) {
		j, err := d.tasks.Get(ctx, id)
		if err != nil {
			return nil, "", err
		}
		if !mayProduce(a, j) {
			return nil, "", forbidden("the job's queue, %s, is not granted to you", j.Queue)
		}
	}
	j, holder, err := d.tasks.Cancel(ctx, id, a.Name(), force, opts...)
	if err != nil {
		return nil, "", err
	}
	d.record(ctx, a, audit.JobCanceled, j.ID, audit.WithReason(audit.JobDetail(j, holder), tasks.ReasonOf(opts...)))
	return j, holder, nil
}

// Requeue puts a dead job back in line with fresh attempts, or takes a
// reserved one from its holder and puts it back in line (a force
// release), for a supervisor; opts may say why (tasks.WithReason), which
// the audit log keeps too. It returns the job and whose reservation it
// ended ("": none).
func (d *Desk) Requeue(ctx context.Context, a Actor, id string, opts ...tasks.SuperviseOption) (*tasks.Job, string, error) {
	if err := need(a, users.Supervisor); err != nil {
		return nil, "", err
	}
	j, holder, err := d.tasks.Requeue(ctx, id, a.Name(), opts...)
	if err != nil {
		return nil, "", err
	}
	action := audit.JobRequeued
	if holder != "" {
		action = audit.JobReleased
	}
	d.record(ctx, a, action, j.ID, audit.WithReason(audit.JobDetail(j, holder), tasks.ReasonOf(opts...)))
	return j, holder, nil
}

// Assign routes a job to one operator of its queue, for a supervisor:
// only they may claim it from then on; a held job is transferred to them,
// its reservation ended (tasks.Store.Assign). opts may say why
// (tasks.WithReason) and how the supervisor saw the job (tasks.AsSeen).
// It returns the job and whose reservation it ended ("": none).
func (d *Desk) Assign(ctx context.Context, a Actor, id, person string, opts ...tasks.SuperviseOption) (*tasks.Job, string, error) {
	if err := need(a, users.Supervisor); err != nil {
		return nil, "", err
	}
	queue, ok := tasks.QueueOf(id)
	if !ok {
		return nil, "", tasks.ErrNotFound
	}
	u, err := d.users.Get(ctx, person)
	switch {
	case errors.Is(err, users.ErrNotFound):
		return nil, "", invalid("%s is nobody here", person)
	case err != nil:
		return nil, "", err
	case u.Disabled || !u.CanWork(queue):
		return nil, "", invalid("%s does not work %s", person, queue)
	}
	j, holder, err := d.tasks.Assign(ctx, id, person, a.Name(), opts...)
	if err != nil {
		return nil, "", err
	}
	d.record(ctx, a, audit.JobAssigned, j.ID, audit.WithReason(audit.AssignedDetail(j, person, holder), tasks.ReasonOf(opts...)))
	return j, holder, nil
}

// ForceRelease takes the reserved job from its holder and puts it back in
// line, only while the holder is the one named: Requeue of a reservation
// (opts may say why).
func (d *Desk) ForceRelease(ctx context.Context, a Actor, id, holder string, opts ...tasks.SuperviseOption) (*tasks.Job, error) {
	j, _, err := d.Requeue(ctx, a, id, append(opts, tasks.AsSeen(tasks.StateReserved, holder))...)
	return j, err
}

// RequeueDead puts up to limit of the queue's dead jobs back in line, for
// a supervisor, and says how many it moved and how many are left dead;
// opts may say why (tasks.WithReason).
func (d *Desk) RequeueDead(ctx context.Context, a Actor, queue string, limit int, opts ...tasks.SuperviseOption) (int, int64, error) {
	if err := d.mayUse(ctx, a, queue, oversee); err != nil {
		return 0, 0, err
	}
	n, left, err := d.tasks.RequeueDead(ctx, queue, a.Name(), limit, opts...)
	if n > 0 {
		d.record(ctx, a, audit.DeadRequeued, queue, audit.WithReason(audit.DeadRequeuedDetail(n), tasks.ReasonOf(opts...)))
	}
	return n, left, err
}

// MaxBulk bounds the jobs of one bulk action.
const MaxBulk = tasks.MaxPageSize

// Failure is a job a bulk action could not change, and why.
type Failure struct {
	ID  string
	Err error
}

// CancelMany cancels each of the jobs (force: reserved ones too), each in
// its own atomic call, for a supervisor; opts may say why
// (tasks.WithReason). A job the engine refused to cancel (gone, finished,
// reserved without force) is a failure, not an error; any other error
// stops it there.
func (d *Desk) CancelMany(ctx context.Context, a Actor, ids []string, force bool, opts ...tasks.SuperviseOption) (canceled []string, failed []Failure, err error) {
	if err := need(a, users.Supervisor); err != nil {
		return nil, nil, err
	}
	// A reason no job could take refuses the request, not each job.
	if err := tasks.ValidReason(tasks.ReasonOf(opts...)); err != nil {
		return nil, nil, err
	}
	canceled, failed, err = each(ids, func(id string) error {
		_, _, err := d.tasks.Cancel(ctx, id, a.Name(), force, opts...)
		return err
	})
	if len(canceled) > 0 {
		d.record(ctx, a, audit.JobsCanceled, strings.Join(canceled[:min(len(canceled), 5)], " "), audit.WithReason(audit.JobsCanceledDetail(len(canceled)), tasks.ReasonOf(opts...)))
	}
	return canceled, failed, err
}

// RequeueMany puts each of the dead jobs back in line with fresh
// attempts, as Requeue does (an audit entry each), for a supervisor; the
// options (a reason, say) go with each. A job that is not dead, or gone,
// is a failure, not an error: a bulk requeue never takes a job from its
// holder. Any other error stops it there.
func (d *Desk) RequeueMany(ctx context.Context, a Actor, ids []string, opts ...tasks.SuperviseOption) (requeued []string, failed []Failure, err error) {
	if err := need(a, users.Supervisor); err != nil {
		return nil, nil, err
	}
	if err := tasks.ValidReason(tasks.ReasonOf(opts...)); err != nil {
		return nil, nil, err
	}
	opts = append(opts, tasks.AsSeen(tasks.StateDead, ""))
	return each(ids, func(id string) error {
		_, _, err := d.Requeue(ctx, a, id, opts...)
		return err
	})
}

// each does one bulk action to each of 1 to MaxBulk jobs: the jobs it
// did, those the engine refused (a failure each), and the error that
// stopped it, if any.
func each(ids []string, do func(id string) error) (done []string, failed []Failure, err error) {
	if len(ids) == 0 || len(ids) > MaxBulk {
		return nil, nil, invalid("ids must name 1 to %d jobs", MaxBulk)
	}
	done, failed = []string{}, []Failure{}
	for _, id := range ids {
		if err = do(id); err != nil {
			if !jobRefused(err) {
				break
			}
			failed, err = append(failed, Failure{id, err}), nil
			continue
		}
		done = append(done, id)
	}
	return done, failed, err
}

// jobRefused reports whether err is the engine's refusal of an action on
// one job, about that job.
func jobRefused(err error) bool {
	for _, e := range []error{tasks.ErrNotFound, tasks.ErrQueueNotFound, tasks.ErrInvalidState, tasks.ErrInvalid, tasks.ErrReasonRequired} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// Opened is a job as the person who opens its page may see it.
type Opened struct {
	Job *tasks.Job
	// Token is the viewer's live reservation token; "" unless they hold
	// the job.
	Token string
	// History is the job's, oldest first, and Trimmed how many of its
	// oldest entries were not kept: for supervisors, for the operator who
	// completed it, and for its holder (whose earlier attempts it shows).
	History []tasks.Entry
	Trimmed int
	// Lost says the viewer held the job but no longer does: Job is then
	// only what they may still see of it (no payload, no result), and
	// Ended, when the history shows it, is the entry that ended their
	// latest reservation.
	Lost  bool
	Ended *tasks.Entry
	// Drafts are the job's unfinished work, for supervisors and its
	// holder (Desk.Drafts).
	Drafts Drafts
}

// Open returns the job as a sees it on its page. An operator sees what
// they hold whole; any other job of a queue of theirs only as far as what
// it is (and why their reservation ended, if they held it), or whole with
// its history when they completed it; a job of another queue is not found
// for them. Supervisors (and the command line) see every job with its
// history; producers have no job page.
func (d *Desk) Open(ctx context.Context, a Actor, id string) (Opened, error) {
	switch {
	case a.is(users.Supervisor):
		j, err := d.tasks.Get(ctx, id)
		if err != nil {
			return Opened{}, err
		}
		return d.opened(ctx, j, "")
	case !a.is(users.Operator):
		return Opened{}, forbidden("only operators and supervisors open a job's page")
	}
	r, err := d.tasks.Held(ctx, id, a.Name())
	if err == nil {
		return d.opened(ctx, r.Job, r.Token)
	}
	if !errors.Is(err, tasks.ErrReservationLost) {
		return Opened{}, err
	}
	j, err := d.tasks.Get(ctx, id)
	if err != nil || !a.canWork(j.Queue) {
		return Opened{}, tasks.ErrNotFound
	}
	h, trimmed, err := j.History()
	if err != nil {
		return Opened{}, err
	}
	if j.State == tasks.StateCompleted && j.CompletedBy == a.Name() {
		return Opened{Job: j, History: h, Trimmed: trimmed}, nil
	}
	return Opened{Job: withheld(j), Lost: true, Ended: endedMine(h, a.Name())}, nil
}

// opened is the job whole, with its history and drafts, for a supervisor
// or its holder (token: theirs).
func (d *Desk) opened(ctx context.Context, j *tasks.Job, token string) (Opened, error) {
	h, trimmed, err := j.History()
	if err != nil {
		return Opened{}, err
	}
	drafts, err := d.drafts(ctx, j)
	return Opened{Job: j, Token: token, History: h, Trimmed: trimmed, Drafts: drafts}, err
}

// withheld is what an operator who no longer holds a job still sees of
// it: what it was, not its payload or result.
func withheld(j *tasks.Job) *tasks.Job {
	return &tasks.Job{ID: j.ID, Queue: j.Queue, Title: j.Title, Priority: j.Priority, State: j.State,
		Attempts: j.Attempts, MaxAttempts: j.MaxAttempts, Payload: json.RawMessage("{}")}
}

// endedMine returns the entry of h that ended me's latest reservation
// (whoever ended it), or nil if h shows none.
func endedMine(h []tasks.Entry, me string) *tasks.Entry {
	for i := len(h) - 1; i >= 0; i-- {
		if e := h[i]; e.EndsReservation() && (e.Actor == me || e.Holder == me) {
			return &h[i]
		}
	}
	return nil
}
