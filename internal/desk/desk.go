// Package desk is every thing a person or a system does at claimdesk:
// enqueue, claim, complete, give back, skip, more time, can't be done,
// cancel, requeue, batches, queues and their settings, people, their
// grants and tokens, away. Each is one method of Desk, which applies who
// may do it, calls the engine (tasks.Store) or the people (users.Store),
// writes the audit entry and tells the other instances and this
// instance's caches what changed. So are the reads, with who may read
// them: a job, its history, a batch, and the listings of lists.go. The HTTP
// API, the pages and the command line only translate to and from these
// methods.
//
// A Desk also has the Store record what the Team page and "My recent
// work" need of every change that ends a reservation or that a person
// makes (cron's expiries included), on the change's path, before it is
// answered (recent.go).
//
// Refusals are errors: the engine's and the people's sentinel errors, and
// ErrForbidden and ErrInvalid for the rules kept here.
package desk

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"claimdesk/internal/audit"
	"claimdesk/internal/durable"
	"claimdesk/internal/notify"
	"claimdesk/internal/storeerr"
	"claimdesk/internal/tasks"
	"claimdesk/internal/users"
	"claimdesk/internal/webhooks"

	"github.com/redis/go-redis/v9"
)

// Config is what a Desk works with. Tasks, Users, Bus, Log and Redis are
// required; the hooks are optional.
type Config struct {
	Redis redis.UniversalClient
	Tasks *tasks.Store
	Users *users.Store
	// Bus tells every instance of a change of a queue's settings.
	Bus *notify.Bus
	Log *slog.Logger
	// Queues reads every queue with its counts; nil: from the store each
	// time. A server passes its per-instance cache.
	Queues func(ctx context.Context) ([]tasks.QueueStats, error)
	// FirstReservations reads the first page of LiveReservations by
	// calling read, or answers what an earlier call read; nil: read each
	// time. A server passes its per-instance cache.
	FirstReservations func(ctx context.Context, read func(context.Context) (tasks.Page, error)) (tasks.Page, error)
	// Presence says who has a page open, for the Team page; nil: the
	// presence kept in Redis.
	Presence *notify.Presence
	// SettingsChanged is told, right after the change, that the settings
	// of the queue changed here (created, changed, paused, resumed or
	// deleted); nil: nobody is. Other instances learn it from the bus.
	SettingsChanged func(queue string)
	// Webhooks is the registry of webhooks; nil: one on Redis whose
	// secrets are stored unsealed, with the default egress.
	Webhooks *webhooks.Store
	// WebhooksChanged is told, right after the change, that the registry
	// changed here; nil: nobody is. Other instances' deliverers read it
	// anew every few seconds.
	WebhooksChanged func(ctx context.Context)
}

// Desk is where everything a person or a system does is done.
type Desk struct {
	tasks *tasks.Store
	users *users.Store
	audit *audit.Log
	bus   *notify.Bus
	log   *slog.Logger
	rdb   redis.UniversalClient
	// unavailable logs, once per burst, the recent work the store's
	// passing troubles kept from being written.
	unavailable *storeerr.Burst

	queues            func(ctx context.Context) ([]tasks.QueueStats, error)
	firstReservations func(ctx context.Context, read func(context.Context) (tasks.Page, error)) (tasks.Page, error)
	presence          *notify.Presence
	settingsChanged   func(queue string)
	hooks             *webhooks.Store
	webhooksChanged   func(ctx context.Context)
}

// New returns the desk over cfg's stores. It has cfg.Tasks record the
// recent work and the last action of every change: make one Desk per
// tasks.Store.
func New(cfg Config) *Desk {
	d := &Desk{tasks: cfg.Tasks, users: cfg.Users, audit: audit.New(cfg.Redis), bus: cfg.Bus, log: cfg.Log, rdb: cfg.Redis,
		unavailable: storeerr.NewBurst(cfg.Log, "changes not in recent work"),
		presence:    cmp.Or(cfg.Presence, notify.NewPresence(cfg.Redis, cfg.Log)),
		queues:      cfg.Queues, firstReservations: cfg.FirstReservations, settingsChanged: cfg.SettingsChanged,
		hooks: cfg.Webhooks, webhooksChanged: cfg.WebhooksChanged}
	if d.hooks == nil {
		plain, _ := webhooks.NewSealer(nil)
		d.hooks = webhooks.NewStore(cfg.Redis, cfg.Tasks, plain, &webhooks.Egress{}, durable.Policy{})
	}
	if d.webhooksChanged == nil {
		d.webhooksChanged = func(context.Context) {}
	}
	if d.queues == nil {
		d.queues = cfg.Tasks.Queues
	}
	if d.firstReservations == nil {
		d.firstReservations = func(ctx context.Context, read func(context.Context) (tasks.Page, error)) (tasks.Page, error) {
			return read(ctx)
		}
	}
	if d.settingsChanged == nil {
		d.settingsChanged = func(string) {}
	}
	cfg.Tasks.Observe(d.recordWork)
	return d
}

// Actor is who acts: a person, or the command line (CommandLine), which
// may do every administrative action and holds no job.
type Actor struct {
	user        users.User
	commandLine bool
}

// Person is the actor u.
func Person(u users.User) Actor { return Actor{user: u} }

// CommandLine is the actor of the administrative commands: audit.CommandLine
// in the audit log.
var CommandLine = Actor{commandLine: true}

// Name is the actor's name, in the audit log and the jobs' histories.
func (a Actor) Name() string {
	if a.commandLine {
		return audit.CommandLine
	}
	return a.user.Name
}

// is reports whether the actor has one of the roles; the command line
// counts as a supervisor.
func (a Actor) is(roles ...users.Role) bool {
	for _, r := range roles {
		if a.user.Role == r || a.commandLine && r == users.Supervisor {
			return true
		}
	}
	return false
}

// canSee reports whether the actor may read the queue's jobs and counts.
func (a Actor) canSee(queue string) bool { return a.commandLine || a.user.CanSee(queue) }

// canWork reports whether the actor may claim from the queue.
func (a Actor) canWork(queue string) bool { return a.user.CanWork(queue) }

// The refusals of the rules kept here: each is a *Refusal that matches
// one of them with errors.Is.
var (
	// ErrForbidden means the actor may not do this (their role, their
	// grants, or themselves).
	ErrForbidden = errors.New("forbidden")
	// ErrInvalid means the request itself is wrong, whoever sends it.
	ErrInvalid = errors.New("invalid")
)

// Refusal is a refusal of the desk's, in words for the person refused.
type Refusal struct {
	kind error
	msg  string
}

func (r *Refusal) Error() string { return r.msg }

// Is reports whether target is the sentinel the refusal belongs to.
func (r *Refusal) Is(target error) bool { return target == r.kind }

func forbidden(format string, args ...any) error {
	return &Refusal{ErrForbidden, fmt.Sprintf(format, args...)}
}

func invalid(format string, args ...any) error {
	return &Refusal{ErrInvalid, fmt.Sprintf(format, args...)}
}

// errRole refuses an actor whose role does not allow the action.
var errRole = forbidden("your role does not allow this")

// need refuses an actor who has none of the roles.
func need(a Actor, roles ...users.Role) error {
	if !a.is(roles...) {
		return errRole
	}
	return nil
}

// A use of a queue, and the grant it needs.
type use int

const (
	// produce: put work into the queue (jobs, batches), for its producers
	// and supervisors.
	produce use = iota
	// work: claim from the queue, for the operators granted it.
	work
	// oversee: change the queue, read its jobs and numbers, requeue its
	// dead jobs, for supervisors.
	oversee
)

// grantMissing refuses a the queue for the use, in words that name the
// queue and the role or grant missing; nil when a may.
func grantMissing(a Actor, queue string, u use) error {
	var verb string
	var roles []users.Role
	switch u {
	case produce:
		verb, roles = "putting work into", []users.Role{users.Producer, users.Supervisor}
	case work:
		verb, roles = "claiming from", []users.Role{users.Operator}
	default:
		verb, roles = "supervising", []users.Role{users.Supervisor}
	}
	if !a.is(roles...) {
		names := make([]string, len(roles))
		for i, r := range roles {
			names[i] = string(r)
		}
		return forbidden("%s queue %s needs the %s role, which %s does not have", verb, queue, strings.Join(names, " or "), a.Name())
	}
	if u == produce && !a.canSee(queue) || u == work && !a.canWork(queue) {
		return forbidden("queue %s is not granted to %s", queue, a.Name())
	}
	return nil
}

// mayUse refuses a the queue for the use: tasks.ErrQueueNotFound when no
// queue has the name, whoever asks (queue names are no secret: a refusal
// would tell the same), else grantMissing's refusal. The queue is looked
// up only to refuse: what a may do, the engine finds the queue for.
func (d *Desk) mayUse(ctx context.Context, a Actor, queue string, u use) error {
	refused := grantMissing(a, queue, u)
	if refused == nil {
		return nil
	}
	if _, err := d.tasks.Queue(ctx, queue); err != nil {
		return err
	}
	return refused
}

// record adds what the actor did to the audit log. A failure to record is
// logged as an error, each time (the command line logs errors only): the
// action itself stands.
func (d *Desk) record(ctx context.Context, a Actor, action, target, detail string) {
	if err := d.audit.Record(context.WithoutCancel(ctx), a.Name(), action, target, detail); err != nil {
		d.log.Error("action not recorded in the audit log", "err", err, "actor", a.Name(), "action", action, "target", target)
	}
}

// trouble logs what the desk failed to write after a change that stands:
// the store's passing troubles once per burst, anything else as an error.
func (d *Desk) trouble(msg string, err error, args ...any) {
	if storeerr.Transient(err) {
		d.unavailable.Add(msg, err, args...)
		return
	}
	d.log.Error(msg, append([]any{"err", err}, args...)...)
}
