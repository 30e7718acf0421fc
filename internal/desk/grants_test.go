package desk_test

import (
	"errors"
	"strings"
	"testing"

	"claimdesk/internal/desk"
	"claimdesk/internal/tasks"
)

// Every action on a named queue answers tasks.ErrQueueNotFound for a queue
// that does not exist, whoever asks, and, for one that exists, refuses
// whoever lacks the role or grant in words that name the queue and what is
// missing.
func TestQueueRefusalsNameTheQueueAndTheGrant(t *testing.T) {
	f := newFixture(t)
	actions := []struct {
		name string
		// who lacks the grant; missing is what the refusal must name.
		who     func() desk.Actor
		missing string
		do      func(a desk.Actor, queue string) error
	}{
		{"enqueue", func() desk.Actor { return desk.Person(f.stranger) }, "is not granted to " + f.stranger.Name, func(a desk.Actor, q string) error {
			_, err := f.desk.Enqueue(f.ctx, a, q, []tasks.NewJob{{Title: "x"}})
			return err
		}},
		{"enqueue by an operator", func() desk.Actor { return desk.Person(f.op) }, "needs the producer or supervisor role", func(a desk.Actor, q string) error {
			_, err := f.desk.Enqueue(f.ctx, a, q, []tasks.NewJob{{Title: "x"}})
			return err
		}},
		{"create a batch", func() desk.Actor { return desk.Person(f.stranger) }, "is not granted to " + f.stranger.Name, func(a desk.Actor, q string) error {
			_, _, err := f.desk.CreateBatch(f.ctx, a, q, tasks.NewBatch{Title: "b", Jobs: []tasks.NewJob{{Title: "x"}}})
			return err
		}},
		{"claim", func() desk.Actor { return desk.Person(f.other) }, "is not granted to " + f.other.Name, func(a desk.Actor, q string) error {
			_, err := f.desk.Claim(f.ctx, a, q, "")
			return err
		}},
		{"claim by a producer", func() desk.Actor { return desk.Person(f.producer) }, "needs the operator role", func(a desk.Actor, q string) error {
			_, err := f.desk.Claim(f.ctx, a, q, "")
			return err
		}},
		{"claim any of a list", func() desk.Actor { return desk.Person(f.other) }, "is not granted to " + f.other.Name, func(a desk.Actor, q string) error {
			_, err := f.desk.ClaimAny(f.ctx, a, []string{q}, "")
			return err
		}},
		{"list jobs", func() desk.Actor { return desk.Person(f.producer) }, "needs the supervisor role", func(a desk.Actor, q string) error {
			_, _, err := f.desk.Jobs(f.ctx, a, desk.Listing{Queue: q, State: tasks.StateReady})
			return err
		}},
		{"numbers", func() desk.Actor { return desk.Person(f.op) }, "needs the supervisor role", func(a desk.Actor, q string) error {
			_, err := f.desk.Numbers(f.ctx, a, q)
			return err
		}},
		{"requeue dead", func() desk.Actor { return desk.Person(f.op) }, "needs the supervisor role", func(a desk.Actor, q string) error {
			_, _, err := f.desk.RequeueDead(f.ctx, a, q, 10)
			return err
		}},
		{"change", func() desk.Actor { return desk.Person(f.producer) }, "needs the supervisor role", func(a desk.Actor, q string) error {
			_, err := f.desk.ChangeQueue(f.ctx, a, q, tasks.QueuePatch{})
			return err
		}},
		{"pause", func() desk.Actor { return desk.Person(f.op) }, "needs the supervisor role", func(a desk.Actor, q string) error {
			_, err := f.desk.PauseQueue(f.ctx, a, q)
			return err
		}},
		{"delete", func() desk.Actor { return desk.Person(f.op) }, "needs the supervisor role", func(a desk.Actor, q string) error {
			return f.desk.DeleteQueue(f.ctx, a, q)
		}},
	}
	for _, tc := range actions {
		t.Run(tc.name, func(t *testing.T) {
			for _, who := range []desk.Actor{tc.who(), desk.Person(f.super)} {
				err := tc.do(who, f.queue+"-misspelled")
				if !errors.Is(err, tasks.ErrQueueNotFound) {
					t.Errorf("%s, a queue that does not exist: %v, want %v", who.Name(), err, tasks.ErrQueueNotFound)
				}
			}
			err := tc.do(tc.who(), f.queue)
			if !errors.Is(err, desk.ErrForbidden) || !strings.Contains(err.Error(), "queue "+f.queue) || !strings.Contains(err.Error(), tc.missing) {
				t.Errorf("%s: %v, want a refusal naming queue %s and %q", tc.who().Name(), err, f.queue, tc.missing)
			}
		})
	}
	if s := f.stats(); s.Ready != 0 || s.Reserved != 0 {
		t.Fatalf("refusals changed the queue: %+v", s)
	}
}
