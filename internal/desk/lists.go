package desk

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"claimdesk/internal/audit"
	"claimdesk/internal/notify"
	"claimdesk/internal/tasks"
	"claimdesk/internal/users"
)

// Lists: the reads that list what supervisors oversee — jobs, live
// reservations, a queue's settings, counts and numbers, batches, people,
// the team, the audit log — which only supervisors (and the command line)
// may read; and an operator's own work, which each person reads of
// themselves.

// Listing says which jobs Jobs lists.
type Listing struct {
	// Queue is the queue whose jobs are listed; "": every queue's.
	Queue string
	State tasks.State
	// Filter, when not empty, keeps only the jobs that match it.
	Filter tasks.Filter
	// Descending reads the state's index from its end: finished jobs
	// newest first (tasks.Descending).
	Descending bool
	// Since and Until keep the jobs of a finished state that finished
	// between them, a zero time no bound (tasks.Finished).
	Since, Until time.Time
	// SLA, when set (with no State), lists instead the unfinished jobs at
	// risk of missing their due time, or past it (tasks.Standing).
	SLA tasks.SLA
	// Limit is the page's size (0: tasks.DefaultPageSize); Cursor is the
	// NextCursor of the page before ("": the first page).
	Limit  int
	Cursor string
}

// Jobs returns a page of the jobs the listing asks for, in the order of
// their state's index or reversed (tasks.Store.ListJobs), for a
// supervisor. With a filter, it also says how many jobs were scanned for
// the page (tasks.Store.FindJobs); without, that is 0.
func (d *Desk) Jobs(ctx context.Context, a Actor, l Listing, opts ...tasks.ListOption) (tasks.Page, int, error) {
	refused := need(a, users.Supervisor)
	if l.Queue != "" {
		refused = d.mayUse(ctx, a, l.Queue, oversee)
	}
	if refused != nil {
		return tasks.Page{}, 0, refused
	}
	if l.Descending {
		opts = append(opts, tasks.Descending)
	}
	if !l.Since.IsZero() || !l.Until.IsZero() {
		opts = append(opts, tasks.Finished(l.Since, l.Until))
	}
	if l.SLA != "" {
		opts = append(opts, tasks.Standing(l.SLA))
	}
	if l.Filter.Empty() {
		p, err := d.tasks.ListJobs(ctx, l.Queue, l.State, l.Limit, l.Cursor, opts...)
		return p, 0, err
	}
	return d.tasks.FindJobs(ctx, l.Queue, l.State, l.Filter, l.Limit, l.Cursor, opts...)
}

// ReservationsPage is how many live reservations LiveReservations answers
// at a time.
const ReservationsPage = 50

// LiveReservations returns a page of every queue's live reservations,
// soonest deadline first, ReservationsPage at a time and without
// payloads (what the supervisor's page lists), after the cursor, for a
// supervisor. The first page is read through Config.FirstReservations.
func (d *Desk) LiveReservations(ctx context.Context, a Actor, cursor string) (tasks.Page, error) {
	if err := need(a, users.Supervisor); err != nil {
		return tasks.Page{}, err
	}
	if cursor == "" {
		return d.firstReservations(ctx, d.reservationsAfter(""))
	}
	return d.reservationsAfter(cursor)(ctx)
}

// reservationsAfter reads the page of LiveReservations after the cursor.
func (d *Desk) reservationsAfter(cursor string) func(context.Context) (tasks.Page, error) {
	return func(ctx context.Context) (tasks.Page, error) {
		return d.tasks.ListReservations(ctx, "", ReservationsPage, cursor, tasks.WithoutPayloads)
	}
}

// Queue returns the named queue's settings, for a supervisor.
func (d *Desk) Queue(ctx context.Context, a Actor, name string) (tasks.Queue, error) {
	if err := need(a, users.Supervisor); err != nil {
		return tasks.Queue{}, err
	}
	return d.tasks.Queue(ctx, name)
}

// Stats returns the named queue's counts, for a supervisor.
func (d *Desk) Stats(ctx context.Context, a Actor, name string) (tasks.Stats, error) {
	if err := need(a, users.Supervisor); err != nil {
		return tasks.Stats{}, err
	}
	return d.tasks.Stats(ctx, name)
}

// Numbers returns the named queue's numbers of each minute of the last
// day (tasks.Store.Numbers), for a supervisor; tasks.ErrQueueNotFound when
// there is no such queue.
func (d *Desk) Numbers(ctx context.Context, a Actor, name string) ([]tasks.Minute, error) {
	if err := d.mayUse(ctx, a, name, oversee); err != nil {
		return nil, err
	}
	if _, err := d.tasks.Queue(ctx, name); err != nil {
		return nil, err
	}
	return d.tasks.Numbers(ctx, name)
}

// QueueNames returns the name of every queue, for a supervisor.
func (d *Desk) QueueNames(ctx context.Context, a Actor) ([]string, error) {
	if err := need(a, users.Supervisor); err != nil {
		return nil, err
	}
	return d.tasks.QueueNames(ctx)
}

// Batches returns the newest limit batches of every queue, newest first,
// for a supervisor.
func (d *Desk) Batches(ctx context.Context, a Actor, limit int) ([]*tasks.Batch, error) {
	if err := need(a, users.Supervisor); err != nil {
		return nil, err
	}
	return d.tasks.ListBatches(ctx, "", limit)
}

// People returns everyone who logs in or produces, for a supervisor.
func (d *Desk) People(ctx context.Context, a Actor) ([]users.User, error) {
	if err := need(a, users.Supervisor); err != nil {
		return nil, err
	}
	return d.users.List(ctx)
}

// PersonNamed returns the named user as they are in the store, for a
// supervisor.
func (d *Desk) PersonNamed(ctx context.Context, a Actor, name string) (users.User, error) {
	if err := need(a, users.Supervisor); err != nil {
		return users.User{}, err
	}
	return d.users.Reload(ctx, name)
}

// AuditLog returns at most limit entries of the audit log that the filter
// keeps, newest first, older than the cursor ("": from the newest), and
// the cursor of the next page ("" at the end), for a supervisor.
func (d *Desk) AuditLog(ctx context.Context, a Actor, cursor string, limit int, f audit.Filter) ([]audit.Entry, string, error) {
	if err := need(a, users.Supervisor); err != nil {
		return nil, "", err
	}
	return d.audit.List(ctx, cursor, limit, f)
}

// MyWork is what an operator's home lists: their queues, what they hold
// and how their latest reservations ended.
type MyWork struct {
	// Queues are the queues the person may see, with their counts.
	Queues []tasks.QueueStats
	// Holding is what they hold, in any queue, soonest deadline first.
	Holding []*tasks.Job
	// Recent is their latest ended reservations, newest first.
	Recent []notify.Work
	// Results are the results of the jobs of Recent they completed, by
	// job id (those still kept).
	Results map[string]json.RawMessage
	// For is what they may claim in each of their queues, and Assigned
	// the jobs waiting for them by name (assigned to them, or preferring
	// them), in every queue, best first per queue.
	For      map[string]tasks.ForPerson
	Assigned []*tasks.Job
}

// MyWork returns the acting person's own work; the command line holds
// none. What they hold is looked for in every queue: a job of a queue
// taken from them since they claimed it is still theirs to finish.
func (d *Desk) MyWork(ctx context.Context, a Actor) (MyWork, error) {
	if a.commandLine {
		return MyWork{}, forbidden("the command line holds no work")
	}
	all, err := d.queues(ctx)
	if err != nil {
		return MyWork{}, err
	}
	w := MyWork{Queues: visible(a, all)}
	names := make([]string, len(all))
	for i, q := range all {
		names[i] = q.Queue.Name
	}
	recent := make(chan error, 1)
	go func() {
		var err error
		w.Recent, err = notify.RecentWork(ctx, d.rdb, a.Name())
		recent <- err
	}()
	w.Holding, w.For, err = d.tasks.Mine(ctx, a.Name(), a.user.Skills, names)
	for _, q := range w.Queues {
		w.Assigned = append(w.Assigned, w.For[q.Queue.Name].Mine...)
	}
	if err = cmp.Or(<-recent, err); err != nil {
		return w, err
	}
	var done []string
	for _, r := range w.Recent {
		if r.Action == tasks.ActionCompleted {
			done = append(done, r.JobID)
		}
	}
	if len(done) > 0 {
		w.Results, err = d.tasks.Results(ctx, done)
	}
	return w, err
}

// Status is where a person is, as the Team page and GET /api/v1/team say
// it.
type Status string

// The statuses, in the Team page's order.
const (
	// Online: a page open and working (holding a job, or changed one
	// within IdleAfter).
	Online Status = "online"
	// Idle: a page open, and nothing done for IdleAfter.
	Idle Status = "idle"
	// Away: said so themselves.
	Away Status = "away"
	// Offline: no page open, or disabled.
	Offline Status = "offline"
)

// Order ranks the statuses for the Team page.
func (s Status) Order() int {
	switch s {
	case Online:
		return 0
	case Idle:
		return 1
	case Away:
		return 2
	}
	return 3
}

// IdleAfter is how long someone with a page open, holding nothing, may
// go without changing a job before they are idle.
const IdleAfter = 5 * time.Minute

// Member is one person on the Team page.
type Member struct {
	User   users.User
	Status Status
	// Held is what they hold, longest held first.
	Held       []*tasks.Job
	LastAction time.Time
	// Waiting counts the jobs waiting for them by name (assigned to them,
	// or preferring them), in every queue.
	Waiting int64
}

// here reports whether the member has a page open: online or idle.
func (m Member) here() bool { return m.Status == Online || m.Status == Idle }

// Team is everyone who works jobs, and where they are.
type Team struct {
	// Members are online first, then idle, away and offline, each by name.
	Members []Member
	// More is set when more reservations are live than Members list.
	More bool
	Now  time.Time
	// Stuck are the lines of routed jobs that nobody here may take: jobs
	// waiting for someone without a page open, or for skills that nobody
	// with a page open who works the queue has.
	Stuck []tasks.Line
}

// Worker is one person's numbers on the Team page.
type Worker struct {
	User  users.User
	Tally tasks.PersonTally
}

// TeamWork is what everyone's reservations came to, today and in the
// last week, most completed first.
type TeamWork struct {
	Workers []Worker
}

// Team returns, for a supervisor, what the Team page shows of the
// operators who may work (supervisors, who hold no jobs, producers and
// disabled people are left out): where they are (presence, when asked)
// and what their reservations came to (work, when asked), from one read
// of the people.
func (d *Desk) Team(ctx context.Context, a Actor, presence, work bool) (t Team, w TeamWork, err error) {
	if err := need(a, users.Supervisor); err != nil {
		return t, w, err
	}
	people, err := d.users.List(ctx)
	if err != nil {
		return t, w, err
	}
	people = slices.DeleteFunc(people, func(u users.User) bool { return u.Role != users.Operator || u.Disabled })
	if presence {
		if t, err = d.team(ctx, people); err != nil {
			return t, w, err
		}
	}
	if work {
		w, err = d.teamWork(ctx, people)
	}
	return t, w, err
}

// team gathers where each of the people is, what they hold and since when.
func (d *Desk) team(ctx context.Context, people []users.User) (Team, error) {
	seen, err := d.presence.Everyone(ctx)
	if err != nil {
		return Team{}, err
	}
	held, err := d.tasks.ListReservations(ctx, "", tasks.MaxPageSize, "", tasks.WithoutPayloads)
	if err != nil {
		return Team{}, err
	}
	byHolder := map[string][]*tasks.Job{}
	for _, j := range held.Jobs {
		byHolder[j.ReservedBy] = append(byHolder[j.ReservedBy], j)
	}
	now := time.Now()
	t := Team{Now: now, More: held.NextCursor != ""}
	for _, u := range people {
		m := Member{User: u, Held: byHolder[u.Name], LastAction: seen[u.Name].LastAction}
		slices.SortFunc(m.Held, func(a, b *tasks.Job) int { return a.ReservedAt.Compare(*b.ReservedAt) })
		switch open := seen[u.Name].Open(now); {
		case u.Disabled || !open:
			m.Status = Offline
		case u.Away:
			m.Status = Away
		case len(m.Held) > 0 || now.Sub(m.LastAction) < IdleAfter:
			m.Status = Online
		default:
			m.Status = Idle
		}
		t.Members = append(t.Members, m)
	}
	slices.SortStableFunc(t.Members, func(a, b Member) int {
		return cmp.Or(cmp.Compare(a.Status.Order(), b.Status.Order()), strings.Compare(a.User.Name, b.User.Name))
	})
	return t, d.routedWork(ctx, &t)
}

// routedWork counts the jobs waiting for each member by name, and finds
// the lines of routed jobs that nobody here may take (Team.Stuck).
func (d *Desk) routedWork(ctx context.Context, t *Team) error {
	queues, err := d.tasks.QueueNames(ctx)
	if err != nil {
		return err
	}
	lines, err := d.tasks.Lines(ctx, queues)
	if err != nil {
		return err
	}
	member := map[string]*Member{}
	for i := range t.Members {
		member[t.Members[i].User.Name] = &t.Members[i]
	}
	for _, l := range lines {
		taken := false
		if m := member[l.Person]; l.Person != "" && m != nil {
			m.Waiting += l.Waiting
			taken = m.here() && m.User.CanWork(l.Queue)
		}
		if l.Person == "" {
			taken = slices.ContainsFunc(t.Members, func(m Member) bool {
				return m.here() && m.User.CanWork(l.Queue) && m.User.Skills.Covers(l.Skills)
			})
		}
		if !taken {
			t.Stuck = append(t.Stuck, l)
		}
	}
	slices.SortFunc(t.Stuck, func(a, b tasks.Line) int {
		return cmp.Or(cmp.Compare(b.Waiting, a.Waiting), strings.Compare(a.Queue, b.Queue),
			strings.Compare(a.Person, b.Person), strings.Compare(a.Skills.String(), b.Skills.String()))
	})
	return nil
}

// teamWork gathers what the reservations of each of the people came to
// today and in the last week, across all queues.
func (d *Desk) teamWork(ctx context.Context, people []users.User) (TeamWork, error) {
	queues, err := d.tasks.QueueNames(ctx)
	if err != nil {
		return TeamWork{}, err
	}
	tallies, err := d.tasks.Tallies(ctx, queues)
	if err != nil {
		return TeamWork{}, err
	}
	var w TeamWork
	for _, u := range people {
		wk := Worker{User: u}
		if t := tallies[u.Name]; t != nil {
			wk.Tally = *t
		}
		w.Workers = append(w.Workers, wk)
	}
	slices.SortStableFunc(w.Workers, func(a, b Worker) int {
		return cmp.Or(cmp.Compare(b.Tally.Window.Completed, a.Tally.Window.Completed),
			cmp.Compare(b.Tally.Window.Ended(), a.Tally.Window.Ended()), strings.Compare(a.User.Name, b.User.Name))
	})
	return w, nil
}
