package tasks

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"claimdesk/internal/tasks/taskstest"

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
		// The readers that hold nothing are forgotten once idle long
		// enough; none is, yet.
		readers := func() []string {
			cs, err := e.rdb.XInfoConsumers(e.ctx, keysFor(e.queue).Outbox(), outboxGroup).Result()
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, c := range cs {
				names = append(names, c.Name)
			}
			return names
		}
		if err := e.store.ForgetOutboxReaders(e.ctx, e.queue, time.Hour); err != nil || len(readers()) != 2 {
			t.Fatalf("readers after forgetting those idle an hour: %v, %v", readers(), err)
		}
		time.Sleep(2 * time.Millisecond) // idle a little
		if err := e.store.ForgetOutboxReaders(e.ctx, e.queue, time.Millisecond); err != nil || len(readers()) != 0 {
			t.Fatalf("readers after forgetting those idle a millisecond: %v, %v", readers(), err)
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

// The outbox's cost in Redis commands, held to its line: a change that
// ends jobs or batches reads conf's outbox flag once, whether the outbox
// is on or off; on, it adds for each event one XADD and the reads of the
// job's payload (and, for job.completed, its result), and one XLEN per
// call for the cap. A change that ends nothing pays nothing.
func TestOutboxBudget(t *testing.T) {
	t.Parallel()
	rdb, mon := monitoredServer(t)
	result := json.RawMessage(`{"verdict":"ok"}`)
	for _, c := range []struct {
		name string
		// change readies a change in e's queue and returns it.
		change func(e *env) func()
		// more is what the outbox on adds to the change's commands.
		more []string
		// reads is how often the change reads conf's outbox flag by itself
		// (a completion reads it with the outcome form, in one HMGET).
		reads int
	}{
		{"complete", func(e *env) func() {
			e.addJob(e.queue, NewJob{Title: "one", Payload: json.RawMessage(`{"n":1}`)})
			r := e.claim("ann")
			return func() {
				if _, err := e.store.Complete(e.ctx, r.Job.ID, r.Hold(), result); err != nil {
					e.t.Fatal(err)
				}
			}
		}, []string{"HGET payload <id>", "HMGET result", "XADD outbox", "XLEN outbox"}, 0},
		{"cancel", func(e *env) func() {
			j := e.addJob(e.queue, NewJob{Title: "one", Payload: json.RawMessage(`{"n":1}`)})
			return func() {
				if _, _, err := e.store.Cancel(e.ctx, j.ID, "sam", false); err != nil {
					e.t.Fatal(err)
				}
			}
		}, []string{"HGET payload <id>", "XADD outbox", "XLEN outbox"}, 1},
		{"complete the last job of a batch", func(e *env) func() {
			e.createBatch(NewBatch{Title: "b", Jobs: []NewJob{{Title: "one", Payload: json.RawMessage(`{"n":1}`)}}})
			r := e.claim("ann")
			return func() {
				if _, err := e.store.Complete(e.ctx, r.Job.ID, r.Hold(), result); err != nil {
					e.t.Fatal(err)
				}
			}
		}, []string{"HGET payload <id>", "HMGET result", "XADD outbox", "XADD outbox", "XLEN outbox"}, 0},
		{"claim", func(e *env) func() {
			e.addJob(e.queue, NewJob{Title: "one", Payload: json.RawMessage(`{"n":1}`)})
			return func() { e.claim("ann") }
		}, nil, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			var sent [2][]string // outbox off, on
			for i, on := range []bool{false, true} {
				e := newEnv(t, rdb, Queue{})
				if err := e.store.SetOutbox(e.ctx, e.queue, on); err != nil {
					t.Fatal(err)
				}
				change := c.change(e)
				sent[i] = mon.during(t, change)
				if n := count(sent[i], "HGET conf outbox"); n != c.reads {
					t.Errorf("outbox on %t: conf's outbox flag read %d times, want %d: %q", on, n, c.reads, sent[i])
				}
			}
			if more := extra(sent[1], sent[0]); !slices.Equal(more, c.more) {
				t.Errorf("the outbox on added %q, want %q\noff: %q\non:  %q", more, c.more, sent[0], sent[1])
			}
			t.Logf("%d commands with the outbox off, %d on", len(sent[0]), len(sent[1]))
		})
	}
}

// monitoredServer starts a Redis of the test's own, whose every command
// the monitor reads: a budget test counts commands no other test sends.
func monitoredServer(t *testing.T) (*redis.Client, *monitor) {
	t.Helper()
	srv, err := taskstest.NewServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	rdb := srv.Client()
	return rdb, monitorRedis(t, srv.Addr(), rdb)
}

// count is how many of the commands are cmd.
func count(cmds []string, cmd string) int {
	n := 0
	for _, c := range cmds {
		if c == cmd {
			n++
		}
	}
	return n
}

// extra is what more has beyond less, as a multiset, sorted.
func extra(more, less []string) []string {
	left := slices.Clone(less)
	var out []string
	for _, c := range more {
		if i := slices.Index(left, c); i >= 0 {
			left = slices.Delete(left, i, i+1)
			continue
		}
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// monitor reads what a Redis server runs (MONITOR), scripts' own calls
// included, on a connection of its own.
type monitor struct {
	rdb  *redis.Client
	r    *bufio.Reader
	mark int
}

func monitorRedis(t *testing.T, addr string, rdb *redis.Client) *monitor {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		t.Fatal(err)
	}
	m := &monitor{rdb: rdb, r: bufio.NewReader(conn)}
	if line, err := m.r.ReadString('\n'); err != nil || line != "+OK\r\n" {
		t.Fatalf("MONITOR answered %q, %v", line, err)
	}
	return m
}

// monitorLine is a line of MONITOR: time, [db client], command and
// arguments, each quoted.
var monitorLine = regexp.MustCompile(`^\+\d+\.\d+ \[\d+ [^\]]+\] (.*)\r\n$`)

// scriptIDs matches the ids of jobs and batches, as scripts see them.
var scriptIDs = regexp.MustCompile(`^[0-9A-Z]{26}`)

// during returns the commands Redis ran while fn ran, each as its name,
// the part of its key after the hash tag, and for HGET the field (ids as
// <id>): "HGET conf outbox". The checks of every key a script touches,
// which the tests' library makes (COMMAND GETKEYS), are left out.
func (m *monitor) during(t *testing.T, fn func()) []string {
	t.Helper()
	m.mark++
	start, end := fmt.Sprintf("start-%d", m.mark), fmt.Sprintf("end-%d", m.mark)
	m.until(t, start)
	fn()
	return m.until(t, end)
}

// until sends an ECHO of marker and returns the commands Redis ran before
// it.
func (m *monitor) until(t *testing.T, marker string) []string {
	t.Helper()
	if err := m.rdb.Echo(context.Background(), marker).Err(); err != nil {
		t.Fatal(err)
	}
	var cmds []string
	for {
		line, err := m.r.ReadString('\n')
		if err != nil {
			t.Fatalf("MONITOR: %v", err)
		}
		match := monitorLine.FindStringSubmatch(line)
		if match == nil {
			t.Fatalf("MONITOR sent %q", line)
		}
		// Quoted arguments, split where one ends and the next begins (an
		// argument that holds a quote is escaped: only what follows it
		// may be split wrong, past the name, key and field read here).
		args := strings.Split(strings.Trim(match[1], `"`), `" "`)
		name := strings.ToUpper(args[0])
		switch {
		case name == "ECHO" && len(args) == 2 && args[1] == marker:
			return cmds
		case name == "COMMAND" || name == "ECHO":
			continue
		}
		cmd := name
		if len(args) > 1 {
			if _, part, ok := strings.Cut(args[1], "}:"); ok {
				cmd += " " + part
			}
		}
		if name == "HGET" && len(args) > 2 {
			cmd += " " + scriptIDs.ReplaceAllString(args[2], "<id>")
		}
		cmds = append(cmds, cmd)
	}
}
