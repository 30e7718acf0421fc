package desk

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"claimdesk/internal/audit"
	"claimdesk/internal/tasks"
	"claimdesk/internal/users"
	"claimdesk/internal/webhooks"
)

// Webhooks: producers register their own endpoints, for their own queues;
// supervisors (and the command line) see and change every endpoint, for
// any queue. Each change turns the outboxes on or off as the endpoints
// now need (webhooks.Store.Sync), before it is answered, so an endpoint
// receives the event of every change after its registration.

// mayHook refuses an actor who may not manage the endpoint: a producer
// may manage their own, a supervisor any. Someone else's is not found,
// so its existence does not show.
func mayHook(a Actor, e webhooks.Endpoint) error {
	if a.is(users.Supervisor) || a.is(users.Producer) && e.Owner == a.Name() {
		return nil
	}
	return webhooks.ErrNotFound
}

// checkHookQueues refuses queues that do not exist, whoever asks, or that
// a producer may not see, naming the queue not granted.
func (d *Desk) checkHookQueues(ctx context.Context, a Actor, queues []string) error {
	if len(queues) == 0 && a.is(users.Producer) && len(a.user.Queues) > 0 {
		return invalid("name the queues whose events you want")
	}
	for _, q := range queues {
		// A queue that does not exist is told as such, whoever asks (as
		// mayUse does; here a field of the body, refused at the field).
		if _, err := d.tasks.Queue(ctx, q); err != nil {
			if errors.Is(err, tasks.ErrQueueNotFound) {
				return &webhooks.InvalidError{Field: "queues", Message: fmt.Sprintf("no queue is named %s", q)}
			}
			return err
		}
		if !a.canSee(q) {
			return forbidden("queue %s is not granted to %s", q, a.Name())
		}
	}
	return nil
}

// Webhooks lists the endpoints a may manage.
func (d *Desk) Webhooks(ctx context.Context, a Actor) ([]webhooks.Endpoint, error) {
	if err := need(a, users.Producer, users.Supervisor); err != nil {
		return nil, err
	}
	all, err := d.hooks.List(ctx)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(all, func(e webhooks.Endpoint) bool { return mayHook(a, e) != nil }), nil
}

// WebhookSecretsSealed reports whether the endpoints' secrets are sealed
// at rest: claimdesk runs with a key to seal them.
func (d *Desk) WebhookSecretsSealed() bool { return d.hooks.Sealed() }

// Webhook returns the endpoint, if a may manage it.
func (d *Desk) Webhook(ctx context.Context, a Actor, id string) (webhooks.Endpoint, error) {
	if err := need(a, users.Producer, users.Supervisor); err != nil {
		return webhooks.Endpoint{}, err
	}
	e, err := d.hooks.Get(ctx, id)
	if err != nil {
		return webhooks.Endpoint{}, err
	}
	return e, mayHook(a, e)
}

// AddWebhook registers an endpoint for a and returns it with its secret,
// shown this once. A producer's endpoint receives the events of the
// queues it names, all of them the producer's; naming none, those the
// producer is granted (every queue, for a producer granted every queue).
// A supervisor's naming none receives every queue's.
func (d *Desk) AddWebhook(ctx context.Context, a Actor, n webhooks.NewEndpoint) (webhooks.Endpoint, string, error) {
	if err := need(a, users.Producer, users.Supervisor); err != nil {
		return webhooks.Endpoint{}, "", err
	}
	if len(n.Queues) == 0 && a.is(users.Producer) {
		n.Queues = slices.Clone(a.user.Queues)
	}
	if err := d.checkHookQueues(ctx, a, n.Queues); err != nil {
		return webhooks.Endpoint{}, "", err
	}
	n.Owner = a.Name()
	e, secret, err := d.hooks.Create(ctx, n)
	if err != nil {
		return webhooks.Endpoint{}, "", err
	}
	d.hooksChanged(ctx)
	d.record(ctx, a, audit.WebhookCreated, e.ID, hookDetail(e))
	return e, secret, nil
}

// ChangeWebhook changes what the patch gives of the endpoint: its URL,
// events, queues, or whether it is enabled.
func (d *Desk) ChangeWebhook(ctx context.Context, a Actor, id string, p webhooks.Patch) (webhooks.Endpoint, error) {
	if _, err := d.Webhook(ctx, a, id); err != nil {
		return webhooks.Endpoint{}, err
	}
	if p.Queues != nil {
		if len(*p.Queues) == 0 && a.is(users.Producer) {
			q := slices.Clone(a.user.Queues)
			p.Queues = &q
		}
		if err := d.checkHookQueues(ctx, a, *p.Queues); err != nil {
			return webhooks.Endpoint{}, err
		}
	}
	was, e, err := d.hooks.Update(ctx, id, p)
	if err != nil {
		return webhooks.Endpoint{}, err
	}
	d.hooksChanged(ctx)
	d.record(ctx, a, audit.WebhookChanged, e.ID, hookChange(was, e))
	return e, nil
}

// RemoveWebhook removes the endpoint and its deliveries.
func (d *Desk) RemoveWebhook(ctx context.Context, a Actor, id string) error {
	if _, err := d.Webhook(ctx, a, id); err != nil {
		return err
	}
	e, err := d.hooks.Delete(ctx, id)
	if err != nil {
		return err
	}
	d.hooksChanged(ctx)
	d.record(ctx, a, audit.WebhookDeleted, id, hookDetail(e))
	return nil
}

// RotateWebhook gives the endpoint a new secret, shown this once; the
// one before keeps signing beside it for webhooks.RotationOverlap.
func (d *Desk) RotateWebhook(ctx context.Context, a Actor, id string) (webhooks.Endpoint, string, error) {
	if _, err := d.Webhook(ctx, a, id); err != nil {
		return webhooks.Endpoint{}, "", err
	}
	e, secret, err := d.hooks.Rotate(ctx, id)
	if err != nil {
		return webhooks.Endpoint{}, "", err
	}
	d.hooksChanged(ctx)
	d.record(ctx, a, audit.WebhookRotated, id, "previous secret signs until "+e.PreviousSecretUntil.Format("2006-01-02 15:04 MST"))
	return e, secret, nil
}

// WebhookDeliveries returns the endpoint's latest deliveries, newest
// first: at most limit.
func (d *Desk) WebhookDeliveries(ctx context.Context, a Actor, id string, limit int) ([]webhooks.Delivery, error) {
	if _, err := d.Webhook(ctx, a, id); err != nil {
		return nil, err
	}
	return d.hooks.Deliveries(ctx, id, limit)
}

// ReplayDelivery makes the endpoint's delivery of the event again, from
// its first attempt, whatever became of it.
func (d *Desk) ReplayDelivery(ctx context.Context, a Actor, id, event string) (webhooks.Delivery, error) {
	if _, err := d.Webhook(ctx, a, id); err != nil {
		return webhooks.Delivery{}, err
	}
	del, err := d.hooks.Replay(ctx, id, event)
	if err != nil {
		return webhooks.Delivery{}, err
	}
	d.hooksChanged(ctx)
	d.record(ctx, a, audit.WebhookReplayed, id, "event "+event)
	return del, nil
}

// hooksChanged turns the outboxes on and off as the endpoints now need,
// and tells this instance's deliverer. The change stands if that fails:
// it is logged, and the deliverers' next look at the registry mends it.
func (d *Desk) hooksChanged(ctx context.Context) {
	if err := d.hooks.Sync(context.WithoutCancel(ctx)); err != nil {
		d.trouble("outboxes not turned on or off after a change of the webhooks", err)
	}
	d.webhooksChanged(ctx)
}

// MayReceive returns who may receive what, for the deliverers, which ask
// it of every event: an endpoint of owner may receive the events of the
// queue when its owner is a supervisor, the command line, or a producer
// not disabled who may see the queue.
func MayReceive(people *users.Store) func(ctx context.Context, owner, queue string) bool {
	return func(ctx context.Context, owner, queue string) bool {
		if owner == audit.CommandLine {
			return true
		}
		u, err := people.Get(ctx, owner)
		if err != nil {
			return false
		}
		return !u.Disabled && (u.Role == users.Supervisor || u.Role == users.Producer && u.CanSee(queue))
	}
}

// hookDetail is an endpoint as the audit log tells it.
func hookDetail(e webhooks.Endpoint) string {
	return fmt.Sprintf("url %s, events %s, queues %s", e.URL, e.EventList(), e.QueueList())
}

// hookChange is what a change of an endpoint changed, as the audit log
// tells it.
func hookChange(was, now webhooks.Endpoint) string {
	var parts []string
	if was.URL != now.URL {
		parts = append(parts, "url "+was.URL+" → "+now.URL)
	}
	if was.EventList() != now.EventList() {
		parts = append(parts, "events "+was.EventList()+" → "+now.EventList())
	}
	if was.QueueList() != now.QueueList() {
		parts = append(parts, "queues "+was.QueueList()+" → "+now.QueueList())
	}
	if was.Enabled != now.Enabled {
		parts = append(parts, fmt.Sprintf("enabled %t → %t", was.Enabled, now.Enabled))
	}
	if len(parts) == 0 {
		return "nothing changed"
	}
	return strings.Join(parts, "; ")
}
