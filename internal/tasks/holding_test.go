package tasks

import (
	"reflect"
	"slices"
	"testing"
	"time"
)

// Holding reads one person's reservations across queues, soonest deadline
// first, and follows every way a reservation ends.
func TestHolding(t *testing.T) {
	onEachBackend(t, func(e *env) {
		other := e.newQueue(Queue{LeaseSeconds: 60})
		for i := range 4 {
			e.add("job", i)
		}
		e.addJob(other, NewJob{Title: "elsewhere"})
		a1 := e.claim("alice")
		e.clock.Advance(time.Second)
		a2 := e.claim("alice")
		b1 := e.claim("bob")
		a3, err := e.store.Claim(e.ctx, other, "alice")
		if err != nil || a3 == nil {
			e.t.Fatalf("claim from %s: %v, %v", other, a3, err)
		}
		ids := func(op string) []string {
			e.t.Helper()
			held, err := e.holding(op, []string{e.queue, other, "no-such-queue", "Not A Name"})
			if err != nil {
				e.t.Fatal(err)
			}
			var out []string
			for _, j := range held {
				if j.ReservedBy != op || j.State != StateReserved || string(j.Payload) != "{}" {
					e.t.Fatalf("%s holds %+v", op, j)
				}
				out = append(out, j.ID)
			}
			return out
		}
		// other's lease (60 s) ends before the first queue's (300 s).
		if got, want := ids("alice"), []string{a3.Job.ID, a1.Job.ID, a2.Job.ID}; !slices.Equal(got, want) {
			e.t.Fatalf("alice holds %v, want %v (soonest deadline first)", got, want)
		}
		if got := ids("bob"); !slices.Equal(got, []string{b1.Job.ID}) {
			e.t.Fatalf("bob holds %v", got)
		}
		if got := ids("al"); len(got) != 0 {
			e.t.Fatalf("a prefix of a name holds %v", got)
		}

		// Completed, completed-and-next, given back, force-released: gone
		// from the holder's, and the next claim filed.
		if _, err := e.store.Complete(e.ctx, a1.Job.ID, a1.Hold(), nil); err != nil {
			e.t.Fatal(err)
		}
		_, next, _, err := e.store.CompleteNext(e.ctx, a2.Job.ID, a2.Hold(), nil)
		if err != nil || next == nil {
			e.t.Fatalf("complete and next: %v, %v", next, err)
		}
		if got := ids("alice"); !slices.Equal(got, []string{a3.Job.ID, next.Job.ID}) {
			e.t.Fatalf("after completing two, alice holds %v", got)
		}
		if _, err := e.store.Release(e.ctx, next.Job.ID, next.Hold()); err != nil {
			e.t.Fatal(err)
		}
		if _, _, err := e.store.Requeue(e.ctx, b1.Job.ID, "sam"); err != nil {
			e.t.Fatal(err)
		}
		if got := ids("bob"); len(got) != 0 {
			e.t.Fatalf("bob still holds %v after a force release", got)
		}
		// Time runs out: the reclaim takes it from alice's.
		e.clock.Advance(2 * time.Minute)
		if _, _, err := e.store.ReclaimExpired(e.ctx, other, 10); err != nil {
			e.t.Fatal(err)
		}
		if got := ids("alice"); len(got) != 0 {
			e.t.Fatalf("alice still holds %v", got)
		}
	})
}

// Reservations made before the holding index was kept are filed under
// their holders by the next reclaim.
func TestHoldingIndexedByReclaim(t *testing.T) {
	onEachBackend(t, func(e *env) {
		e.add("one", 0)
		e.add("two", 0)
		r1, r2 := e.claim("alice"), e.claim("bob")
		if err := e.rdb.Del(e.ctx, keysFor(e.queue).Holding()).Err(); err != nil {
			e.t.Fatal(err)
		}
		if held, err := e.holding("alice", []string{e.queue}); err != nil || len(held) != 0 {
			e.t.Fatalf("without the index: %v, %v", held, err)
		}
		if _, _, err := e.store.ReclaimExpired(e.ctx, e.queue, 1); err != nil {
			e.t.Fatal(err)
		}
		if _, _, err := e.store.ReclaimExpired(e.ctx, e.queue, 1); err != nil {
			e.t.Fatal(err)
		}
		for op, want := range map[string]string{"alice": r1.Job.ID, "bob": r2.Job.ID} {
			held, err := e.holding(op, []string{e.queue})
			if err != nil || len(held) != 1 || held[0].ID != want {
				e.t.Fatalf("%s holds %v (%v), want %s", op, held, err, want)
			}
		}
	})
}

// The walk that files them goes in steps (a ZSCAN from a cursor kept
// between calls, so no call reads every reservation): a reclaim of limit
// 10 files about 10 of 300 reservations, and the calls that follow go on
// where it stopped until every one is filed.
func TestHoldingIndexedInSteps(t *testing.T) {
	onEachBackend(t, func(e *env) {
		const n = 300
		e.enqueueMany(n)
		for range n {
			e.claim("olga")
		}
		holding := keysFor(e.queue).Holding()
		if err := e.rdb.Del(e.ctx, holding).Err(); err != nil {
			e.t.Fatal(err)
		}
		calls := 0
		for filed := int64(0); filed < n; calls++ {
			if calls == n {
				e.t.Fatalf("%d reclaims filed only %d of %d reservations", calls, filed, n)
			}
			if _, _, err := e.store.ReclaimExpired(e.ctx, e.queue, 10); err != nil {
				e.t.Fatal(err)
			}
			var err error
			if filed, err = e.rdb.ZCard(e.ctx, holding).Result(); err != nil {
				e.t.Fatal(err)
			}
			if calls == 0 && filed > 3*10 {
				e.t.Fatalf("one reclaim of limit 10 filed %d reservations", filed)
			}
		}
		held, err := e.holding("olga", []string{e.queue})
		if err != nil || len(held) != min(n, MaxHolding) {
			e.t.Fatalf("olga holds %d (%v), want %d", len(held), err, min(n, MaxHolding))
		}
	})
}

// Queues reads every queue's settings and counts at once.
func TestQueues(t *testing.T) {
	onEachBackend(t, func(e *env) {
		other := e.newQueue(Queue{LeaseSeconds: 60, MaxAttempts: 2})
		e.add("one", 0)
		e.add("two", 0)
		e.claim("alice")
		all, err := e.store.Queues(e.ctx)
		if err != nil {
			e.t.Fatal(err)
		}
		found := 0
		for _, q := range all {
			switch q.Queue.Name {
			case e.queue:
				found++
				if !reflect.DeepEqual(q.Stats, e.stats()) || q.Stats.Ready != 1 || q.Stats.Reserved != 1 {
					e.t.Fatalf("%s: %+v, Stats says %+v", e.queue, q.Stats, e.stats())
				}
			case other:
				found++
				want, err := e.store.Queue(e.ctx, other)
				if err != nil || q.Queue != want || q.Queue.LeaseSeconds != 60 || q.Stats.Ready != 0 {
					e.t.Fatalf("%s: %+v %+v, want settings %+v (%v)", other, q.Queue, q.Stats, want, err)
				}
			}
		}
		if found != 2 {
			e.t.Fatalf("Queues listed %d of the test's 2 queues", found)
		}
	})
}

// QueuesNamed reads the named queues' settings and counts, in the order
// named, and leaves out the names of no queue: gone, never made, or not a
// queue's name at all.
func TestQueuesNamed(t *testing.T) {
	onEachBackend(t, func(e *env) {
		other := e.newQueue(Queue{LeaseSeconds: 60})
		gone := e.newQueue(Queue{})
		if err := e.store.DeleteQueue(e.ctx, gone); err != nil {
			e.t.Fatal(err)
		}
		e.add("one", 0)
		got, err := e.store.QueuesNamed(e.ctx, []string{other, gone, "never-" + other, "not a name!", e.queue})
		if err != nil {
			e.t.Fatal(err)
		}
		if len(got) != 2 || got[0].Queue.Name != other || got[1].Queue.Name != e.queue {
			e.t.Fatalf("QueuesNamed answered %+v, want %s then %s", got, other, e.queue)
		}
		if got[0].Queue.LeaseSeconds != 60 || !reflect.DeepEqual(got[1].Stats, e.stats()) || got[1].Stats.Ready != 1 {
			e.t.Fatalf("QueuesNamed: %+v %+v, Stats says %+v", got[0].Queue, got[1].Stats, e.stats())
		}
		if none, err := e.store.QueuesNamed(e.ctx, nil); err != nil || len(none) != 0 {
			e.t.Fatalf("QueuesNamed of none: %v, %v", none, err)
		}
	})
}

// holding is what op holds in the queues, as Mine answers it.
func (e *env) holding(op string, queues []string) ([]*Job, error) {
	held, _, err := e.store.Mine(e.ctx, op, nil, queues)
	return held, err
}
