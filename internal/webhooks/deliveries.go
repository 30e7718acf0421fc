package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"claimdesk/internal/keys"
	"claimdesk/internal/tasks"

	"github.com/redis/go-redis/v9"
)

// A delivery is one event on its way to one endpoint. Its record, in the
// endpoint's deliveries, is changed only by the scripts below, each one
// atomic call in the endpoint's slot; its id is the event's, so an event
// handed on twice (its first reader died before acknowledging it) makes
// one delivery.

// The states of a delivery.
const (
	StatePending    = "pending"    // waiting for its next attempt
	StateDelivering = "delivering" // an attempt is under way
	StateSucceeded  = "succeeded"  // an attempt was answered 2xx
	StateFailed     = "failed"     // its attempts were used up
	StateDropped    = "dropped"    // the endpoint's backlog's cap dropped it
)

// Delivery is one event's delivery to one endpoint. Its JSON form is the
// delivery object of the HTTP API.
type Delivery struct {
	// ID is the event's id: the webhook-id header of every attempt.
	ID    string          `json:"id"`
	Event tasks.EventType `json:"event"`
	Queue string          `json:"queue"`
	// At is when the event happened.
	At       time.Time `json:"created_at"`
	State    string    `json:"state"`
	Attempts int       `json:"attempts"`
	// LastStatus is the status of the last answer (0: none, such as a
	// timeout, which LastError says).
	LastStatus    int        `json:"last_status,omitempty"`
	LastError     string     `json:"last_error,omitempty"`
	LastResponse  string     `json:"last_response,omitempty"`
	LastAttemptAt *time.Time `json:"last_attempt_at,omitempty"`
	NextAttemptAt *time.Time `json:"next_attempt_at,omitempty"`
	// Subject is the id of the job the event is about, or of the batch
	// for batch.finished, and Title its title: for the pages, which name
	// what each delivery carries; the API's object leaves them out (its
	// body's data says it).
	Subject string `json:"-"`
	Title   string `json:"-"`
}

// stored is a delivery as its record holds it (times in ms, the body sent).
type stored struct {
	ID       string          `json:"id"`
	Event    tasks.EventType `json:"event"`
	Queue    string          `json:"queue"`
	At       int64           `json:"at"`
	Body     string          `json:"body"`
	State    string          `json:"state"`
	Attempts int             `json:"attempts"`
	Status   int             `json:"status,omitempty"`
	Error    string          `json:"error,omitempty"`
	Response string          `json:"response,omitempty"`
	LastAt   int64           `json:"last_at,omitempty"`
	NextAt   int64           `json:"next_at,omitempty"`
	Subject  string          `json:"subject,omitempty"`
	Title    string          `json:"title,omitempty"`
}

func (d stored) delivery() Delivery {
	out := Delivery{ID: d.ID, Event: d.Event, Queue: d.Queue, At: time.UnixMilli(d.At).UTC(), State: d.State,
		Attempts: d.Attempts, LastStatus: d.Status, LastError: d.Error, LastResponse: d.Response, Subject: d.Subject, Title: d.Title}
	if d.LastAt > 0 {
		t := time.UnixMilli(d.LastAt).UTC()
		out.LastAttemptAt = &t
	}
	if d.NextAt > 0 && (d.State == StatePending || d.State == StateDelivering) {
		t := time.UnixMilli(d.NextAt).UTC()
		out.NextAttemptAt = &t
	}
	return out
}

// body is what every attempt of an event's delivery posts.
type body struct {
	Type      tasks.EventType `json:"type"`
	Timestamp time.Time       `json:"timestamp"`
	Data      any             `json:"data"`
}

// newDelivery is the delivery of the event, before its first attempt.
func newDelivery(e tasks.Event) (stored, error) {
	b, err := json.Marshal(body{Type: e.Type, Timestamp: e.At, Data: e.Data()})
	if err != nil {
		return stored{}, err
	}
	d := stored{ID: e.ID, Event: e.Type, Queue: e.Queue, At: e.At.UnixMilli(), Body: string(b), State: StatePending}
	switch {
	case e.Batch != nil:
		d.Subject, d.Title = e.Batch.ID, e.Batch.Title
	case e.Job != nil:
		d.Subject, d.Title = e.Job.ID, e.Job.Title
	}
	return d, nil
}

// addScript files a delivery unless the endpoint has one of its event
// already, due when told; beyond Backlog deliveries to make, it drops the
// one of the oldest event, counted in lost; beyond Keep finished ones in
// the log, it forgets the oldest few.
// KEYS: deliveries, due, log, health. ARGV: id, record, when due, event time,
// Backlog, Keep. Answers 1 if it filed the delivery, 0 if it was there.
var addScript = redis.NewScript(`
local id = ARGV[1]
if redis.call('HSETNX', KEYS[1], id, ARGV[2]) == 0 then return 0 end
redis.call('ZADD', KEYS[2], ARGV[3], id)
redis.call('ZADD', KEYS[3], ARGV[4], id)
if redis.call('ZCARD', KEYS[2]) > tonumber(ARGV[5]) then
  for _, old in ipairs(redis.call('ZRANGE', KEYS[3], 0, -1)) do
    if redis.call('ZREM', KEYS[2], old) == 1 then
      local d = cjson.decode(redis.call('HGET', KEYS[1], old))
      d.state, d.next_at = 'dropped', nil
      redis.call('HSET', KEYS[1], old, cjson.encode(d))
      redis.call('HINCRBY', KEYS[4], 'lost', 1)
      break
    end
  end
end
local extra = redis.call('ZCARD', KEYS[3]) - redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[6])
if extra > 0 then
  for _, old in ipairs(redis.call('ZRANGE', KEYS[3], 0, math.min(extra, 10) + 10)) do
    if extra <= 0 then break end
    if not redis.call('ZSCORE', KEYS[2], old) then
      redis.call('ZREM', KEYS[3], old)
      redis.call('HDEL', KEYS[1], old)
      extra = extra - 1
    end
  end
end
return 1
`)

// takeScript starts the next attempt of at most n deliveries due by now:
// each counts the attempt, and is due again when the attempt's lease ends
// (should its deliverer die meanwhile).
// KEYS: deliveries, due. ARGV: now, lease end, n. Answers the records.
var takeScript = redis.NewScript(`
local out = {}
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'LIMIT', 0, ARGV[3])) do
  local raw = redis.call('HGET', KEYS[1], id)
  if raw then
    local d = cjson.decode(raw)
    d.attempts, d.state, d.last_at, d.next_at = d.attempts + 1, 'delivering', tonumber(ARGV[1]), tonumber(ARGV[2])
    raw = cjson.encode(d)
    redis.call('HSET', KEYS[1], id, raw)
    redis.call('ZADD', KEYS[2], ARGV[2], id)
    out[#out + 1] = raw
  else
    redis.call('ZREM', KEYS[2], id)
  end
end
return out
`)

// settleScript records how an attempt ended, unless the delivery has
// moved on since (a later attempt began, or it was replayed): succeeded;
// or failed, and due again at next (none: failed for good). It keeps the
// endpoint's health: since when its attempts fail, its last success.
// KEYS: deliveries, due, health. ARGV: id, attempt, now, "1" if
// succeeded, status, error, response, next ("" for none). Answers
// {"stale"}, or {"ok", failing since ("" while it succeeds)}.
var settleScript = redis.NewScript(`
local id = ARGV[1]
local raw = redis.call('HGET', KEYS[1], id)
if not raw then return {'stale'} end
local d = cjson.decode(raw)
if d.state ~= 'delivering' or d.attempts ~= tonumber(ARGV[2]) then return {'stale'} end
d.status, d.error, d.response = tonumber(ARGV[5]), ARGV[6], ARGV[7]
if d.status == 0 then d.status = nil end
if d.error == '' then d.error = nil end
if d.response == '' then d.response = nil end
local since = ''
if ARGV[4] == '1' then
  d.state, d.next_at = 'succeeded', nil
  redis.call('ZREM', KEYS[2], id)
  redis.call('HDEL', KEYS[3], 'failing_since')
  redis.call('HSET', KEYS[3], 'succeeded_at', ARGV[3])
else
  redis.call('HSETNX', KEYS[3], 'failing_since', ARGV[3])
  since = redis.call('HGET', KEYS[3], 'failing_since')
  if ARGV[8] ~= '' then
    d.state, d.next_at = 'pending', tonumber(ARGV[8])
    redis.call('ZADD', KEYS[2], ARGV[8], id)
  else
    d.state, d.next_at = 'failed', nil
    redis.call('ZREM', KEYS[2], id)
  end
end
redis.call('HSET', KEYS[1], id, cjson.encode(d))
return {'ok', since}
`)

// replayScript makes a delivery pending again, due at once, its attempts
// counted anew.
// KEYS: deliveries, due. ARGV: id, now. Answers the record, or nil.
var replayScript = redis.NewScript(`
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return false end
local d = cjson.decode(raw)
d.state, d.attempts, d.next_at = 'pending', 0, tonumber(ARGV[2])
raw = cjson.encode(d)
redis.call('HSET', KEYS[1], ARGV[1], raw)
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
return raw
`)

// run runs the script durably on keys of one endpoint's slot.
func (s *Store) run(ctx context.Context, sc *redis.Script, ks []string, args ...any) (any, error) {
	cmds, err := s.runEach(ctx, sc, ks, [][]any{args})
	if err != nil {
		return nil, err
	}
	return cmds[0].Val(), nil
}

// runEach runs the script once per list of arguments, on the same keys of
// one endpoint's slot, in one round trip, durably.
func (s *Store) runEach(ctx context.Context, sc *redis.Script, ks []string, argLists [][]any) ([]*redis.Cmd, error) {
	cmds := make([]*redis.Cmd, len(argLists))
	send := func(load bool) error {
		return s.durably.Send(ctx, s.rdb, ks[0], func(p redis.Pipeliner) {
			for i, args := range argLists {
				if load {
					cmds[i] = sc.Eval(ctx, p, ks, args...)
				} else {
					cmds[i] = sc.EvalSha(ctx, p, ks, args...)
				}
			}
		})
	}
	// A script Redis lacks ran nowhere: the first call says so, whatever
	// the replicas did.
	err := send(false)
	if first := cmds[0].Err(); first != nil && strings.HasPrefix(first.Error(), "NOSCRIPT") {
		err = send(true)
	}
	if err != nil && err != redis.Nil {
		return nil, storeErr(err)
	}
	for _, c := range cmds {
		if err := c.Err(); err != nil && err != redis.Nil {
			return nil, storeErr(err)
		}
	}
	return cmds, nil
}

func deliveryKeys(id string) []string {
	return []string{keys.WebhookDeliveries(id), keys.WebhookDue(id), keys.WebhookLog(id), keys.WebhookHealth(id)}
}

// add files the events' deliveries to the endpoint, in one round trip,
// the first attempt of each due after wait.
func (s *Store) add(ctx context.Context, endpoint string, ds []stored, wait time.Duration) error {
	due := s.clock().Add(wait).UnixMilli()
	argLists := make([][]any, len(ds))
	for i, d := range ds {
		raw, _ := json.Marshal(d)
		argLists[i] = []any{d.ID, raw, due, d.At, Backlog, Keep}
	}
	_, err := s.runEach(ctx, addScript, deliveryKeys(endpoint), argLists)
	return err
}

// take starts the next attempt of at most n of the endpoint's deliveries
// that are due, leased until lease.
func (s *Store) take(ctx context.Context, endpoint string, n int, lease time.Time) ([]stored, error) {
	res, err := s.run(ctx, takeScript, deliveryKeys(endpoint)[:2], s.clock().UnixMilli(), lease.UnixMilli(), n)
	if err != nil {
		return nil, err
	}
	list, _ := res.([]any)
	out := make([]stored, 0, len(list))
	for _, v := range list {
		var d stored
		if err := json.Unmarshal([]byte(v.(string)), &d); err != nil {
			return nil, fmt.Errorf("webhook %s: delivery: %w", endpoint, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// outcome is how one attempt ended.
type outcome struct {
	ok       bool
	status   int
	err      string
	response string
	// next is when the next attempt is due; zero: none.
	next time.Time
}

// settle records how the attempt ended. It returns since when the
// endpoint's attempts fail (zero while they succeed), and false if the
// delivery moved on meanwhile, so nothing was recorded.
func (s *Store) settle(ctx context.Context, endpoint string, d stored, o outcome) (time.Time, bool, error) {
	ok, next := "", ""
	if o.ok {
		ok = "1"
	}
	if !o.next.IsZero() {
		next = fmt.Sprint(o.next.UnixMilli())
	}
	ks := []string{keys.WebhookDeliveries(endpoint), keys.WebhookDue(endpoint), keys.WebhookHealth(endpoint)}
	res, err := s.run(ctx, settleScript, ks, d.ID, d.Attempts, s.clock().UnixMilli(), ok, o.status, o.err, o.response, next)
	if err != nil {
		return time.Time{}, false, err
	}
	parts, _ := res.([]any)
	if len(parts) == 0 || parts[0] != "ok" {
		return time.Time{}, false, nil
	}
	var since time.Time
	if ms := number(parts[1]); ms > 0 {
		since = time.UnixMilli(ms)
	}
	return since, true, nil
}

// Deliveries returns the endpoint's latest deliveries, newest event first:
// at most limit.
func (s *Store) Deliveries(ctx context.Context, endpoint string, limit int) ([]Delivery, error) {
	if _, err := s.read(ctx, endpoint); err != nil {
		return nil, err
	}
	ids, err := s.rdb.ZRevRange(ctx, keys.WebhookLog(endpoint), 0, int64(limit)-1).Result()
	if err != nil {
		return nil, storeErr(err)
	}
	if len(ids) == 0 {
		return []Delivery{}, nil
	}
	raws, err := s.rdb.HMGet(ctx, keys.WebhookDeliveries(endpoint), ids...).Result()
	if err != nil {
		return nil, storeErr(err)
	}
	out := make([]Delivery, 0, len(raws))
	for _, v := range raws {
		raw, ok := v.(string)
		if !ok {
			continue // forgotten meanwhile
		}
		var d stored
		if err := json.Unmarshal([]byte(raw), &d); err != nil {
			return nil, fmt.Errorf("webhook %s: delivery: %w", endpoint, err)
		}
		out = append(out, d.delivery())
	}
	return out, nil
}

// Replay makes the endpoint's delivery of the event pending again, due at
// once, whatever became of it, and returns it.
func (s *Store) Replay(ctx context.Context, endpoint, event string) (Delivery, error) {
	if _, err := s.read(ctx, endpoint); err != nil {
		return Delivery{}, err
	}
	res, err := s.run(ctx, replayScript, deliveryKeys(endpoint)[:2], event, s.clock().UnixMilli())
	if err != nil {
		return Delivery{}, err
	}
	raw, ok := res.(string)
	if !ok {
		return Delivery{}, ErrDeliveryNotFound
	}
	var d stored
	if err := json.Unmarshal([]byte(raw), &d); err != nil {
		return Delivery{}, fmt.Errorf("webhook %s: delivery: %w", endpoint, err)
	}
	return d.delivery(), nil
}

// pendingScript answers how many deliveries the endpoint has still to
// make, and when the oldest of their events happened (0: none): the log
// holds every pending delivery by its event's time, the oldest pending
// among its first Keep + Backlog.
// KEYS: due, log.
var pendingScript = redis.NewScript(`
local n = redis.call('ZCARD', KEYS[1])
if n == 0 then return {0, 0} end
local log = redis.call('ZRANGE', KEYS[2], 0, n + tonumber(ARGV[1]), 'WITHSCORES')
for i = 1, #log, 2 do
  if redis.call('ZSCORE', KEYS[1], log[i]) then return {n, log[i + 1]} end
end
return {n, 0}
`)

// Pending returns how many deliveries the endpoint has still to make, and
// when the oldest of their events happened (zero for none).
func (s *Store) Pending(ctx context.Context, endpoint string) (int64, time.Time, error) {
	res, err := pendingScript.Run(ctx, s.rdb, []string{keys.WebhookDue(endpoint), keys.WebhookLog(endpoint)}, Keep).Slice()
	if err != nil {
		return 0, time.Time{}, storeErr(err)
	}
	n, _ := res[0].(int64)
	var oldest time.Time
	if ms := number(res[1]); ms > 0 {
		oldest = time.UnixMilli(ms)
	}
	return n, oldest, nil
}
