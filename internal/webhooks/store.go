package webhooks

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"claimdesk/internal/durable"
	"claimdesk/internal/keys"
	"claimdesk/internal/tasks"

	"github.com/redis/go-redis/v9"
)

// Limits of the registry and of each endpoint's deliveries.
const (
	// MaxPerOwner is how many endpoints one person may register.
	MaxPerOwner = 20
	// MaxURL is the longest URL an endpoint may have.
	MaxURL = 2048
	// Backlog is how many deliveries one endpoint may have still to make:
	// beyond it (an endpoint paused or failing for long), the oldest is
	// dropped, counted in the endpoint's health, and stays in its log,
	// replayable.
	Backlog = 10_000
	// Keep is how many finished deliveries one endpoint keeps in its log.
	Keep = 1000
	// RotationOverlap is how long a rotated-out secret keeps signing
	// beside the new one.
	RotationOverlap = 24 * time.Hour
)

// Why an endpoint is disabled.
const (
	// DisabledPaused: a person paused it.
	DisabledPaused = "paused"
	// DisabledGone: it answered 410 Gone.
	DisabledGone = "gone"
	// DisabledFailing: every attempt failed for FailingLimit.
	DisabledFailing = "failing"
)

// FailingLimit is how long an endpoint's attempts may all fail before it
// is disabled.
const FailingLimit = 5 * 24 * time.Hour

// Errors of the registry.
var (
	ErrNotFound = errors.New("no such webhook")
	// ErrDeliveryNotFound: the endpoint has no delivery of that event.
	ErrDeliveryNotFound = errors.New("no such delivery")
	// ErrTooMany: the owner has MaxPerOwner endpoints already.
	ErrTooMany = errors.New("too many webhooks")
	// ErrInvalid: a field of an endpoint is not valid; every
	// *InvalidError is one.
	ErrInvalid = errors.New("invalid webhook")
)

// InvalidError is a field of an endpoint that is not valid.
type InvalidError struct {
	Field, Message string
}

func (e *InvalidError) Error() string { return e.Field + ": " + e.Message }

// Is makes every InvalidError an ErrInvalid.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

func invalid(field, format string, args ...any) error {
	return &InvalidError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// Endpoint is a registered webhook: where events go, which, and from which
// queues. Its JSON form is the webhook object of the HTTP API.
type Endpoint struct {
	ID     string            `json:"id"`
	URL    string            `json:"url"`
	Events []tasks.EventType `json:"events"`
	// Queues are the queues whose events it receives; empty, every queue,
	// those made later too.
	Queues []string `json:"queues"`
	// Owner is who registered it; a producer's endpoints receive only the
	// events of queues the producer is granted.
	Owner   string `json:"owner"`
	Enabled bool   `json:"enabled"`
	// DisabledReason says why it is not enabled: paused, gone (it
	// answered 410) or failing (every attempt failed for FailingLimit).
	DisabledReason string    `json:"disabled_reason,omitempty"`
	CreatedAt      time.Time `json:"created_at"`
	// PreviousSecretUntil is, during a rotation, when the previous secret
	// stops signing.
	PreviousSecretUntil *time.Time `json:"previous_secret_until,omitempty"`
	// FailingSince is when its attempts began to fail, while the last one
	// failed.
	FailingSince *time.Time `json:"failing_since,omitempty"`
	// Lost counts the deliveries its backlog's cap dropped.
	Lost int64 `json:"lost"`
}

// EventList names the endpoint's events, comma-separated:
// "job.completed,job.dead".
func (e *Endpoint) EventList() string {
	names := make([]string, len(e.Events))
	for i, t := range e.Events {
		names[i] = string(t)
	}
	return strings.Join(names, ",")
}

// QueueList names the endpoint's queues, comma-separated, or says "every
// queue" when it names none.
func (e *Endpoint) QueueList() string {
	if len(e.Queues) == 0 {
		return "every queue"
	}
	return strings.Join(e.Queues, ",")
}

// Covers reports whether the endpoint wants events of the type from the
// queue.
func (e *Endpoint) Covers(queue string, t tasks.EventType) bool {
	return slices.Contains(e.Events, t) && (len(e.Queues) == 0 || slices.Contains(e.Queues, queue))
}

// record is an endpoint as the registry keeps it: with its secrets,
// sealed, each until when it signs (0: for good). Health is kept apart.
type record struct {
	Endpoint
	Secrets []storedSecret `json:"secrets"`
}

type storedSecret struct {
	Sealed string `json:"sealed"`
	Until  int64  `json:"until,omitempty"`
}

// Store is the registry of endpoints and their deliveries.
type Store struct {
	rdb    redis.UniversalClient
	tasks  *tasks.Store
	sealer *Sealer
	egress *Egress
	// durably confirms each change with replicas, as the engine's are.
	durably durable.Policy
	clock   func() time.Time
}

// NewStore returns the registry on rdb, for the queues of t: secrets
// sealed by sealer, URLs checked by egress, changes confirmed by replicas
// as policy says.
func NewStore(rdb redis.UniversalClient, t *tasks.Store, sealer *Sealer, egress *Egress, policy durable.Policy) *Store {
	return &Store{rdb: rdb, tasks: t, sealer: sealer, egress: egress, durably: policy, clock: time.Now}
}

// Sealed reports whether secrets are stored sealed.
func (s *Store) Sealed() bool { return s.sealer.Sealed() }

// NewEndpoint is what a person gives to register an endpoint.
type NewEndpoint struct {
	URL    string
	Events []tasks.EventType
	Queues []string
	Owner  string
}

// Create registers an endpoint, enabled, and returns it with its secret,
// which is shown this once.
func (s *Store) Create(ctx context.Context, n NewEndpoint) (Endpoint, string, error) {
	e := Endpoint{URL: n.URL, Events: n.Events, Queues: n.Queues, Owner: n.Owner, Enabled: true}
	if err := s.check(ctx, &e); err != nil {
		return Endpoint{}, "", err
	}
	secret, sealed, err := s.newSecret()
	if err != nil {
		return Endpoint{}, "", err
	}
	id, err := newID()
	if err != nil {
		return Endpoint{}, "", err
	}
	e.ID, e.CreatedAt = id, s.clock().UTC().Truncate(time.Millisecond)
	r := record{Endpoint: e, Secrets: []storedSecret{{Sealed: sealed}}}
	err = s.registryTx(ctx, func(tx *redis.Tx) error {
		all, err := readAll(ctx, tx)
		if err != nil {
			return err
		}
		mine := 0
		for _, o := range all {
			if o.Owner == n.Owner {
				mine++
			}
		}
		if mine >= MaxPerOwner {
			return ErrTooMany
		}
		return save(ctx, tx, r)
	})
	if err != nil {
		return Endpoint{}, "", storeErr(err)
	}
	return e, secret, nil
}

// check validates and tidies an endpoint's URL, events and queues.
func (s *Store) check(ctx context.Context, e *Endpoint) error {
	if len(e.URL) > MaxURL {
		return invalid("url", "must be at most %d characters", MaxURL)
	}
	u, err := s.egress.CheckURL(ctx, e.URL)
	var refused *URLError
	if errors.As(err, &refused) {
		return invalid("url", "%s", refused.Reason)
	}
	if err != nil {
		return err // DNS could not be asked: nothing wrong with the URL
	}
	e.URL = u.String()
	if len(e.Events) == 0 {
		return invalid("events", "name at least one of %s", eventList())
	}
	seen := map[tasks.EventType]bool{}
	for _, t := range e.Events {
		if !slices.Contains(tasks.EventTypes, t) {
			return invalid("events", "%q is not an event: they are %s", t, eventList())
		}
		seen[t] = true
	}
	e.Events = nil
	for _, t := range tasks.EventTypes {
		if seen[t] {
			e.Events = append(e.Events, t)
		}
	}
	slices.Sort(e.Queues)
	e.Queues = slices.Compact(e.Queues)
	for _, q := range e.Queues {
		if !keys.ValidQueue(q) {
			return invalid("queues", "%q is not a queue's name", q)
		}
	}
	if e.Queues == nil {
		e.Queues = []string{}
	}
	return nil
}

func eventList() string {
	names := make([]string, len(tasks.EventTypes))
	for i, t := range tasks.EventTypes {
		names[i] = string(t)
	}
	return strings.Join(names, ", ")
}

// newID returns a fresh endpoint id: "wh_" and 16 random base32 letters.
func newID() (string, error) {
	b := make([]byte, 10)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return "wh_" + strings.ToLower(base32.StdEncoding.EncodeToString(b)), nil
}

// Get returns the endpoint, with its health.
func (s *Store) Get(ctx context.Context, id string) (Endpoint, error) {
	r, err := s.read(ctx, id)
	if err != nil {
		return Endpoint{}, err
	}
	es, err := s.withHealth(ctx, []record{r})
	if err != nil {
		return Endpoint{}, err
	}
	return es[0], nil
}

// List returns every endpoint, oldest first, with its health.
func (s *Store) List(ctx context.Context) ([]Endpoint, error) {
	all, err := readAll(ctx, s.rdb)
	if err != nil {
		return nil, storeErr(err)
	}
	return s.withHealth(ctx, all)
}

// records returns every endpoint as the registry keeps it, oldest first.
func (s *Store) records(ctx context.Context) ([]record, error) {
	all, err := readAll(ctx, s.rdb)
	return all, storeErr(err)
}

func readAll(ctx context.Context, c redis.Cmdable) ([]record, error) {
	raw, err := c.HGetAll(ctx, keys.WebhookEndpoints).Result()
	if err != nil {
		return nil, err
	}
	all := make([]record, 0, len(raw))
	for id, v := range raw {
		var r record
		if err := json.Unmarshal([]byte(v), &r); err != nil {
			return nil, fmt.Errorf("webhook %s: %w", id, err)
		}
		all = append(all, r)
	}
	slices.SortFunc(all, func(a, b record) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return all, nil
}

func (s *Store) read(ctx context.Context, id string) (record, error) {
	raw, err := s.rdb.HGet(ctx, keys.WebhookEndpoints, id).Result()
	if err == redis.Nil {
		return record{}, ErrNotFound
	}
	if err != nil {
		return record{}, storeErr(err)
	}
	var r record
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		return record{}, fmt.Errorf("webhook %s: %w", id, err)
	}
	return r, nil
}

// withHealth returns the endpoints of the records with their health, read
// one pipeline per endpoint's slot.
func (s *Store) withHealth(ctx context.Context, rs []record) ([]Endpoint, error) {
	cmds := make([]*redis.SliceCmd, len(rs))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, r := range rs {
			cmds[i] = p.HMGet(ctx, keys.WebhookHealth(r.ID), "failing_since", "lost")
		}
		return nil
	})
	if err != nil && err != redis.Nil {
		return nil, storeErr(err)
	}
	now := s.clock()
	out := make([]Endpoint, len(rs))
	for i, r := range rs {
		e := r.Endpoint
		v := cmds[i].Val()
		if ms := number(v[0]); ms > 0 {
			t := time.UnixMilli(ms).UTC()
			e.FailingSince = &t
		}
		e.Lost = number(v[1])
		for _, sec := range r.Secrets {
			if sec.Until > 0 && sec.Until > now.UnixMilli() {
				t := time.UnixMilli(sec.Until).UTC()
				e.PreviousSecretUntil = &t
			}
		}
		out[i] = e
	}
	return out, nil
}

// number reads an integer that Redis answered as a string, 0 for none.
func number(v any) int64 {
	if n, ok := v.(int64); ok {
		return n
	}
	s, _ := v.(string)
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// Patch is a change of an endpoint: each field given is set.
type Patch struct {
	URL     *string
	Events  []tasks.EventType
	Queues  *[]string
	Enabled *bool
}

// Update changes the endpoint as the patch says (its fields as checked at
// registration) and returns it. Enabling it clears its failures: its
// FailingLimit starts anew.
func (s *Store) Update(ctx context.Context, id string, p Patch) (before, after Endpoint, err error) {
	var cleared bool
	err = s.change(ctx, id, func(r *record) error {
		before = r.Endpoint
		e := r.Endpoint
		if p.URL != nil {
			e.URL = *p.URL
		}
		if p.Events != nil {
			e.Events = p.Events
		}
		if p.Queues != nil {
			e.Queues = *p.Queues
		}
		if err := s.check(ctx, &e); err != nil {
			return err
		}
		if p.Enabled != nil {
			cleared = *p.Enabled && !e.Enabled
			e.Enabled = *p.Enabled
			e.DisabledReason = ""
			if !e.Enabled {
				e.DisabledReason = DisabledPaused
			}
		}
		r.Endpoint = e
		return nil
	})
	if err != nil {
		return Endpoint{}, Endpoint{}, err
	}
	if cleared {
		if err := s.durably.Send(ctx, s.rdb, keys.WebhookHealth(id), func(p redis.Pipeliner) {
			p.HDel(ctx, keys.WebhookHealth(id), "failing_since")
		}); err != nil {
			return Endpoint{}, Endpoint{}, storeErr(err)
		}
	}
	after, err = s.Get(ctx, id)
	return before, after, err
}

// Disable disables the endpoint for the reason (DisabledGone or
// DisabledFailing), unless it is disabled already.
func (s *Store) Disable(ctx context.Context, id, reason string) error {
	return s.change(ctx, id, func(r *record) error {
		if r.Enabled {
			r.Enabled, r.DisabledReason = false, reason
		}
		return nil
	})
}

// newSecret returns a fresh secret, and it sealed as the registry keeps it.
func (s *Store) newSecret() (secret, sealed string, err error) {
	if secret, err = NewSecret(); err != nil {
		return "", "", err
	}
	sealed, err = s.sealer.Seal(secret)
	return secret, sealed, err
}

// Rotate gives the endpoint a new secret and returns it. The secret it had
// keeps signing beside the new one for RotationOverlap; older ones stop.
func (s *Store) Rotate(ctx context.Context, id string) (Endpoint, string, error) {
	secret, sealed, err := s.newSecret()
	if err != nil {
		return Endpoint{}, "", err
	}
	now := s.clock()
	err = s.change(ctx, id, func(r *record) error {
		current := r.Secrets[0]
		current.Until = now.Add(RotationOverlap).UnixMilli()
		r.Secrets = []storedSecret{{Sealed: sealed}, current}
		return nil
	})
	if err != nil {
		return Endpoint{}, "", err
	}
	e, err := s.Get(ctx, id)
	return e, secret, err
}

// change applies fn to the endpoint's record, atomically.
func (s *Store) change(ctx context.Context, id string, fn func(r *record) error) error {
	err := s.registryTx(ctx, func(tx *redis.Tx) error {
		raw, err := tx.HGet(ctx, keys.WebhookEndpoints, id).Result()
		if err == redis.Nil {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		var r record
		if err := json.Unmarshal([]byte(raw), &r); err != nil {
			return fmt.Errorf("webhook %s: %w", id, err)
		}
		if err := fn(&r); err != nil {
			return err
		}
		return save(ctx, tx, r)
	})
	return storeErr(err)
}

// save writes the record in the registry, as the transaction's change.
func save(ctx context.Context, tx *redis.Tx, r record) error {
	raw, _ := json.Marshal(r)
	_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, keys.WebhookEndpoints, r.ID, raw)
		return nil
	})
	return err
}

// registryTx runs fn as one optimistic transaction on the registry (see
// durable.Policy.Tx), again while another change of the registry came
// between its read and its write, up to a bound.
func (s *Store) registryTx(ctx context.Context, fn func(tx *redis.Tx) error) error {
	for range 20 {
		err := s.durably.Tx(ctx, s.rdb, keys.WebhookEndpoints, fn, keys.WebhookEndpoints)
		if err != redis.TxFailedErr {
			return err
		}
	}
	return errors.New("the webhooks' registry changed too often to change it")
}

// Delete removes the endpoint and its deliveries.
func (s *Store) Delete(ctx context.Context, id string) (Endpoint, error) {
	r, err := s.read(ctx, id)
	if err != nil {
		return Endpoint{}, err
	}
	if err := s.durably.Send(ctx, s.rdb, keys.WebhookEndpoints, func(p redis.Pipeliner) {
		p.HDel(ctx, keys.WebhookEndpoints, id)
	}); err != nil {
		return Endpoint{}, storeErr(err)
	}
	if err := s.durably.Send(ctx, s.rdb, keys.WebhookDeliveries(id), func(p redis.Pipeliner) {
		p.Del(ctx, keys.WebhookDeliveries(id), keys.WebhookDue(id), keys.WebhookLog(id), keys.WebhookHealth(id))
	}); err != nil {
		return Endpoint{}, storeErr(err)
	}
	return r.Endpoint, nil
}

// signingKeys returns the keys that sign for the endpoint now: its secret,
// and the one before it during a rotation.
func (s *Store) signingKeys(r record, now time.Time) ([][]byte, error) {
	var out [][]byte
	for _, sec := range r.Secrets {
		if sec.Until > 0 && sec.Until <= now.UnixMilli() {
			continue
		}
		plain, err := s.sealer.Open(sec.Sealed)
		if err != nil {
			return nil, fmt.Errorf("webhook %s: %w", r.ID, err)
		}
		key, err := SecretKey(plain)
		if err != nil {
			return nil, fmt.Errorf("webhook %s: %w", r.ID, err)
		}
		out = append(out, key)
	}
	return out, nil
}

// storeErr wraps an error of the Redis client; the registry's own errors
// pass as they are.
func storeErr(err error) error {
	var inv *InvalidError
	if err == nil || errors.Is(err, ErrNotFound) || errors.Is(err, ErrTooMany) || errors.As(err, &inv) {
		return err
	}
	return fmt.Errorf("redis: %w", err)
}
