package desk_test

import (
	"errors"
	"slices"
	"testing"

	"claimdesk/internal/audit"
	"claimdesk/internal/desk"
	"claimdesk/internal/tasks"
	"claimdesk/internal/users"
	"claimdesk/internal/webhooks"
)

// hookURL is a public address: the desk's default egress takes it without
// asking DNS, and nothing here delivers to it.
const hookURL = "https://93.184.215.14/hook"

// addHook registers an endpoint as a, for the queues, failing the test on
// error.
func (f *fixture) addHook(a desk.Actor, queues ...string) webhooks.Endpoint {
	f.t.Helper()
	e, secret, err := f.desk.AddWebhook(f.ctx, a, webhooks.NewEndpoint{URL: hookURL, Events: tasks.EventTypes, Queues: queues})
	if err != nil || secret == "" {
		f.t.Fatalf("AddWebhook as %s: %v", a.Name(), err)
	}
	f.t.Cleanup(func() { _ = f.desk.RemoveWebhook(f.ctx, desk.CommandLine, e.ID) })
	return e
}

// outboxOn reports whether the queue's outbox is on.
func (f *fixture) outboxOn(queue string) bool {
	f.t.Helper()
	st, err := f.tasks.Outbox(f.ctx, queue)
	if err != nil {
		f.t.Fatal(err)
	}
	return st.On
}

// A producer registers endpoints for their own queues (by default, those
// they are granted); a supervisor for any, or every queue; others may
// not. Registration turns the queue's outbox on and is audited.
func TestAddWebhook(t *testing.T) {
	f := newFixture(t)
	if f.outboxOn(f.queue) {
		t.Fatal("a new queue's outbox is on")
	}
	e := f.addHook(desk.Person(f.producer))
	if !slices.Equal(e.Queues, []string{f.queue}) || e.Owner != f.producer.Name || !e.Enabled {
		t.Fatalf("producer's endpoint %+v", e)
	}
	if !f.outboxOn(f.queue) {
		t.Fatal("registering left the queue's outbox off")
	}
	f.audited(e.ID, audit.WebhookCreated, f.producer.Name,
		"url "+hookURL+", events job.completed,job.dead,job.canceled,batch.finished,job.sla_breached, queues "+f.queue)
	another := f.queue + "-another"
	if _, err := f.tasks.PutQueue(f.ctx, tasks.Queue{Name: another}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		who    desk.Actor
		queues []string
		want   error
	}{
		{"an operator", desk.Person(f.op), nil, desk.ErrForbidden},
		{"a producer, another's queue", desk.Person(f.producer), []string{another}, desk.ErrForbidden},
		{"a producer, no such queue", desk.Person(f.producer), []string{f.queue + "-none"}, nil},
		{"a supervisor, no such queue", desk.Person(f.super), []string{f.queue + "-none"}, nil},
	} {
		_, _, err := f.desk.AddWebhook(f.ctx, c.who, webhooks.NewEndpoint{URL: hookURL, Events: tasks.EventTypes, Queues: c.queues})
		var inv *webhooks.InvalidError
		if c.want == nil && !errors.As(err, &inv) || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	every := f.addHook(desk.Person(f.super))
	if len(every.Queues) != 0 {
		t.Fatalf("supervisor's endpoint naming no queue: %+v", every)
	}
	// An endpoint of every queue hears of a queue made after it.
	made, err := f.desk.CreateQueue(f.ctx, desk.Person(f.super), tasks.Queue{Name: f.queue + "-later"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if !f.outboxOn(made.Name) {
		t.Fatal("a queue made after an endpoint of every queue has its outbox off")
	}
}

// Only its owner and supervisors see and manage an endpoint: to anyone
// else it is not found.
func TestWebhookOwnership(t *testing.T) {
	f := newFixture(t)
	e := f.addHook(desk.Person(f.producer))
	paused := false
	for _, who := range []desk.Actor{desk.Person(f.stranger), desk.Person(f.person(users.Producer, f.queue))} {
		if _, err := f.desk.Webhook(f.ctx, who, e.ID); !errors.Is(err, webhooks.ErrNotFound) {
			t.Errorf("%s reads another's endpoint: %v", who.Name(), err)
		}
		if _, err := f.desk.ChangeWebhook(f.ctx, who, e.ID, webhooks.Patch{Enabled: &paused}); !errors.Is(err, webhooks.ErrNotFound) {
			t.Errorf("%s changes another's endpoint: %v", who.Name(), err)
		}
		if _, _, err := f.desk.RotateWebhook(f.ctx, who, e.ID); !errors.Is(err, webhooks.ErrNotFound) {
			t.Errorf("%s rotates another's endpoint: %v", who.Name(), err)
		}
		if _, err := f.desk.ReplayDelivery(f.ctx, who, e.ID, "evt_x"); !errors.Is(err, webhooks.ErrNotFound) {
			t.Errorf("%s replays another's delivery: %v", who.Name(), err)
		}
		if err := f.desk.RemoveWebhook(f.ctx, who, e.ID); !errors.Is(err, webhooks.ErrNotFound) {
			t.Errorf("%s removes another's endpoint: %v", who.Name(), err)
		}
		list, err := f.desk.Webhooks(f.ctx, who)
		if err != nil || slices.ContainsFunc(list, func(o webhooks.Endpoint) bool { return o.ID == e.ID }) {
			t.Errorf("%s lists another's endpoint: %v", who.Name(), err)
		}
	}
	if _, err := f.desk.Webhooks(f.ctx, desk.Person(f.op)); !errors.Is(err, desk.ErrForbidden) {
		t.Errorf("an operator lists endpoints: %v", err)
	}
	for _, who := range []desk.Actor{desk.Person(f.producer), desk.Person(f.super), desk.CommandLine} {
		list, err := f.desk.Webhooks(f.ctx, who)
		if err != nil || !slices.ContainsFunc(list, func(o webhooks.Endpoint) bool { return o.ID == e.ID }) {
			t.Errorf("%s does not list the endpoint: %v", who.Name(), err)
		}
	}
}

// Pausing, resuming, rotating, replaying and removing, each audited;
// removing the last endpoint of a queue turns its outbox off.
func TestChangeWebhook(t *testing.T) {
	f := newFixture(t)
	owner := desk.Person(f.producer)
	e := f.addHook(owner)
	off := false
	got, err := f.desk.ChangeWebhook(f.ctx, owner, e.ID, webhooks.Patch{Enabled: &off})
	if err != nil || got.Enabled || got.DisabledReason != webhooks.DisabledPaused {
		t.Fatalf("paused: %+v, %v", got, err)
	}
	f.audited(e.ID, audit.WebhookChanged, f.producer.Name, "enabled true → false")
	other := []string{f.queue + "-another"}
	if _, err := f.tasks.PutQueue(f.ctx, tasks.Queue{Name: other[0]}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.desk.ChangeWebhook(f.ctx, owner, e.ID, webhooks.Patch{Queues: &other}); !errors.Is(err, desk.ErrForbidden) {
		t.Fatalf("a producer moved an endpoint to another's queue: %v", err)
	}
	_, secret, err := f.desk.RotateWebhook(f.ctx, owner, e.ID)
	if err != nil || secret == "" {
		t.Fatalf("rotate: %v", err)
	}
	if es := f.audits(e.ID); len(es) == 0 || es[0].Action != audit.WebhookRotated {
		t.Fatalf("rotation audited as %+v", es)
	}
	if _, err := f.desk.ReplayDelivery(f.ctx, owner, e.ID, "evt_none"); !errors.Is(err, webhooks.ErrDeliveryNotFound) {
		t.Fatalf("replay of no delivery: %v", err)
	}
	if err := f.desk.RemoveWebhook(f.ctx, owner, e.ID); err != nil {
		t.Fatal(err)
	}
	f.audited(e.ID, audit.WebhookDeleted, f.producer.Name,
		"url "+hookURL+", events job.completed,job.dead,job.canceled,batch.finished,job.sla_breached, queues "+f.queue)
	if _, err := f.desk.Webhook(f.ctx, desk.CommandLine, e.ID); !errors.Is(err, webhooks.ErrNotFound) {
		t.Fatalf("removed endpoint: %v", err)
	}
}

// An endpoint receives a queue's events only while its owner may see the
// queue.
func TestMayReceive(t *testing.T) {
	f := newFixture(t)
	may := desk.MayReceive(f.users)
	granted := f.store(f.person(users.Producer, f.queue))
	disabled := f.store(f.person(users.Producer, f.queue))
	if err := f.users.Disable(f.ctx, disabled.Name); err != nil {
		t.Fatal(err)
	}
	super := f.store(f.person(users.Supervisor))
	op := f.store(f.person(users.Operator, f.queue))
	for _, c := range []struct {
		owner string
		want  bool
	}{
		{granted.Name, true}, {disabled.Name, false}, {super.Name, true}, {op.Name, false},
		{audit.CommandLine, true}, {"nobody-at-all", false},
	} {
		if got := may(f.ctx, c.owner, f.queue); got != c.want {
			t.Errorf("MayReceive(%s) = %t, want %t", c.owner, got, c.want)
		}
	}
	if may(f.ctx, granted.Name, "elsewhere") {
		t.Error("a producer's endpoint receives another queue's events")
	}
}
