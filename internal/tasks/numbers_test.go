package tasks

import (
	"testing"
	"time"

	"claimdesk/internal/keys"

	"github.com/redis/go-redis/v9"
)

// A queue's numbers: sampled per minute (ready now, claims, completions
// and deaths within the minute), kept a day.
func TestNumbers(t *testing.T) {
	onEachBackend(t, func(e *env) {
		e.queue = e.newQueue(Queue{MaxAttempts: 1})
		for range 4 {
			e.add("job", 50)
		}
		if err := e.store.SampleNumbers(e.ctx, e.queue); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Minute)
		a, b := e.claim("olga"), e.claim("olga")
		e.complete(a)
		if err := e.store.SampleNumbers(e.ctx, e.queue); err != nil {
			t.Fatal(err)
		}
		if _, err := e.store.Fail(e.ctx, b.Job.ID, b.Hold(), "no"); err != nil {
			t.Fatal(err)
		}
		if err := e.store.SampleNumbers(e.ctx, e.queue); err != nil { // the same minute, sampled again
			t.Fatal(err)
		}
		ns, err := e.store.Numbers(e.ctx, e.queue)
		if err != nil || len(ns) != 2 {
			t.Fatalf("numbers = %+v, %v", ns, err)
		}
		start := e.clock.Now().Truncate(time.Minute)
		want := []Minute{
			{At: start.Add(-time.Minute), Ready: 4},
			{At: start, Ready: 2, Claims: 2, Completed: 1, Dead: 1},
		}
		for i := range want {
			if !ns[i].At.Equal(want[i].At) || ns[i].Ready != want[i].Ready || ns[i].Claims != want[i].Claims ||
				ns[i].Completed != want[i].Completed || ns[i].Dead != want[i].Dead {
				t.Fatalf("minute %d = %+v, want %+v", i, ns[i], want[i])
			}
		}
		// A day later, those minutes are gone.
		e.clock.Advance(NumbersKept*time.Minute + time.Minute)
		if err := e.store.SampleNumbers(e.ctx, e.queue); err != nil {
			t.Fatal(err)
		}
		if ns, _ := e.store.Numbers(e.ctx, e.queue); len(ns) != 1 || ns[0].Ready != 2 {
			t.Fatalf("a day later = %+v", ns)
		}
	})
}

// The oldest waiting job is known whatever the claim order: a new urgent
// job is claimed first, an old ordinary one waits longest. Held-back jobs
// of a capped batch wait too; claimed, given back, they wait since they came.
func TestOldestWaiting(t *testing.T) {
	onEachBackend(t, func(e *env) {
		e.queue = e.newQueue(Queue{})
		if st := e.stats(); st.OldestWaitingSince != nil {
			t.Fatalf("empty queue: oldest waiting since %v", st.OldestWaitingSince)
		}
		old := e.add("old and ordinary", 10)
		e.clock.Advance(time.Hour)
		e.add("new and urgent", 90)
		st := e.stats()
		if st.OldestWaitingSince == nil || !st.OldestWaitingSince.Equal(old.CreatedAt) || st.NextWaitingSince.Equal(old.CreatedAt) {
			t.Fatalf("oldest since %v, next since %v; want the old job's %v and not", st.OldestWaitingSince, st.NextWaitingSince, old.CreatedAt)
		}
		// Claimed, it no longer waits; given back, it waits since it came.
		e.claim("olga") // the urgent one
		r := e.claim("olga")
		if r.Job.ID != old.ID {
			t.Fatalf("claimed %s, want the old job", r.Job.Title)
		}
		if st := e.stats(); st.OldestWaitingSince != nil {
			t.Fatalf("nothing waits, yet oldest since %v", st.OldestWaitingSince)
		}
		e.clock.Advance(time.Minute)
		if _, err := e.store.Release(e.ctx, r.Job.ID, r.Hold()); err != nil {
			t.Fatal(err)
		}
		if st := e.stats(); st.OldestWaitingSince == nil || !st.OldestWaitingSince.Equal(old.CreatedAt) {
			t.Fatalf("given back: oldest since %v, want %v", st.OldestWaitingSince, old.CreatedAt)
		}
		// The minute's sample says how long it has waited.
		if err := e.store.SampleNumbers(e.ctx, e.queue); err != nil {
			t.Fatal(err)
		}
		ns, _ := e.store.Numbers(e.ctx, e.queue)
		if len(ns) != 1 || ns[0].OldestWait != time.Hour+time.Minute {
			t.Fatalf("numbers = %+v, want the oldest wait 1h1m", ns)
		}
	})
}

// A queue whose ready jobs all wait in line in the order they came keeps
// no waiting index: its oldest wait is the first in line's (lib.lua, The
// oldest wait). The first job lined up otherwise ends that for good: the
// queue's ready jobs are indexed at once, those of the same call too, and
// the oldest wait stays known; in a queue with more ready jobs than are
// indexed at once, the cron job's walk indexes them.
func TestPlainQueue(t *testing.T) {
	onEachBackend(t, func(e *env) {
		p50, p60 := 50, 60
		var k keys.Queue
		fresh := func() {
			e.queue = e.newQueue(Queue{})
			k = keysFor(e.queue)
		}
		plain := func() string { return e.rdb.HGet(e.ctx, k.Conf(), "plain").Val() }
		oldest := func(want time.Time) {
			t.Helper()
			if st := e.stats(); st.OldestWaitingSince == nil || !st.OldestWaitingSince.Equal(want) {
				t.Fatalf("oldest waiting since %v, want %v", st.OldestWaitingSince, want)
			}
		}
		// Every ready job indexed since its run_at: n of them.
		indexed := func(n int) {
			t.Helper()
			if p, whole := plain(), e.rdb.HGet(e.ctx, k.Conf(), "waiting_indexed").Val(); p != "" || whole != "1" {
				t.Fatalf("plain %q, waiting_indexed %q: want neither plain nor unindexed", p, whole)
			}
			waits, err := e.rdb.ZRangeWithScores(e.ctx, k.Waiting(), 0, -1).Result()
			if err != nil || len(waits) != n {
				t.Fatalf("%d jobs in the waiting index (%v), want %d", len(waits), err, n)
			}
			for _, z := range waits {
				j, err := e.store.Get(e.ctx, globalID(z.Member.(string), e.queue))
				if err != nil || j.State != StateReady || float64(ms(j.RunAt)) != z.Score {
					t.Fatalf("%s waits since %v in the index: %+v, %v", z.Member, z.Score, j, err)
				}
			}
		}

		fresh()
		if plain() != "new" {
			t.Fatalf("a new queue: plain %q, want new", plain())
		}
		first := e.add("first", 50)
		e.clock.Advance(time.Hour)
		second := e.add("second", 50)
		if plain() == "" || e.rdb.Exists(e.ctx, k.Waiting()).Val() != 0 {
			t.Fatalf("one priority: plain %q, waiting index kept", plain())
		}
		oldest(first.CreatedAt)
		r := e.claim("olga")
		oldest(second.CreatedAt)
		if _, err := e.store.Release(e.ctx, r.Job.ID, r.Hold()); err != nil {
			t.Fatal(err)
		}
		oldest(first.CreatedAt)
		// Two more like them, then another priority, in one call.
		e.clock.Advance(time.Minute)
		if _, err := e.store.Enqueue(e.ctx, e.queue, "pat", []NewJob{
			{Title: "a", Priority: &p50}, {Title: "b", Priority: &p50}, {Title: "urgent", Priority: &p60}}); err != nil {
			t.Fatal(err)
		}
		indexed(5)
		oldest(first.CreatedAt)
		if r := e.claim("olga"); r.Job.Title != "urgent" {
			t.Fatalf("claimed %q, want the urgent job", r.Job.Title)
		}
		indexed(4)

		// An index an earlier version kept meanwhile is trusted: it alone
		// knows what that version lined up.
		fresh()
		e.add("first", 50)
		e.clock.Advance(time.Minute)
		second = e.add("second", 50)
		if err := e.rdb.ZAdd(e.ctx, k.Waiting(), redis.Z{Score: float64(ms(second.CreatedAt)), Member: localID(second.ID)}).Err(); err != nil {
			t.Fatal(err)
		}
		if err := e.rdb.HSet(e.ctx, k.Conf(), "waiting_indexed", "1").Err(); err != nil {
			t.Fatal(err)
		}
		oldest(second.CreatedAt)
		e.add("third", 50)
		if n := e.rdb.ZCard(e.ctx, k.Waiting()).Val(); n != 2 {
			t.Fatalf("%d jobs in the earlier version's index, want the third filed there too", n)
		}

		// A job its batch holds back ends it too.
		fresh()
		first = e.add("first", 50)
		e.clock.Advance(time.Minute)
		one := 1
		if _, _, err := e.store.CreateBatch(e.ctx, e.queue, "pat", NewBatch{Title: "capped", MaxConcurrent: &one,
			Jobs: []NewJob{{Title: "x"}, {Title: "y"}}}); err != nil {
			t.Fatal(err)
		}
		indexed(3)
		oldest(first.CreatedAt)

		// Past INDEX_AT_ONCE ready jobs, the walk indexes them.
		fresh()
		many := make([]NewJob, MaxBatch)
		for i := range many {
			many[i] = NewJob{Title: "job", Priority: &p50}
		}
		first = e.add("first", 50)
		if _, err := e.store.Enqueue(e.ctx, e.queue, "pat", many); err != nil {
			t.Fatal(err)
		}
		e.add("urgent", 60)
		if st := e.stats(); plain() != "" || st.OldestWaitingSince != nil {
			t.Fatalf("plain %q, oldest since %v: want neither, until the walk", plain(), st.OldestWaitingSince)
		}
		for more := true; more; {
			var err error
			if _, more, err = e.store.IndexWaiting(e.ctx, e.queue, 500); err != nil {
				t.Fatal(err)
			}
		}
		indexed(MaxBatch + 2)
		oldest(first.CreatedAt)
	})
}

// A queue made before the waiting index was kept is indexed by the cron
// job, a bounded step at a time, while its jobs go on changing.
func TestIndexWaiting(t *testing.T) {
	onEachBackend(t, func(e *env) {
		e.queue = e.newQueue(Queue{})
		// More jobs than Redis keeps in a small hash (512 by default),
		// which HSCAN returns whole.
		e.add("first", 50)
		e.clock.Advance(time.Second)
		later := make([]NewJob, 699)
		for i := range later {
			later[i] = NewJob{Title: "job"}
		}
		if _, err := e.store.Enqueue(e.ctx, e.queue, "pat", later); err != nil {
			t.Fatal(err)
		}
		// As an earlier version left it: no index, not marked whole, not
		// plain.
		k := keysFor(e.queue)
		if err := e.rdb.Del(e.ctx, k.Waiting()).Err(); err != nil {
			t.Fatal(err)
		}
		if err := e.rdb.HDel(e.ctx, k.Conf(), "waiting_indexed", "plain").Err(); err != nil {
			t.Fatal(err)
		}
		if st := e.stats(); st.OldestWaitingSince != nil {
			t.Fatalf("not indexed: oldest since %v, want unknown", st.OldestWaitingSince)
		}
		steps, indexed := 0, 0
		for {
			n, more, err := e.store.IndexWaiting(e.ctx, e.queue, 50)
			if err != nil {
				t.Fatal(err)
			}
			indexed += n
			if steps++; steps == 1 {
				e.claim("olga") // changes meanwhile are the scripts' to index
			}
			if !more {
				break
			}
			if steps > 100 {
				t.Fatal("the walk does not end")
			}
		}
		if steps < 3 {
			t.Fatalf("indexed in %d steps of 50: not bounded", steps)
		}
		if got := e.rdb.ZCard(e.ctx, k.Waiting()).Val(); got != 699 || indexed < 699 {
			t.Fatalf("%d jobs waiting in the index (%d indexed), want the 699 ready", got, indexed)
		}
		st := e.stats()
		if st.OldestWaitingSince == nil || !st.OldestWaitingSince.Equal(e.clock.Now()) {
			t.Fatalf("oldest since %v, want the later jobs' %v", st.OldestWaitingSince, e.clock.Now())
		}
		if n, more, err := e.store.IndexWaiting(e.ctx, e.queue, 50); n != 0 || more || err != nil {
			t.Fatalf("indexed again: %d, %v, %v", n, more, err)
		}
	})
}

// Dead today counts the dead jobs that died since the UTC day began: not
// those of yesterday, nor one requeued since.
func TestDeadToday(t *testing.T) {
	onEachBackend(t, func(e *env) {
		e.queue = e.newQueue(Queue{MaxAttempts: 1})
		die := func() *Job {
			e.add("job", 50)
			r := e.claim("olga")
			if _, err := e.store.Fail(e.ctx, r.Job.ID, r.Hold(), "no"); err != nil {
				t.Fatal(err)
			}
			return r.Job
		}
		// The clock starts at 09:00: one dies just before midnight, two
		// after it.
		e.clock.Advance(15*time.Hour - time.Second)
		die()
		e.clock.Advance(2 * time.Second)
		first, _ := die(), die()
		if st := e.stats(); st.Dead != 3 || st.DeadToday != 2 {
			t.Fatalf("dead %d, today %d; want 3 and 2", st.Dead, st.DeadToday)
		}
		if _, _, err := e.store.Requeue(e.ctx, first.ID, "sam"); err != nil {
			t.Fatal(err)
		}
		if st := e.stats(); st.Dead != 2 || st.DeadToday != 1 {
			t.Fatalf("one requeued: dead %d, today %d; want 2 and 1", st.Dead, st.DeadToday)
		}
		e.clock.Advance(24 * time.Hour)
		if st := e.stats(); st.Dead != 2 || st.DeadToday != 0 {
			t.Fatalf("a day later: dead %d, today %d; want 2 and 0", st.Dead, st.DeadToday)
		}
	})
}

// A minute's completions of jobs with a due time, and those before it,
// are the rise of the day's counters since the sample before; the day's
// first minute counts from the day's start.
func TestNumbersOfDueTimes(t *testing.T) {
	onEachBackend(t, func(e *env) {
		e.queue = e.newQueue(Queue{LeaseSeconds: 3600, SLASeconds: 600})
		sample := func() {
			t.Helper()
			if err := e.store.SampleNumbers(e.ctx, e.queue); err != nil {
				t.Fatal(err)
			}
		}
		for range 4 {
			e.add("job", 50)
		}
		sample()
		e.clock.Advance(time.Minute)
		e.complete(e.claim("olga"))
		a, b := e.claim("olga"), e.claim("olga")
		sample()
		e.clock.Advance(12 * time.Minute)
		e.complete(a)
		e.complete(b)
		sample()
		// The next day's first minute, the last job completed then.
		day := e.clock.Now().Truncate(24 * time.Hour).Add(24 * time.Hour)
		e.clock.Advance(day.Add(-time.Minute).Sub(e.clock.Now()))
		sample()
		c := e.claim("olga")
		e.clock.Advance(2 * time.Minute)
		e.complete(c)
		sample()
		ns, err := e.store.Numbers(e.ctx, e.queue)
		if err != nil || len(ns) != 5 {
			t.Fatalf("numbers = %+v, %v", ns, err)
		}
		for i, want := range [][2]int64{{0, 0}, {1, 1}, {2, 0}, {0, 0}, {1, 0}} {
			if ns[i].DueCompleted != want[0] || ns[i].OnTime != want[1] {
				t.Errorf("minute %d: %d completed with a due time, %d before it; want %v", i, ns[i].DueCompleted, ns[i].OnTime, want)
			}
		}
	})
}
