package tasks

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// Changes made joined in one call end exactly as the same changes made one
// by one, in the same order: on twin queues, random rounds of the job's
// changes go one by one on the first and joined on the second, and each
// change answers alike, and every job, batch and outbox event ends alike.
func TestJoinedChangesEndAsAlone(t *testing.T) {
	t.Parallel()
	s, g, _ := gatedStore(t)
	ctx := context.Background()
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 1))
	t.Logf("seed %d", seed)

	twins := []*twin{{queue: "alone"}, {queue: "joined"}}
	var titles []string
	for _, tw := range twins {
		tw.held, tw.ids = map[string]*Reservation{}, map[string]string{}
		if _, err := s.PutQueue(ctx, Queue{Name: tw.queue}); err != nil {
			t.Fatal(err)
		}
		if err := s.SetOutbox(ctx, tw.queue, true); err != nil {
			t.Fatal(err)
		}
		_, made, err := s.CreateBatch(ctx, tw.queue, "pat", NewBatch{Title: "b", Jobs: []NewJob{
			{Title: "b0", MaxAttempts: 1}, {Title: "b1", MaxAttempts: 2}, {Title: "b2"}}})
		if err != nil {
			t.Fatal(err)
		}
		var jobs []NewJob
		for i := range 12 {
			jobs = append(jobs, NewJob{Title: fmt.Sprint("j", i), Priority: ptr(40 + i%3*10), MaxAttempts: 1 + i%3})
		}
		more, err := s.Enqueue(ctx, tw.queue, "pat", jobs)
		if err != nil {
			t.Fatal(err)
		}
		titles = titles[:0]
		for _, e := range append(made, more...) {
			tw.ids[e.Job.Title] = e.Job.ID
			titles = append(titles, e.Job.Title)
		}
	}
	// A first completion on each, so the Store knows the outcome form.
	for _, tw := range twins {
		r, err := s.Claim(ctx, tw.queue, "ann")
		if err != nil || r == nil {
			t.Fatal(r, err)
		}
		if _, err := s.Complete(ctx, r.Job.ID, r.Hold(), nil); err != nil {
			t.Fatal(err)
		}
	}

	// A change is made on a twin, and answers what a client would see.
	type change struct {
		what string
		do   func(tw *twin) (string, *Reservation)
	}
	outcome := func(j *Job, r *Reservation, err error) (string, *Reservation) {
		var parts []string
		if err != nil {
			parts = append(parts, errorKind(err))
		}
		if j != nil {
			parts = append(parts, j.Title+" "+string(j.State))
		}
		if r != nil {
			parts = append(parts, "holds "+r.Job.Title)
		}
		return strings.Join(parts, ", "), r
	}
	ops := []string{"ann", "bob", "cat"}
	pick := func() change {
		title := titles[rng.IntN(len(titles))]
		op := ops[rng.IntN(len(ops))]
		force := rng.IntN(2) == 0
		// A holder's change names a job held at some time, so that it
		// reaches the engine (its reservation may have ended since).
		var once []string
		for t := range twins[0].held {
			once = append(once, t)
		}
		slices.Sort(once)
		kind := rng.IntN(10)
		if kind >= 2 && kind <= 6 || kind == 9 {
			if len(once) == 0 {
				kind = 0
			} else {
				title = once[rng.IntN(len(once))]
			}
		}
		switch kind {
		case 0, 1:
			return change{"claim by " + op, func(tw *twin) (string, *Reservation) {
				r, err := s.Claim(ctx, tw.queue, op)
				return outcome(nil, r, err)
			}}
		case 2:
			return change{"complete " + title, func(tw *twin) (string, *Reservation) {
				j, err := s.Complete(ctx, tw.ids[title], tw.hold(title), nil)
				return outcome(j, nil, err)
			}}
		case 3:
			return change{"complete & next " + title, func(tw *twin) (string, *Reservation) {
				j, r, why, err := s.CompleteNext(ctx, tw.ids[title], tw.hold(title), nil)
				if why != nil {
					err = errors.Join(err, why)
				}
				return outcome(j, r, err)
			}}
		case 4:
			return change{"give back " + title, func(tw *twin) (string, *Reservation) {
				j, err := s.Release(ctx, tw.ids[title], tw.hold(title))
				return outcome(j, nil, err)
			}}
		case 5:
			return change{"skip " + title, func(tw *twin) (string, *Reservation) {
				j, err := s.Skip(ctx, tw.ids[title], tw.hold(title))
				return outcome(j, nil, err)
			}}
		case 6:
			return change{"fail " + title, func(tw *twin) (string, *Reservation) {
				j, err := s.Fail(ctx, tw.ids[title], tw.hold(title), "cannot be done")
				return outcome(j, nil, err)
			}}
		case 7:
			return change{"requeue " + title, func(tw *twin) (string, *Reservation) {
				j, _, err := s.Requeue(ctx, tw.ids[title], "sup")
				return outcome(j, nil, err)
			}}
		case 9:
			return change{"extend " + title, func(tw *twin) (string, *Reservation) {
				j, err := s.Extend(ctx, tw.ids[title], tw.hold(title), 60)
				return outcome(j, nil, err)
			}}
		default:
			return change{"cancel " + title, func(tw *twin) (string, *Reservation) {
				j, _, err := s.Cancel(ctx, tw.ids[title], "sup", force)
				return outcome(j, nil, err)
			}}
		}
	}
	for round := range 25 {
		changes := make([]change, 2+rng.IntN(5))
		for i := range changes {
			changes[i] = pick()
		}
		alone, joined := make([]string, len(changes)), make([]string, len(changes))
		made := [][]*Reservation{make([]*Reservation, len(changes)), make([]*Reservation, len(changes))}
		for i, c := range changes {
			alone[i], made[0][i] = c.do(twins[0])
		}
		calls := make([]func(), len(changes))
		for i, c := range changes {
			calls[i] = func() { joined[i], made[1][i] = c.do(twins[1]) }
		}
		joinCalls(t, s, g, twins[1].queue, func() {
			if err := s.SampleNumbers(ctx, twins[1].queue); err != nil {
				t.Error(err)
			}
		}, calls...)
		for i, c := range changes {
			if alone[i] != joined[i] {
				t.Fatalf("round %d, %s: alone %q, joined %q", round, c.what, alone[i], joined[i])
			}
		}
		// The reservations made are known from the next round on, in the
		// order of their changes: joined, a change cannot learn of one made
		// in its own call.
		for k, tw := range twins {
			for _, r := range made[k] {
				if r != nil {
					tw.held[r.Job.Title] = r
				}
			}
		}
	}

	// Every job ends alike: its state, attempts, holder and history.
	for _, title := range titles {
		var seen []string
		for _, tw := range twins {
			j, err := s.Get(ctx, tw.ids[title])
			if err != nil {
				t.Fatal(err)
			}
			h, _, err := j.History()
			if err != nil {
				t.Fatal(err)
			}
			var steps []string
			for _, e := range h {
				steps = append(steps, fmt.Sprintf("%s by %s %s→%s #%d %s", e.Action, e.Actor, e.From, e.To, e.Attempt, e.Reason))
			}
			seen = append(seen, fmt.Sprintf("%s %d %s: %s", j.State, j.Attempts, j.ReservedBy, strings.Join(steps, "; ")))
		}
		if seen[0] != seen[1] {
			t.Errorf("%s alone: %s\njoined: %s", title, seen[0], seen[1])
		}
	}
	// The queues' counts, skips, claims counters and outbox events.
	var counts, events []string
	for _, tw := range twins {
		title := map[string]string{}
		for t, id := range tw.ids {
			title[localID(id)] = t
		}
		k := keysFor(tw.queue)
		skips, err := s.rdb.SMembers(ctx, k.Skips()).Result()
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range skips {
			op, id, _ := strings.Cut(m, "\n")
			skips[i] = op + " skipped " + title[id]
		}
		slices.Sort(skips)
		skipped, err := s.rdb.HGetAll(ctx, k.SkipCount()).Result()
		if err != nil {
			t.Fatal(err)
		}
		claims, err := s.rdb.HGet(ctx, k.Conf(), "claims").Result()
		if err != nil {
			t.Fatal(err)
		}
		st, err := s.Stats(ctx, tw.queue)
		if err != nil {
			t.Fatal(err)
		}
		counts = append(counts, fmt.Sprintf("%+v; %q; %v; %s claims", st.Counts(), skips, skipped, claims))
		read, err := s.ReadOutbox(ctx, tw.queue, "c", 1000, 0)
		if err != nil {
			t.Fatal(err)
		}
		var es []string
		for _, e := range read {
			if e.Job != nil {
				es = append(es, fmt.Sprintf("%s %s %s %d", e.Type, e.Job.Title, e.Job.State, e.Job.Attempts))
			} else {
				es = append(es, fmt.Sprintf("%s %s %d/%d/%d", e.Type, e.Batch.State, e.Batch.Completed, e.Batch.Dead, e.Batch.Canceled))
			}
		}
		events = append(events, strings.Join(es, "\n"))
	}
	if counts[0] != counts[1] {
		t.Errorf("counts, skips and claims alone %s\njoined %s", counts[0], counts[1])
	}
	if events[0] != events[1] {
		t.Errorf("outbox alone:\n%s\njoined:\n%s", events[0], events[1])
	}
	if !slices.ContainsFunc(strings.Split(events[0], "\n"), func(e string) bool { return strings.HasPrefix(e, "job.") }) {
		t.Errorf("no job ended in %d rounds: the test tried nothing", 25)
	}
}

// twin is one of two queues given the same changes.
type twin struct {
	queue string
	held  map[string]*Reservation // the latest reservation of each job, by title
	ids   map[string]string       // the job's id, by title
}

// hold is the latest reservation's hold of the job (none if never held).
func (tw *twin) hold(title string) Hold {
	if r := tw.held[title]; r != nil {
		return r.Hold()
	}
	return Hold{Holder: "nobody"}
}

// errorKind names the engine's error as its status code, else by its text.
func errorKind(err error) string {
	var kinds []string
	for code, e := range statusErrors {
		if errors.Is(err, e) {
			kinds = append(kinds, code)
		}
	}
	if len(kinds) == 0 {
		return err.Error()
	}
	slices.Sort(kinds)
	return strings.Join(kinds, "+")
}
