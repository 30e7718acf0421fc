package tasks

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The outbox. While a webhook listens to a queue, every change that ends
// one of its jobs or batches appends an event to the queue's outbox, in
// the same script call as the change (lua/lib.lua, publish): the event
// exists exactly when the change does, on one Redis or a cluster. The
// webhooks' deliverers read each outbox as one consumer group, hand each
// event on to the endpoints that want it, and then acknowledge it, which
// deletes it; an event handed to an instance that died is taken over by
// another once it has waited long enough (ReadOutbox).

// OutboxCap is how many events a queue's outbox holds at most: beyond it
// the oldest are dropped and counted (OutboxState.Lost). It bounds what a
// queue's outbox can cost while no deliverer runs.
const OutboxCap = 100_000

// outboxGroup is the consumer group of every outbox.
const outboxGroup = "deliver"

// EventType names an event of the outbox: what webhooks subscribe to.
type EventType string

// The event types.
const (
	EventJobCompleted  EventType = "job.completed"
	EventJobDead       EventType = "job.dead"
	EventJobCanceled   EventType = "job.canceled"
	EventBatchFinished EventType = "batch.finished"
	// EventJobSLABreached: an unfinished job's due time came (WatchDue).
	EventJobSLABreached EventType = "job.sla_breached"
)

// EventTypes lists every event type.
var EventTypes = []EventType{EventJobCompleted, EventJobDead, EventJobCanceled, EventBatchFinished, EventJobSLABreached}

// Event is one event of a queue's outbox.
type Event struct {
	// ID names the event for good: the same whoever reads it, and however
	// often.
	ID    string
	Type  EventType
	Queue string
	// At is when the change happened.
	At time.Time
	// Job is the job as the change left it, with its payload and result,
	// for a job's event; Batch the batch, for batch.finished.
	Job   *Job
	Batch *Batch
	// entry is the event's id in the queue's outbox stream.
	entry string
}

// Data is what the event is about: its job or its batch.
func (e *Event) Data() any {
	if e.Batch != nil {
		return e.Batch
	}
	return e.Job
}

// SetOutbox turns the queue's outbox on (on: every change that ends a job
// or batch appends its event) or off (events already in it stay to be
// read). It fails with ErrQueueNotFound for no such queue.
func (s *Store) SetOutbox(ctx context.Context, queue string, on bool) error {
	if !validQueueName(queue) {
		return ErrQueueNotFound
	}
	turn := "off"
	if on {
		turn = "on"
	}
	_, err := s.run(ctx, outboxScript, queue, turn, outboxGroup)
	return err
}

// ReadOutbox hands consumer at most count events of the queue's outbox:
// first, when takeover is not 0, those handed to another consumer (or this
// one) at least takeover ago and not acknowledged since, whose reader is
// taken to have died; then events never handed to anyone. An event stays
// the consumer's until it acknowledges it (AckOutbox). A queue without an
// outbox has no events.
func (s *Store) ReadOutbox(ctx context.Context, queue, consumer string, count int, takeover time.Duration) ([]Event, error) {
	if !validQueueName(queue) {
		return nil, ErrQueueNotFound
	}
	key := keysFor(queue).Outbox()
	var msgs []redis.XMessage
	if takeover > 0 {
		taken, _, err := s.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{Stream: key, Group: outboxGroup,
			Consumer: consumer, MinIdle: takeover, Start: "0-0", Count: int64(count)}).Result()
		if noGroup(err) {
			return nil, nil
		}
		if err != nil {
			return nil, redisErr(err)
		}
		msgs = taken
	}
	if len(msgs) < count {
		streams, err := s.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: outboxGroup, Consumer: consumer,
			Streams: []string{key, ">"}, Count: int64(count - len(msgs)), Block: -1}).Result()
		if err != nil && err != redis.Nil && !noGroup(err) {
			return nil, redisErr(err)
		}
		for _, st := range streams {
			msgs = append(msgs, st.Messages...)
		}
	}
	events := make([]Event, 0, len(msgs))
	for _, m := range msgs {
		e, err := decodeEvent(queue, m)
		if err != nil {
			return nil, err
		}
		events = append(events, e)
	}
	return events, nil
}

// noGroup reports whether err says that the outbox or its group does not
// exist: the queue never had an outbox, or was deleted.
func noGroup(err error) bool { return err != nil && strings.HasPrefix(err.Error(), "NOGROUP") }

// AckOutbox acknowledges events of the queue's outbox and deletes them:
// their readers have handed them on.
func (s *Store) AckOutbox(ctx context.Context, queue string, events ...Event) error {
	if len(events) == 0 {
		return nil
	}
	ids := make([]string, len(events))
	for i, e := range events {
		if e.Queue != queue || e.entry == "" {
			return fmt.Errorf("ack outbox of %s: event %s is not of it", queue, e.ID)
		}
		ids[i] = e.entry
	}
	key := keysFor(queue).Outbox()
	err := s.durably(ctx, key, func(p redis.Pipeliner) {
		p.XAck(ctx, key, outboxGroup, ids...)
		p.XDel(ctx, key, ids...)
	})
	if err != nil {
		return redisErr(err)
	}
	return nil
}

// ForgetOutboxReaders drops from the queue's outbox group the readers that
// hold no event and have not read for idle: instances gone, each of which
// would otherwise stay in the group for good.
func (s *Store) ForgetOutboxReaders(ctx context.Context, queue string, idle time.Duration) error {
	if !validQueueName(queue) {
		return ErrQueueNotFound
	}
	key := keysFor(queue).Outbox()
	readers, err := s.rdb.XInfoConsumers(ctx, key, outboxGroup).Result()
	if noGroup(err) || err != nil && strings.Contains(err.Error(), "no such key") {
		return nil
	}
	if err != nil {
		return redisErr(err)
	}
	for _, r := range readers {
		if r.Pending == 0 && r.Idle >= idle {
			if err := s.rdb.XGroupDelConsumer(ctx, key, outboxGroup, r.Name).Err(); err != nil {
				return redisErr(err)
			}
		}
	}
	return nil
}

// OutboxState is how a queue's outbox stands.
type OutboxState struct {
	// On is whether changes append events to it.
	On bool
	// Waiting counts the events in it: not yet handed on.
	Waiting int64
	// Lost counts the events its cap dropped, ever.
	Lost int64
}

// Outbox returns how the queue's outbox stands.
func (s *Store) Outbox(ctx context.Context, queue string) (OutboxState, error) {
	if !validQueueName(queue) {
		return OutboxState{}, ErrQueueNotFound
	}
	k := keysFor(queue)
	var conf *redis.SliceCmd
	var length *redis.IntCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		conf = p.HMGet(ctx, k.Conf(), "outbox", "outbox_lost")
		length = p.XLen(ctx, k.Outbox())
		return nil
	})
	if err != nil {
		return OutboxState{}, redisErr(err)
	}
	v := conf.Val()
	st := OutboxState{On: v[0] == "1", Waiting: length.Val()}
	if lost, ok := v[1].(string); ok {
		st.Lost, _ = strconv.ParseInt(lost, 10, 64)
	}
	return st, nil
}

// decodeEvent reads one entry of the queue's outbox (lua/lib.lua, publish).
func decodeEvent(queue string, m redis.XMessage) (Event, error) {
	field := func(name string) string { s, _ := m.Values[name].(string); return s }
	ms, _, _ := strings.Cut(m.ID, "-")
	at, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return Event{}, fmt.Errorf("outbox of %s: entry id %q", queue, m.ID)
	}
	// An event's id is its outbox entry's, which Redis never gives twice
	// in one stream, and its queue's name.
	e := Event{ID: "evt_" + m.ID + "." + queue, Type: EventType(field("type")),
		Queue: queue, At: msTime(at), entry: m.ID}
	id := globalID(field("id"), queue)
	switch e.Type {
	case EventBatchFinished:
		e.Batch, err = decodeBatch(id, field("record"))
	case EventJobCompleted, EventJobDead, EventJobCanceled, EventJobSLABreached:
		e.Job, err = decodeJob(id, field("record"), field("payload"), e.At)
		if err == nil {
			err = e.Job.readResult([]any{field("result"), field("answers"), field("agreement")})
		}
	default:
		err = errors.New("unknown type " + string(e.Type))
	}
	if err != nil {
		return Event{}, fmt.Errorf("outbox of %s, entry %s: %w", queue, m.ID, err)
	}
	return e, nil
}
