package tasks

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// readAll reads the env queue's outbox as consumer, failing the test on
// error.
func (e *env) readAll(consumer string, idle time.Duration) []Event {
	e.t.Helper()
	events, err := e.store.ReadOutbox(e.ctx, e.queue, consumer, 100, idle)
	if err != nil {
		e.t.Fatal(err)
	}
	return events
}

// An event carries the job as Get answers it after the change, with its
// payload and result, under an id that names it for good; nothing is
// published while the outbox is off.
func TestOutboxEvents(t *testing.T) {
	onEachBackend(t, func(e *env) {
		early := e.addJob(e.queue, NewJob{Title: "before", Payload: json.RawMessage(`{"n":0}`)})
		if _, _, err := e.store.Cancel(e.ctx, early.ID, "sam", false); err != nil {
			t.Fatal(err)
		}
		if got := e.readAll("a", time.Hour); len(got) != 0 {
			t.Fatalf("outbox off: %d events", len(got))
		}
		if err := e.store.SetOutbox(e.ctx, e.queue, true); err != nil {
			t.Fatal(err)
		}
		j := e.addJob(e.queue, NewJob{Title: "review", Payload: json.RawMessage(`{"n":1}`)})
		r := e.claim("ann")
		e.clock.Advance(time.Minute)
		if _, err := e.store.Complete(e.ctx, j.ID, r.Hold(), json.RawMessage(`{"verdict":"ok"}`)); err != nil {
			t.Fatal(err)
		}
		events := e.readAll("a", time.Hour)
		if len(events) != 1 {
			t.Fatalf("%d events, want 1", len(events))
		}
		ev := events[0]
		stored := e.get(j.ID)
		got, _ := json.Marshal(ev.Data())
		want, _ := json.Marshal(stored)
		if ev.Type != EventJobCompleted || ev.Queue != e.queue || string(got) != string(want) {
			t.Fatalf("event %s %s %s, want job.completed %s", ev.Type, ev.Queue, got, want)
		}
		if ev.Job.CompletedBy != "ann" || string(ev.Job.Result) != `{"verdict":"ok"}` || string(ev.Job.Payload) != `{"n":1}` {
			t.Fatalf("event's job %+v", ev.Job)
		}
		// Read again before it is acknowledged, once it has been pending
		// a takeover's time: the same event, by its id.
		time.Sleep(2 * time.Millisecond)
		again := e.readAll("b", time.Millisecond)
		if len(again) != 1 || again[0].ID != ev.ID || !reflect.DeepEqual(again[0].Job, ev.Job) {
			t.Fatalf("taken over: %+v, want %s", again, ev.ID)
		}
		if err := e.store.AckOutbox(e.ctx, e.queue, again...); err != nil {
			t.Fatal(err)
		}
		if got := e.readAll("a", time.Millisecond); len(got) != 0 {
			t.Fatalf("after its ack: %d events", len(got))
		}
		// Off again: nothing more is published.
		if err := e.store.SetOutbox(e.ctx, e.queue, false); err != nil {
			t.Fatal(err)
		}
		late := e.add("after", 50)
		if _, _, err := e.store.Cancel(e.ctx, late.ID, "sam", false); err != nil {
			t.Fatal(err)
		}
		if got := e.readAll("a", time.Millisecond); len(got) != 0 {
			t.Fatalf("outbox off again: %d events", len(got))
		}
		wantErr(t, "SetOutbox of no queue", e.store.SetOutbox(e.ctx, "no-such-queue", true), ErrQueueNotFound)
	})
}

// An event handed to a reader that never acknowledges it waits until it
// has been pending idle long, then goes to the next reader who asks.
func TestOutboxTakeover(t *testing.T) {
	onEachBackend(t, func(e *env) {
		if err := e.store.SetOutbox(e.ctx, e.queue, true); err != nil {
			t.Fatal(err)
		}
		j := e.add("doomed", 50)
		if _, _, err := e.store.Cancel(e.ctx, j.ID, "sam", false); err != nil {
			t.Fatal(err)
		}
		first := e.readAll("dies", time.Hour)
		if len(first) != 1 || first[0].Type != EventJobCanceled {
			t.Fatalf("first read: %+v", first)
		}
		if got := e.readAll("lives", time.Hour); len(got) != 0 {
			t.Fatalf("a reader took an event pending for less than idle: %+v", got)
		}
		time.Sleep(2 * time.Millisecond) // pending a takeover's time
		taken := e.readAll("lives", time.Millisecond)
		if len(taken) != 1 || taken[0].ID != first[0].ID {
			t.Fatalf("takeover: %+v", taken)
		}
		if err := e.store.AckOutbox(e.ctx, "other", taken...); err == nil {
			t.Fatal("an event was acknowledged in another queue's outbox")
		}
	})
}

// The outbox keeps at most OutboxCap events: beyond, the oldest go, and
// are counted.
func TestOutboxCap(t *testing.T) {
	onEachBackend(t, func(e *env) {
		if err := e.store.SetOutbox(e.ctx, e.queue, true); err != nil {
			t.Fatal(err)
		}
		key := keysFor(e.queue).Outbox()
		_, err := e.rdb.Pipelined(e.ctx, func(p redis.Pipeliner) error {
			for range OutboxCap {
				p.XAdd(e.ctx, &redis.XAddArgs{Stream: key, Values: []string{"type", "filler"}})
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		j := e.add("over", 50)
		if _, _, err := e.store.Cancel(e.ctx, j.ID, "sam", false); err != nil {
			t.Fatal(err)
		}
		st, err := e.store.Outbox(e.ctx, e.queue)
		if err != nil || st != (OutboxState{On: true, Waiting: OutboxCap, Lost: 1}) {
			t.Fatalf("outbox %+v, %v; want full with one lost", st, err)
		}
		last, err := e.rdb.XRevRangeN(e.ctx, key, "+", "-", 1).Result()
		if err != nil || len(last) != 1 || last[0].Values["type"] != string(EventJobCanceled) {
			t.Fatalf("newest entry %+v, %v", last, err)
		}
		if err := e.store.DeleteQueue(e.ctx, e.queue); err != nil {
			t.Fatal(err)
		}
		if n, err := e.rdb.Exists(e.ctx, key).Result(); err != nil || n != 0 {
			t.Fatalf("deleting the queue left its outbox: %d, %v", n, err)
		}
	})
}
