package tasks

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// eachBackend is onEachBackend with the backend's subtest passed to fn, so
// that t.Fatal stops that subtest, from its own goroutine.
func eachBackend(t *testing.T, fn func(t *testing.T, e *env)) {
	t.Helper()
	onEachBackend(t, func(e *env) { fn(e.t.(*testing.T), e) })
}

// intRef returns a pointer to n, for the optional fields of NewJob and
// NewBatch.
func intRef(n int) *int { return &n }

// createBatch creates a batch in the env's queue, failing the test on error,
// and returns it with its jobs in the order given.
func (e *env) createBatch(nb NewBatch) (*Batch, []*Job) {
	e.t.Helper()
	b, out, err := e.store.CreateBatch(e.ctx, e.queue, "pat", nb)
	if err != nil {
		e.t.Fatalf("CreateBatch(%q): %v", nb.Title, err)
	}
	jobs := make([]*Job, len(out))
	for i, o := range out {
		jobs[i] = o.Job
	}
	return b, jobs
}

// addToBatch adds jobs to an open batch, failing the test on error.
func (e *env) addToBatch(id string, jobs ...NewJob) (*Batch, []*Job) {
	e.t.Helper()
	b, out, err := e.store.AddToBatch(e.ctx, id, "pat", jobs)
	if err != nil {
		e.t.Fatalf("AddToBatch(%s): %v", id, err)
	}
	added := make([]*Job, len(out))
	for i, o := range out {
		added[i] = o.Job
	}
	return b, added
}

// titled returns n jobs titled prefix 0, prefix 1, ...
func titled(prefix string, n int) []NewJob {
	jobs := make([]NewJob, n)
	for i := range jobs {
		jobs[i] = NewJob{Title: fmt.Sprintf("%s %d", prefix, i)}
	}
	return jobs
}

// complete completes the reservation, failing the test on error.
func (e *env) complete(r *Reservation) *Job {
	e.t.Helper()
	j, err := e.store.Complete(e.ctx, r.Job.ID, r.Hold(), nil)
	if err != nil {
		e.t.Fatalf("Complete(%s): %v", r.Job.Title, err)
	}
	return j
}

// batchRecordOf reads the batch's record as the scripts store it, with the
// counters GetBatch does not show (admitted).
func (e *env) batchRecordOf(id string) batchRecord {
	e.t.Helper()
	q, _ := queueOf(id)
	raw, err := e.rdb.HGet(e.ctx, keysFor(q).Batches(), localID(id)).Result()
	if err != nil {
		e.t.Fatalf("HGET batch %s: %v", id, err)
	}
	var r batchRecord
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		e.t.Fatalf("decode batch %s: %v", id, err)
	}
	return r
}

// batchJobIDs returns the ids of the batch's jobs, from the members index.
func (e *env) batchJobIDs(id string) []string {
	e.t.Helper()
	q, _ := queueOf(id)
	bid := localID(id)
	members, err := e.rdb.ZRangeByLex(e.ctx, keysFor(q).Members(),
		&redis.ZRangeBy{Min: "[" + bid + "|", Max: "(" + bid + "}"}).Result()
	if err != nil {
		e.t.Fatalf("members of %s: %v", id, err)
	}
	ids := make([]string, len(members))
	for i, m := range members {
		ids[i] = globalID(strings.TrimPrefix(m, bid+"|"), q)
	}
	return ids
}

// batchCounts are a batch's counters, to compare in one go.
type batchCounts struct{ Total, Ready, Reserved, Completed, Dead, Canceled int }

func countsOf(b *Batch) batchCounts {
	return batchCounts{b.Total, b.Ready, b.Reserved, b.Completed, b.Dead, b.Canceled}
}

// checkBatch checks a batch against the real state of its jobs and returns
// it: each counter equals the number of its jobs in that state, every job
// names it, Admitted counts its jobs in the claim line and the rest of its
// ready jobs are parked, its slots are neither exceeded nor left free while
// a job waits, and its state agrees with its counters and FinishedAt.
func (e *env) checkBatch(id string) *Batch {
	e.t.Helper()
	b, err := e.store.GetBatch(e.ctx, id)
	if err != nil {
		e.t.Fatalf("GetBatch(%s): %v", id, err)
	}
	rec := e.batchRecordOf(id)
	k := keysFor(b.Queue)
	line, err := e.rdb.ZRange(e.ctx, k.Ready(), 0, -1).Result()
	if err != nil {
		e.t.Fatal(err)
	}
	parked, err := e.rdb.ZRangeByLex(e.ctx, k.Parked(),
		&redis.ZRangeBy{Min: "[" + localID(id) + "|", Max: "(" + localID(id) + "}"}).Result()
	if err != nil {
		e.t.Fatal(err)
	}
	ids := e.batchJobIDs(id)
	var real batchRecord
	readyOnly := 0
	for _, jid := range ids {
		if to, moved, err := e.store.MovedTo(e.ctx, jid); err != nil || moved {
			e.countMoved(id, jid, to, &real)
			continue
		}
		j := e.get(jid)
		if j.BatchID != id {
			e.t.Fatalf("job %s of batch %s has BatchID %q", jid, id, j.BatchID)
		}
		switch j.State {
		case StateReady:
			real.Ready++
			readyOnly++
		case StateScheduled:
			real.Ready++
		case StateReserved:
			real.Reserved++
		case StateCompleted:
			real.Completed++
		case StateDead:
			real.Dead++
		case StateCanceled:
			real.Canceled++
		}
		if slices.Contains(line, localID(jid)) {
			real.Admitted++
		}
	}
	for _, p := range parked {
		parts := strings.SplitN(p, "|", 3)
		if len(parts) != 3 || !slices.Contains(ids, globalID(parts[2], b.Queue)) || e.get(globalID(parts[2], b.Queue)).State != StateReady {
			e.t.Fatalf("batch %s: stray parked member %q", id, p)
		}
	}
	real.Total = len(ids)
	if got, want := [8]int{rec.Total, rec.Ready, rec.Reserved, rec.Completed, rec.Dead, rec.Canceled, rec.Admitted, rec.Moved},
		[8]int{real.Total, real.Ready, real.Reserved, real.Completed, real.Dead, real.Canceled, real.Admitted, real.Moved}; got != want {
		e.t.Fatalf("batch %s: total, ready, reserved, completed, dead, canceled, admitted, moved = %v, real %v", id, got, want)
	}
	if countsOf(b) != (batchCounts{rec.Total, rec.Ready, rec.Reserved, rec.Completed, rec.Dead, rec.Canceled}) || b.Moved != rec.Moved {
		e.t.Fatalf("GetBatch %+v disagrees with the record %+v", b, rec)
	}
	if real.Admitted+len(parked) != readyOnly {
		e.t.Fatalf("batch %s: %d ready jobs, but %d in line and %d parked", id, readyOnly, real.Admitted, len(parked))
	}
	limit := rec.MaxConcurrent
	switch {
	case limit == 0 && len(parked) > 0:
		e.t.Fatalf("batch %s has no cap but %d parked jobs", id, len(parked))
	case limit > 0 && rec.Reserved+rec.Admitted > limit:
		e.t.Fatalf("batch %s: %d reserved + %d in line, over its cap %d", id, rec.Reserved, rec.Admitted, limit)
	case limit > 0 && len(parked) > 0 && b.State != BatchCanceled && rec.Reserved+rec.Admitted < limit:
		e.t.Fatalf("batch %s: a slot is free (%d reserved + %d in line < %d) while %d jobs wait",
			id, rec.Reserved, rec.Admitted, limit, len(parked))
	}
	ended := b.Completed+b.Dead+b.Canceled == b.Total
	finished := b.FinishedAt != nil
	var ok bool
	switch b.State {
	case BatchOpen:
		ok = !finished
	case BatchSealed:
		ok = !ended && !finished
	case BatchCompleted:
		ok = ended && finished && b.Dead+b.Canceled == 0
	case BatchCompletedWithFailures:
		ok = ended && finished && b.Dead+b.Canceled > 0
	case BatchCanceled:
		ok = ended == finished
	}
	if !ok {
		e.t.Fatalf("batch %s: state %q, finished %v, with counts %+v", id, b.State, b.FinishedAt, countsOf(b))
	}
	// Retention finds ended batches in batchdone, and only those.
	_, err = e.rdb.ZScore(e.ctx, k.BatchDone(), localID(id)).Result()
	if inDone := err == nil; inDone != finished {
		e.t.Fatalf("batch %s: in batchdone %v, finished %v (%v)", id, inDone, finished, err)
	}
	return b
}

// countMoved counts in real the job jid of batch id that moved to another
// queue, as to: in the counter its batch's record of it names (keys'
// Away), which must agree with the job's state there unless the job
// changed since and its batch is yet to be told (keys' Returns).
func (e *env) countMoved(id, jid, to string, real *batchRecord) {
	e.t.Helper()
	queue, _ := queueOf(jid)
	counter, err := e.rdb.HGet(e.ctx, keysFor(queue).Away(), localID(jid)).Result()
	if err != nil {
		e.t.Fatalf("moved job %s of batch %s: its batch's record of it: %v", jid, id, err)
	}
	j := e.get(to)
	if j.BatchID != id {
		e.t.Fatalf("job %s of batch %s moved as %s, of batch %q", jid, id, to, j.BatchID)
	}
	state := "moved"
	if j.State.Terminal() {
		state = string(j.State)
	}
	there, _ := queueOf(to)
	if _, err := e.rdb.ZScore(e.ctx, keysFor(there).Returns(), localID(to)).Result(); counter != state && err != nil {
		e.t.Fatalf("moved job %s: its batch counts it %s, it is %s, and nothing says so (%v)", to, counter, j.State, err)
	}
	switch counter {
	case "moved":
		real.Moved++
	case "completed":
		real.Completed++
	case "dead":
		real.Dead++
	case "canceled":
		real.Canceled++
	default:
		e.t.Fatalf("moved job %s counted as %q", to, counter)
	}
}

// wantBatch checks the batch (checkBatch), then its state, whether it
// ended, and its counters.
func (e *env) wantBatch(id string, state BatchState, ended bool, want batchCounts) *Batch {
	e.t.Helper()
	b := e.checkBatch(id)
	if b.State != state || b.Ended() != ended || countsOf(b) != want {
		e.t.Fatalf("batch %s: state %q ended %v counts %+v, want %q %v %+v",
			id, b.State, b.Ended(), countsOf(b), state, ended, want)
	}
	return b
}

func TestBatchCreateAndGet(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		plain := e.add("plain", 50)
		b, jobs := e.createBatch(NewBatch{Title: "  Review 4 docs ", Priority: intRef(80), Jobs: []NewJob{
			{Title: "first"}, {Title: "second"}, {Title: "low", Priority: intRef(10)},
			{Title: "later", DelaySeconds: 60},
		}})
		now := e.clock.Now()
		if b.Queue != e.queue || b.Title != "Review 4 docs" || b.Priority != 80 || b.MaxConcurrent != nil ||
			b.State != BatchSealed || !b.CreatedAt.Equal(now) || b.FinishedAt != nil {
			t.Fatalf("batch = %+v", b)
		}
		if _, ok := queueOf(b.ID); !ok || b.ID == plain.ID {
			t.Fatalf("batch id %q", b.ID)
		}
		if countsOf(b) != (batchCounts{Total: 4, Ready: 4}) {
			t.Fatalf("counts = %+v", countsOf(b))
		}
		// Jobs without a priority take the batch's; all name the batch.
		for i, want := range []struct {
			priority int
			state    State
		}{{80, StateReady}, {80, StateReady}, {10, StateReady}, {80, StateScheduled}} {
			for _, j := range []*Job{jobs[i], e.get(jobs[i].ID)} {
				if j.BatchID != b.ID || j.Priority != want.priority || j.State != want.state {
					t.Fatalf("job %d = %+v", i, j)
				}
			}
		}
		if e.get(plain.ID).BatchID != "" {
			t.Fatal("a plain job names a batch")
		}
		got, err := e.store.GetBatch(e.ctx, b.ID)
		if err != nil || !reflect.DeepEqual(got, b) {
			t.Fatalf("GetBatch = %+v %v, want %+v", got, err, b)
		}
		// Claimed by priority across batch and plain jobs; a claim names
		// the batch of its job.
		for _, want := range []string{"first", "second", "plain", "low"} {
			r := e.claim("ann")
			if r.Job.Title != want {
				t.Fatalf("claimed %q, want %q", r.Job.Title, want)
			}
			wantBatch := b.ID
			if want == "plain" {
				wantBatch = ""
			}
			if r.Job.BatchID != wantBatch {
				t.Fatalf("claimed %q with BatchID %q, want %q", want, r.Job.BatchID, wantBatch)
			}
		}
		e.claimNone("ann")
		e.wantBatch(b.ID, BatchSealed, false, batchCounts{Total: 4, Ready: 1, Reserved: 3})

		// A batch without a priority gives its jobs the default.
		d, djobs := e.createBatch(NewBatch{Title: "default", Jobs: titled("d", 2)})
		if d.Priority != DefaultPriority || djobs[0].Priority != DefaultPriority || djobs[1].Priority != DefaultPriority {
			t.Fatalf("default priority: batch %d, jobs %d %d", d.Priority, djobs[0].Priority, djobs[1].Priority)
		}
		if s := e.stats(); s.Ready != 2 || s.Scheduled != 1 || s.Reserved != 4 || s.Held != 0 {
			t.Fatalf("stats = %+v", s)
		}
	})
}

func TestBatchMaxConcurrent(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		byTitle := map[string]*Job{}
		b, jobs := e.createBatch(NewBatch{Title: "capped", MaxConcurrent: intRef(2), Jobs: []NewJob{
			{Title: "p50", Priority: intRef(50)}, {Title: "p40", Priority: intRef(40)},
			{Title: "p60", Priority: intRef(60)}, {Title: "p30", Priority: intRef(30)},
			{Title: "p70", Priority: intRef(70)},
		}})
		for _, j := range jobs {
			byTitle[j.Title] = j
		}
		if b.MaxConcurrent == nil || *b.MaxConcurrent != 2 {
			t.Fatalf("MaxConcurrent = %v", b.MaxConcurrent)
		}
		other, _ := e.createBatch(NewBatch{Title: "other", Priority: intRef(20), Jobs: titled("other", 1)})
		e.add("plain", 10)
		// All 7 are ready; 3 of the capped batch wait for a slot.
		if s := e.stats(); s.Ready != 7 || s.Held != 3 {
			t.Fatalf("stats = %+v", s)
		}
		e.wantBatch(b.ID, BatchSealed, false, batchCounts{Total: 5, Ready: 5})

		// The cap admits the best two; once both are reserved, claims go
		// on to the rest of the queue instead of being blocked.
		held := map[string]*Reservation{}
		for _, c := range []struct{ op, want string }{{"ann", "p70"}, {"bob", "p60"}, {"cat", "other 0"}, {"dave", "plain"}} {
			r := e.claim(c.op)
			if r.Job.Title != c.want {
				t.Fatalf("%s claimed %q, want %q", c.op, r.Job.Title, c.want)
			}
			held[c.want] = r
		}
		e.claimNone("eve")
		if s := e.stats(); s.Ready != 3 || s.Held != 3 || s.Reserved != 4 {
			t.Fatalf("stats = %+v", s)
		}
		e.wantBatch(b.ID, BatchSealed, false, batchCounts{Total: 5, Ready: 3, Reserved: 2})
		e.wantBatch(other.ID, BatchSealed, false, batchCounts{Total: 1, Reserved: 1})

		// A held-back job may be canceled; the batch stays full.
		if _, _, err := e.store.Cancel(e.ctx, byTitle["p30"].ID, "sam", false); err != nil {
			t.Fatal(err)
		}
		e.claimNone("eve")
		if s := e.stats(); s.Held != 2 || s.Canceled != 1 {
			t.Fatalf("stats = %+v", s)
		}
		// Each freed slot admits the best waiting job, in rank order.
		e.complete(held["p70"])
		r := e.claim("eve")
		if r.Job.Title != "p50" {
			t.Fatalf("eve claimed %q, want p50", r.Job.Title)
		}
		e.claimNone("fay")
		e.complete(held["p60"])
		e.complete(r)
		r = e.claim("fay")
		if r.Job.Title != "p40" {
			t.Fatalf("fay claimed %q, want p40", r.Job.Title)
		}
		e.complete(r)
		e.wantBatch(b.ID, BatchCompletedWithFailures, true, batchCounts{Total: 5, Completed: 4, Canceled: 1})
		if s := e.stats(); s.Held != 0 || s.Ready != 0 {
			t.Fatalf("stats = %+v", s)
		}
	})
}

// slotWay is one way a reservation ends; do applies it to reservation r.
// ends says whether the job ends, rather than going back in line.
type slotWay struct {
	name string
	ends bool
	do   func(e *env, r *Reservation)
}

// testLease is the default lease of the test queues.
const testLease = 300 * time.Second

var slotWays = []slotWay{
	{"complete", true, func(e *env, r *Reservation) { e.complete(r) }},
	{"release", false, func(e *env, r *Reservation) {
		if _, err := e.store.Release(e.ctx, r.Job.ID, r.Hold()); err != nil {
			e.t.Fatalf("Release: %v", err)
		}
	}},
	{"skip", false, func(e *env, r *Reservation) {
		if _, err := e.store.Skip(e.ctx, r.Job.ID, r.Hold()); err != nil {
			e.t.Fatalf("Skip: %v", err)
		}
	}},
	{"fail", false, func(e *env, r *Reservation) {
		if _, err := e.store.Fail(e.ctx, r.Job.ID, r.Hold(), "could not"); err != nil {
			e.t.Fatalf("Fail: %v", err)
		}
	}},
	{"reclaim", false, func(e *env, r *Reservation) {
		e.clock.Advance(testLease + time.Second)
		moved, more, err := e.reclaim(10)
		if err != nil || more || len(moved) != 1 || moved[0].JobID != r.Job.ID || moved[0].BatchID != r.Job.BatchID {
			e.t.Fatalf("ReclaimExpired = %+v %v %v", moved, more, err)
		}
	}},
	// The next claim takes the expired reservation back itself.
	{"lease runs out", false, func(e *env, r *Reservation) { e.clock.Advance(testLease + time.Second) }},
	{"forced cancel", true, func(e *env, r *Reservation) {
		if _, holder, err := e.store.Cancel(e.ctx, r.Job.ID, "sam", true); err != nil || holder != r.Job.ReservedBy {
			e.t.Fatalf("Cancel(force) = %q %v", holder, err)
		}
	}},
	{"forced release", false, func(e *env, r *Reservation) {
		if _, holder, err := e.store.Requeue(e.ctx, r.Job.ID, "sam"); err != nil || holder != r.Job.ReservedBy {
			e.t.Fatalf("Requeue(reserved) = %q %v", holder, err)
		}
	}},
}

// TestBatchSlotFrees ends the one reservation of a batch capped at 1 in
// each way there is, and checks that the slot frees: the best waiting job
// of the batch is claimable at once, and only one.
func TestBatchSlotFrees(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		for _, way := range slotWays {
			e.queue = e.newQueue(Queue{})
			b, jobs := e.createBatch(NewBatch{Title: way.name, MaxConcurrent: intRef(1), Jobs: []NewJob{
				{Title: "a", Priority: intRef(95)}, {Title: "b", Priority: intRef(90)},
			}})
			e.add("plain", 10)
			r := e.claim("ann")
			if r.Job.ID != jobs[0].ID {
				t.Fatalf("%s: ann claimed %q, want a", way.name, r.Job.Title)
			}
			// The batch is full, yet the queue is not blocked.
			e.complete(e.claim("bob"))
			e.claimNone("cat")
			if s := e.stats(); s.Held != 1 || s.Ready != 1 {
				t.Fatalf("%s: stats = %+v", way.name, s)
			}

			way.do(e, r)
			if way.name != "complete" { // a retried complete is answered again
				_, err := e.store.Complete(e.ctx, r.Job.ID, r.Hold(), nil)
				wantErr(t, way.name+": complete with the old token", err, ErrReservationLost)
			}
			// a keeps its place in line and so comes before b, unless it ended.
			want := jobs[0]
			if way.ends {
				want = jobs[1]
			}
			next := e.claim("cat")
			if next.Job.ID != want.ID || next.Job.BatchID != b.ID {
				t.Fatalf("%s: cat claimed %q, want %q", way.name, next.Job.Title, want.Title)
			}
			e.claimNone("dave")
			counts := batchCounts{Total: 2, Ready: 1, Reserved: 1}
			switch way.name {
			case "complete":
				counts = batchCounts{Total: 2, Reserved: 1, Completed: 1}
			case "forced cancel":
				counts = batchCounts{Total: 2, Reserved: 1, Canceled: 1}
			}
			e.wantBatch(b.ID, BatchSealed, false, counts)
			if s := e.stats(); s.Reserved != 1 || s.Held != int64(counts.Ready) {
				t.Fatalf("%s: stats = %+v", way.name, s)
			}
		}
	})
}

// TestBatchScheduledJobsWaitForASlot checks that a scheduled job of a
// full capped batch, once due, waits for a slot like any other.
func TestBatchScheduledJobsWaitForASlot(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		b, jobs := e.createBatch(NewBatch{Title: "capped", MaxConcurrent: intRef(1), Jobs: []NewJob{
			{Title: "now", Priority: intRef(10)}, {Title: "later", Priority: intRef(90), DelaySeconds: 60},
		}})
		r := e.claim("ann")
		if r.Job.ID != jobs[0].ID {
			t.Fatalf("ann claimed %q", r.Job.Title)
		}
		e.clock.Advance(61 * time.Second)
		e.claimNone("bob") // promotes the due job: it is held
		if j := e.get(jobs[1].ID); j.State != StateReady {
			t.Fatalf("due job is %s", j.State)
		}
		if s := e.stats(); s.Held != 1 || s.Ready != 1 || s.Scheduled != 0 {
			t.Fatalf("stats = %+v", s)
		}
		e.wantBatch(b.ID, BatchSealed, false, batchCounts{Total: 2, Ready: 1, Reserved: 1})
		e.complete(r)
		if r = e.claim("bob"); r.Job.ID != jobs[1].ID {
			t.Fatalf("bob claimed %q", r.Job.Title)
		}
		e.complete(r)
		e.wantBatch(b.ID, BatchCompleted, true, batchCounts{Total: 2, Completed: 2})
	})
}

// TestBatchRetryWithIdempotencyKeys repeats batch requests whose jobs carry
// idempotency keys, as a producer does when it lost the answer. Repeating
// AddToBatch adds nothing. Repeating CreateBatch must not give a batch that
// is already over while the jobs it names have not even started: the
// engine currently makes a second, empty batch, completed at once (see the
// report that came with this test).
func TestBatchRetryWithIdempotencyKeys(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		open, _ := e.createBatch(NewBatch{Title: "open", Open: true})
		add := []NewJob{{Title: "a", IdempotencyKey: "add-a"}, {Title: "b", IdempotencyKey: "add-b"}}
		_, first := e.addToBatch(open.ID, add...)
		b, again, err := e.store.AddToBatch(e.ctx, open.ID, "pat", add)
		if err != nil || b.Total != 2 || again[0].Created || again[0].Job.ID != first[0].ID || again[1].Job.ID != first[1].ID {
			t.Fatalf("repeated AddToBatch = %+v %v", b, err)
		}
		e.wantBatch(open.ID, BatchOpen, false, batchCounts{Total: 2, Ready: 2})

		create := NewBatch{Title: "sealed", Jobs: []NewJob{{Title: "c", IdempotencyKey: "create-c"}}}
		orig, _ := e.createBatch(create)
		retry, out, err := e.store.CreateBatch(e.ctx, e.queue, "pat", create)
		if err != nil {
			t.Logf("repeated CreateBatch refused: %v", err) // one fair answer
			return
		}
		if out[0].Created || out[0].Job.ID == "" || e.get(out[0].Job.ID).State != StateReady {
			t.Fatalf("repeated CreateBatch gave job %+v", out[0])
		}
		if retry.ID != orig.ID {
			t.Errorf("repeated CreateBatch gave batch %s, want the first, %s", retry.ID, orig.ID)
		}
		if retry.Ended() {
			t.Errorf("repeated CreateBatch gave batch %s, %s with %d jobs, though its job %s (of batch %s) is still ready",
				retry.ID, retry.State, retry.Total, out[0].Job.ID, out[0].Job.BatchID)
		}
		e.wantBatch(orig.ID, BatchSealed, false, batchCounts{Total: 1, Ready: 1})
	})
}

func TestBatchOpenAddSeal(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		b, jobs := e.createBatch(NewBatch{Title: "open", Priority: intRef(70), Open: true})
		if len(jobs) != 0 || b.State != BatchOpen {
			t.Fatalf("open batch = %+v with %d jobs", b, len(jobs))
		}
		e.wantBatch(b.ID, BatchOpen, false, batchCounts{})

		b, jobs = e.addToBatch(b.ID, NewJob{Title: "one"}, NewJob{Title: "two", Priority: intRef(5)})
		if countsOf(b) != (batchCounts{Total: 2, Ready: 2}) || b.State != BatchOpen {
			t.Fatalf("after adding: %+v", b)
		}
		if jobs[0].BatchID != b.ID || jobs[0].Priority != 70 || jobs[1].Priority != 5 {
			t.Fatalf("added jobs %+v %+v", jobs[0], jobs[1])
		}
		// Every job done, but the batch is open: it has not completed.
		e.complete(e.claim("ann"))
		e.complete(e.claim("ann"))
		e.wantBatch(b.ID, BatchOpen, false, batchCounts{Total: 2, Completed: 2})

		// Adding is all or nothing: one bad job refuses the request.
		_, _, err := e.store.AddToBatch(e.ctx, b.ID, "pat", []NewJob{{Title: "fine"}, {Title: ""}})
		wantErr(t, "add a bad job", err, ErrInvalid)
		var v *ValidationError
		if !errors.As(err, &v) || v.Field != "jobs[1].title" {
			t.Fatalf("add a bad job: error %v does not name jobs[1].title", err)
		}
		_, _, err = e.store.AddToBatch(e.ctx, b.ID, "pat", make([]NewJob, MaxBatch+1))
		wantErr(t, "add too many jobs", err, ErrTooLarge)
		_, _, err = e.store.AddToBatch(e.ctx, b.ID, "pat", nil)
		wantErr(t, "add no jobs", err, ErrInvalid)
		e.wantBatch(b.ID, BatchOpen, false, batchCounts{Total: 2, Completed: 2})

		b, jobs = e.addToBatch(b.ID, NewJob{Title: "three"})
		if jobs[0].Title != "three" || b.Total != 3 {
			t.Fatalf("third job: %+v, batch %+v", jobs[0], b)
		}
		e.complete(e.claim("ann"))
		e.wantBatch(b.ID, BatchOpen, false, batchCounts{Total: 3, Completed: 3})

		// Sealing a batch whose jobs all ended completes it at once.
		e.clock.Advance(time.Minute)
		sealed, err := e.store.SealBatch(e.ctx, b.ID)
		if err != nil || sealed.State != BatchCompleted || sealed.FinishedAt == nil || !sealed.FinishedAt.Equal(e.clock.Now()) {
			t.Fatalf("SealBatch = %+v %v", sealed, err)
		}
		e.wantBatch(b.ID, BatchCompleted, true, batchCounts{Total: 3, Completed: 3})
		// Sealing again changes nothing; adding is refused.
		e.clock.Advance(time.Minute)
		again, err := e.store.SealBatch(e.ctx, b.ID)
		if err != nil || again.State != BatchCompleted || !again.FinishedAt.Equal(*sealed.FinishedAt) {
			t.Fatalf("second SealBatch = %+v %v", again, err)
		}
		_, _, err = e.store.AddToBatch(e.ctx, b.ID, "pat", []NewJob{{Title: "late"}})
		wantErr(t, "add to a completed batch", err, ErrInvalidState)

		// A batch sealed with jobs still to do is sealed, not done, and
		// takes no more jobs.
		s, sjobs := e.createBatch(NewBatch{Title: "open 2", Open: true, Jobs: titled("s", 2)})
		if s.State != BatchOpen || len(sjobs) != 2 {
			t.Fatalf("open with jobs = %+v", s)
		}
		if s, err = e.store.SealBatch(e.ctx, s.ID); err != nil || s.State != BatchSealed || s.Ended() {
			t.Fatalf("SealBatch = %+v %v", s, err)
		}
		if s, err = e.store.SealBatch(e.ctx, s.ID); err != nil || s.State != BatchSealed || s.Ended() {
			t.Fatalf("second SealBatch = %+v %v", s, err)
		}
		_, _, err = e.store.AddToBatch(e.ctx, s.ID, "pat", []NewJob{{Title: "late"}})
		wantErr(t, "add to a sealed batch", err, ErrInvalidState)
		_, _, err = e.store.AddToBatch(e.ctx, s.ID, "pat", nil)
		wantErr(t, "add nothing to a sealed batch", err, ErrInvalidState)
		e.wantBatch(s.ID, BatchSealed, false, batchCounts{Total: 2, Ready: 2})
		e.complete(e.claim("ann"))
		e.wantBatch(s.ID, BatchSealed, false, batchCounts{Total: 2, Ready: 1, Completed: 1})
		e.complete(e.claim("ann"))
		e.wantBatch(s.ID, BatchCompleted, true, batchCounts{Total: 2, Completed: 2})

		// An open batch sealed empty has nothing left to do.
		empty, _ := e.createBatch(NewBatch{Title: "empty", Open: true})
		if empty, err = e.store.SealBatch(e.ctx, empty.ID); err != nil || empty.State != BatchCompleted || !empty.Ended() {
			t.Fatalf("seal an empty batch = %+v %v", empty, err)
		}
		e.wantBatch(empty.ID, BatchCompleted, true, batchCounts{})
	})
}

func TestBatchCompletion(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		// All completed: completed.
		ok, _ := e.createBatch(NewBatch{Title: "fine", Jobs: titled("fine", 2)})
		e.complete(e.claim("ann"))
		e.wantBatch(ok.ID, BatchSealed, false, batchCounts{Total: 2, Ready: 1, Completed: 1})
		e.clock.Advance(time.Second)
		e.complete(e.claim("ann"))
		b := e.wantBatch(ok.ID, BatchCompleted, true, batchCounts{Total: 2, Completed: 2})
		if !b.FinishedAt.Equal(e.clock.Now()) {
			t.Fatalf("FinishedAt %v, want %v", b.FinishedAt, e.clock.Now())
		}
		_, _, err := e.cancelBatch(ok.ID)
		wantErr(t, "cancel a completed batch", err, ErrInvalidState)
		e.wantBatch(ok.ID, BatchCompleted, true, batchCounts{Total: 2, Completed: 2})

		// One completed, one dead, one canceled: completed with failures.
		mixed, jobs := e.createBatch(NewBatch{Title: "mixed", Jobs: []NewJob{
			{Title: "done", Priority: intRef(90), MaxAttempts: 1},
			{Title: "dies", Priority: intRef(80), MaxAttempts: 1},
			{Title: "withdrawn", Priority: intRef(70), MaxAttempts: 1},
		}})
		e.complete(e.claim("ann"))
		r := e.claim("ann")
		if _, err := e.store.Fail(e.ctx, r.Job.ID, r.Hold(), "broken"); err != nil {
			t.Fatal(err)
		}
		e.wantBatch(mixed.ID, BatchSealed, false, batchCounts{Total: 3, Ready: 1, Completed: 1, Dead: 1})
		if _, _, err := e.store.Cancel(e.ctx, jobs[2].ID, "sam", false); err != nil {
			t.Fatal(err)
		}
		b = e.wantBatch(mixed.ID, BatchCompletedWithFailures, true, batchCounts{Total: 3, Completed: 1, Dead: 1, Canceled: 1})
		_, _, err = e.cancelBatch(mixed.ID)
		wantErr(t, "cancel a batch completed with failures", err, ErrInvalidState)

		// Requeueing its dead job reopens it; it ends again with that job.
		e.clock.Advance(time.Minute)
		if _, _, err := e.store.Requeue(e.ctx, jobs[1].ID, "sam"); err != nil {
			t.Fatal(err)
		}
		e.wantBatch(mixed.ID, BatchSealed, false, batchCounts{Total: 3, Ready: 1, Completed: 1, Canceled: 1})
		e.clock.Advance(time.Minute)
		r = e.claim("bob")
		if r.Job.ID != jobs[1].ID {
			t.Fatalf("bob claimed %q, want the requeued job", r.Job.Title)
		}
		e.complete(r)
		again := e.wantBatch(mixed.ID, BatchCompletedWithFailures, true, batchCounts{Total: 3, Completed: 2, Canceled: 1})
		if !again.FinishedAt.After(*b.FinishedAt) || !again.FinishedAt.Equal(e.clock.Now()) {
			t.Fatalf("FinishedAt %v after reopening, first %v, now %v", again.FinishedAt, b.FinishedAt, e.clock.Now())
		}

		// A batch whose only failure is requeued and then done completes
		// without failures.
		dead, _ := e.createBatch(NewBatch{Title: "retry", Jobs: []NewJob{{Title: "retry", MaxAttempts: 1}}})
		r = e.claim("ann")
		if _, err := e.store.Fail(e.ctx, r.Job.ID, r.Hold(), "broken"); err != nil {
			t.Fatal(err)
		}
		e.wantBatch(dead.ID, BatchCompletedWithFailures, true, batchCounts{Total: 1, Dead: 1})
		if _, _, err := e.store.Requeue(e.ctx, r.Job.ID, "sam"); err != nil {
			t.Fatal(err)
		}
		e.wantBatch(dead.ID, BatchSealed, false, batchCounts{Total: 1, Ready: 1})
		e.complete(e.claim("ann"))
		e.wantBatch(dead.ID, BatchCompleted, true, batchCounts{Total: 1, Completed: 1})
	})
}

// TestBatchCancelGivesBackNothing cancels a batch while one of its jobs is
// reserved, then ends that reservation in each way there is: a job given
// back is canceled rather than put back in line, and the batch ends with it.
func TestBatchCancelGivesBackNothing(t *testing.T) {
	ways := append(slices.Clone(slotWays), slotWay{"fail the last attempt", true, func(e *env, r *Reservation) {
		if _, err := e.store.Fail(e.ctx, r.Job.ID, r.Hold(), "broken"); err != nil {
			e.t.Fatalf("Fail: %v", err)
		}
	}})
	eachBackend(t, func(t *testing.T, e *env) {
		for _, way := range ways {
			e.queue = e.newQueue(Queue{})
			attempts := 0
			if way.name == "fail the last attempt" {
				attempts = 1
			}
			b, jobs := e.createBatch(NewBatch{Title: way.name, MaxConcurrent: intRef(2), Jobs: []NewJob{
				{Title: "held", Priority: intRef(90), MaxAttempts: attempts},
				{Title: "waiting", Priority: intRef(80)},
				{Title: "later", DelaySeconds: 30},
			}})
			r := e.claim("ann")
			if r.Job.ID != jobs[0].ID {
				t.Fatalf("%s: ann claimed %q", way.name, r.Job.Title)
			}
			cb, canceled, err := e.cancelBatch(b.ID)
			slices.Sort(canceled)
			want := []string{jobs[1].ID, jobs[2].ID}
			slices.Sort(want)
			if err != nil || !slices.Equal(canceled, want) || cb.State != BatchCanceled || cb.Ended() {
				t.Fatalf("%s: CancelBatch = %+v %v %v", way.name, cb, canceled, err)
			}
			e.wantBatch(b.ID, BatchCanceled, false, batchCounts{Total: 3, Reserved: 1, Canceled: 2})
			_, _, err = e.store.AddToBatch(e.ctx, b.ID, "pat", []NewJob{{Title: "late"}})
			wantErr(t, way.name+": add to a canceled batch", err, ErrInvalidState)

			way.do(e, r)
			e.claimNone("cat")          // takes back an expired reservation first
			if way.name != "complete" { // a retried complete is answered again
				_, err = e.store.Complete(e.ctx, r.Job.ID, r.Hold(), nil)
				wantErr(t, way.name+": complete with the old token", err, ErrReservationLost)
			}
			state := StateCanceled
			counts := batchCounts{Total: 3, Canceled: 3}
			switch way.name {
			case "complete":
				state, counts = StateCompleted, batchCounts{Total: 3, Completed: 1, Canceled: 2}
			case "fail the last attempt":
				state, counts = StateDead, batchCounts{Total: 3, Dead: 1, Canceled: 2}
			}
			if j := e.get(r.Job.ID); j.State != state || j.ReservedBy != "" || j.SkippedBy != nil {
				t.Fatalf("%s: the held job = %+v, want %s", way.name, j, state)
			}
			ended := e.wantBatch(b.ID, BatchCanceled, true, counts)
			if !ended.FinishedAt.Equal(e.clock.Now()) {
				t.Fatalf("%s: FinishedAt %v, want %v", way.name, ended.FinishedAt, e.clock.Now())
			}
			// Canceling again is harmless; a dead job of a canceled batch
			// stays dead.
			e.clock.Advance(time.Minute)
			cb, canceled, err = e.cancelBatch(b.ID)
			if err != nil || len(canceled) != 0 || cb.State != BatchCanceled || !cb.FinishedAt.Equal(*ended.FinishedAt) {
				t.Fatalf("%s: second CancelBatch = %+v %v %v", way.name, cb, canceled, err)
			}
			if state == StateDead {
				_, _, err = e.store.Requeue(e.ctx, r.Job.ID, "sam")
				wantErr(t, way.name+": requeue a dead job of a canceled batch", err, ErrInvalidState)
			}
			k := keysFor(e.queue)
			if n, _ := e.rdb.Exists(e.ctx, k.Skips(), k.SkipCount(), k.Parked()).Result(); n != 0 {
				t.Fatalf("%s: %d of skips, skipcount, parked left", way.name, n)
			}
			e.wantBatch(b.ID, BatchCanceled, true, counts)
			if s := e.stats(); s.Ready+s.Scheduled+s.Reserved+s.Held != 0 {
				t.Fatalf("%s: stats = %+v", way.name, s)
			}
		}
	})
}

// TestBatchCancelOpenAndEmpty cancels batches that are open, or have no
// job left to cancel.
func TestBatchCancelOpenAndEmpty(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		open, _ := e.createBatch(NewBatch{Title: "open", Open: true, Jobs: titled("o", 2)})
		b, canceled, err := e.cancelBatch(open.ID)
		if err != nil || len(canceled) != 2 || b.State != BatchCanceled || !b.Ended() {
			t.Fatalf("cancel an open batch = %+v %v %v", b, canceled, err)
		}
		e.wantBatch(open.ID, BatchCanceled, true, batchCounts{Total: 2, Canceled: 2})
		if b, err = e.store.SealBatch(e.ctx, open.ID); err != nil || b.State != BatchCanceled {
			t.Fatalf("seal a canceled batch = %+v %v", b, err)
		}
		_, _, err = e.store.AddToBatch(e.ctx, open.ID, "pat", []NewJob{{Title: "late"}})
		wantErr(t, "add to a canceled open batch", err, ErrInvalidState)

		empty, _ := e.createBatch(NewBatch{Title: "empty", Open: true})
		if b, canceled, err = e.cancelBatch(empty.ID); err != nil || len(canceled) != 0 || !b.Ended() {
			t.Fatalf("cancel an empty open batch = %+v %v %v", b, canceled, err)
		}
		e.wantBatch(empty.ID, BatchCanceled, true, batchCounts{})
		e.claimNone("ann")
	})
}

// TestBatchCancelInterrupted runs only the first step of a cancel, as if
// its caller died, and checks that nothing of the batch is handed out in
// between: claims cancel its jobs on the way, promotion cancels its due
// jobs, a capped batch admits nothing more, and a second CancelBatch
// finishes the work.
func TestBatchCancelInterrupted(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		x, xjobs := e.createBatch(NewBatch{Title: "uncapped", Priority: intRef(90), Jobs: []NewJob{
			{Title: "x1"}, {Title: "x2"}, {Title: "x3"}, {Title: "x4", DelaySeconds: 60},
		}})
		y, yjobs := e.createBatch(NewBatch{Title: "capped", Priority: intRef(90), MaxConcurrent: intRef(1),
			Jobs: titled("y", 3)})
		plain := e.add("plain", 10)

		step := func(id string) []string {
			t.Helper()
			var r *reply
			var err error
			ts := e.during(ActionCanceled, func() {
				r, err = e.store.batchScript(e.ctx, batchCancelScript, id, "", 1, "sam")
			})
			if err != nil {
				t.Fatal(err)
			}
			if r.str("batch"); r.str("cursor") == "" || r.done() != nil {
				t.Fatalf("one step of 1 over a batch of several jobs gave no cursor")
			}
			return jobIDs(ts)
		}
		// Members are in id order, so the first step cancels the first job.
		if got := step(x.ID); len(got) != 1 || got[0] != xjobs[0].ID {
			t.Fatalf("first step of x canceled %v", got)
		}
		if got := step(y.ID); len(got) != 1 || got[0] != yjobs[0].ID {
			t.Fatalf("first step of y canceled %v", got)
		}
		e.wantBatch(x.ID, BatchCanceled, false, batchCounts{Total: 4, Ready: 3, Canceled: 1})
		e.wantBatch(y.ID, BatchCanceled, false, batchCounts{Total: 3, Ready: 2, Canceled: 1})
		if s := e.stats(); s.Held != 2 {
			t.Fatalf("stats = %+v, want y's 2 jobs held", s)
		}

		// x2 and x3 stand in line before the plain job: the claim cancels
		// them and takes the plain job; y admits nothing.
		r := e.claim("ann")
		if r.Job.ID != plain.ID {
			t.Fatalf("ann claimed %q, want plain", r.Job.Title)
		}
		e.claimNone("bob")
		e.wantBatch(x.ID, BatchCanceled, false, batchCounts{Total: 4, Ready: 1, Canceled: 3})
		e.clock.Advance(61 * time.Second)
		if ids, _, err := e.promote(10); err != nil || !slices.Equal(ids, []string{xjobs[3].ID}) {
			t.Fatalf("PromoteDue = %v %v", ids, err)
		}
		if j := e.get(xjobs[3].ID); j.State != StateCanceled {
			t.Fatalf("x4 promoted to %s, want canceled", j.State)
		}
		e.wantBatch(x.ID, BatchCanceled, true, batchCounts{Total: 4, Canceled: 4})

		// Resuming finishes y.
		b, canceled, err := e.cancelBatch(y.ID)
		slices.Sort(canceled)
		if err != nil || !slices.Equal(canceled, []string{yjobs[1].ID, yjobs[2].ID}) || !b.Ended() {
			t.Fatalf("resumed CancelBatch = %+v %v %v", b, canceled, err)
		}
		e.wantBatch(y.ID, BatchCanceled, true, batchCounts{Total: 3, Canceled: 3})
		if b, canceled, err = e.cancelBatch(x.ID); err != nil || len(canceled) != 0 || !b.Ended() {
			t.Fatalf("CancelBatch of an ended cancel = %+v %v %v", b, canceled, err)
		}
		if s := e.stats(); s.Held != 0 || s.Ready != 0 || s.Reserved != 1 || s.Canceled != 7 {
			t.Fatalf("stats = %+v", s)
		}
	})
}

// TestBatchCancelLarge cancels batches that take one, two and three steps
// of batchCancelStep, capped so that most of their jobs are parked, with a
// few scheduled and two reserved. Every job not reserved must end canceled,
// once, and the batch must end with the last reserved one.
func TestBatchCancelLarge(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		for _, size := range []int{batchCancelStep, batchCancelStep + 1, MaxBatch + 200} {
			e.queue = e.newQueue(Queue{})
			first := min(size, MaxBatch)
			b, jobs := e.createBatch(NewBatch{Title: "large", Open: true, MaxConcurrent: intRef(5), Jobs: titled("job", first)})
			if size > first {
				more := titled("more", size-first)
				for i := range more {
					if i%10 == 0 {
						more[i].DelaySeconds = 60
					}
				}
				_, added := e.addToBatch(b.ID, more...)
				jobs = append(jobs, added...)
			}
			if _, err := e.store.SealBatch(e.ctx, b.ID); err != nil {
				t.Fatal(err)
			}
			held := []*Reservation{e.claim("ann"), e.claim("bob")}
			e.checkBatch(b.ID)

			cb, canceled, err := e.cancelBatch(b.ID)
			if err != nil || cb.State != BatchCanceled || cb.Ended() || cb.Canceled != size-2 || cb.Reserved != 2 {
				t.Fatalf("size %d: CancelBatch = %+v %v", size, cb, err)
			}
			seen := map[string]bool{}
			for _, id := range canceled {
				if seen[id] {
					t.Fatalf("size %d: job %s canceled twice", size, id)
				}
				seen[id] = true
			}
			for _, j := range jobs {
				isHeld := j.ID == held[0].Job.ID || j.ID == held[1].Job.ID
				if got := e.get(j.ID).State; isHeld != (got == StateReserved) || !isHeld && (got != StateCanceled || !seen[j.ID]) {
					t.Fatalf("size %d: job %s is %s after the cancel (reported canceled: %v)", size, j.Title, got, seen[j.ID])
				}
			}
			if len(canceled) != size-2 {
				t.Fatalf("size %d: %d reported canceled, want %d", size, len(canceled), size-2)
			}
			if s := e.stats(); s.Ready != 0 || s.Held != 0 || s.Scheduled != 0 || s.Reserved != 2 || s.Canceled != int64(size-2) {
				t.Fatalf("size %d: stats = %+v", size, s)
			}
			e.wantBatch(b.ID, BatchCanceled, false, batchCounts{Total: size, Reserved: 2, Canceled: size - 2})
			e.complete(held[0])
			e.wantBatch(b.ID, BatchCanceled, false, batchCounts{Total: size, Reserved: 1, Completed: 1, Canceled: size - 2})
			e.complete(held[1])
			e.wantBatch(b.ID, BatchCanceled, true, batchCounts{Total: size, Completed: 2, Canceled: size - 2})
		}
	})
}

func TestBatchNotFound(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		job := e.add("plain", 50)
		b, _ := e.createBatch(NewBatch{Title: "real", Open: true})
		ids := []string{
			"", "nope", job.ID, b.ID + "x", b.ID[:26] + ".NOT_A_QUEUE",
			strings.Replace(b.ID, b.ID[:4], "7ZZZ", 1), // well-formed, no such batch
			newID("no-such-queue", e.clock.Now()),      // well-formed, no such queue
		}
		for _, id := range ids {
			_, err := e.store.GetBatch(e.ctx, id)
			wantErr(t, fmt.Sprintf("GetBatch(%q)", id), err, ErrBatchNotFound)
			_, _, err = e.store.AddToBatch(e.ctx, id, "pat", []NewJob{{Title: "x"}})
			wantErr(t, fmt.Sprintf("AddToBatch(%q)", id), err, ErrBatchNotFound)
			_, err = e.store.SealBatch(e.ctx, id)
			wantErr(t, fmt.Sprintf("SealBatch(%q)", id), err, ErrBatchNotFound)
			_, _, err = e.cancelBatch(id)
			wantErr(t, fmt.Sprintf("CancelBatch(%q)", id), err, ErrBatchNotFound)
		}
		// None of it touched the queue, the real batch, or a batch id
		// used as a job id.
		_, err := e.store.Get(e.ctx, b.ID)
		wantErr(t, "Get(batch id)", err, ErrNotFound)
		e.wantBatch(b.ID, BatchOpen, false, batchCounts{})
		if j := e.get(job.ID); j.State != StateReady || j.BatchID != "" {
			t.Fatalf("plain job = %+v", j)
		}
		list, err := e.store.ListBatches(e.ctx, e.queue, 0)
		if err != nil || len(list) != 1 || list[0].ID != b.ID {
			t.Fatalf("ListBatches = %v %v", list, err)
		}
		n, err := e.rdb.Exists(e.ctx, keysFor("no-such-queue").All()...).Result()
		if err != nil || n != 0 {
			t.Fatalf("batch calls on an unknown queue created %d keys (%v)", n, err)
		}
	})
}

func TestBatchValidation(t *testing.T) {
	one := []NewJob{{Title: "job"}}
	tests := []struct {
		name  string
		batch NewBatch
		want  error
		field string
	}{
		{"empty title", NewBatch{Title: "", Jobs: one}, ErrInvalid, "title"},
		{"blank title", NewBatch{Title: "   ", Jobs: one}, ErrInvalid, "title"},
		{"long title", NewBatch{Title: strings.Repeat("é", 201), Jobs: one}, ErrInvalid, "title"},
		{"control characters in title", NewBatch{Title: "a\nb", Jobs: one}, ErrInvalid, "title"},
		{"priority below 0", NewBatch{Title: "b", Priority: intRef(-1), Jobs: one}, ErrInvalid, "priority"},
		{"priority above 100", NewBatch{Title: "b", Priority: intRef(101), Jobs: one}, ErrInvalid, "priority"},
		{"max_concurrent 0", NewBatch{Title: "b", MaxConcurrent: intRef(0), Jobs: one}, ErrInvalid, "max_concurrent"},
		{"negative max_concurrent", NewBatch{Title: "b", MaxConcurrent: intRef(-3), Jobs: one}, ErrInvalid, "max_concurrent"},
		{"max_concurrent over the limit", NewBatch{Title: "b", MaxConcurrent: intRef(MaxConcurrentLimit + 1), Jobs: one}, ErrInvalid, "max_concurrent"},
		{"no jobs, sealed", NewBatch{Title: "b"}, ErrInvalid, "jobs"},
		{"empty jobs, sealed", NewBatch{Title: "b", Jobs: []NewJob{}}, ErrInvalid, "jobs"},
		{"a bad job title", NewBatch{Title: "b", Jobs: []NewJob{{Title: "ok"}, {Title: " "}}}, ErrInvalid, "jobs[1].title"},
		{"a bad first job", NewBatch{Title: "b", Open: true, Jobs: []NewJob{{Title: "x", Payload: json.RawMessage(`[1]`)}}}, ErrInvalid, "jobs[0].payload"},
		{"a bad job priority", NewBatch{Title: "b", Jobs: []NewJob{{Title: "x", Priority: intRef(200)}}}, ErrInvalid, "jobs[0].priority"},
		{"too many jobs", NewBatch{Title: "b", Jobs: make([]NewJob, MaxBatch+1)}, ErrTooLarge, "jobs"},
	}
	eachBackend(t, func(t *testing.T, e *env) {
		for _, tc := range tests {
			b, out, err := e.store.CreateBatch(e.ctx, e.queue, "pat", tc.batch)
			wantErr(t, tc.name, err, tc.want)
			var v *ValidationError
			if !errors.As(err, &v) || v.Field != tc.field || b != nil || out != nil {
				t.Errorf("%s: error %v (batch %v), want field %q", tc.name, err, b, tc.field)
			}
		}
		_, _, err := e.store.CreateBatch(e.ctx, "no-such-queue", "pat", NewBatch{Title: "b", Jobs: one})
		wantErr(t, "unknown queue", err, ErrQueueNotFound)
		_, _, err = e.store.CreateBatch(e.ctx, "Bad Name", "pat", NewBatch{Title: "b", Jobs: one})
		wantErr(t, "malformed queue name", err, ErrQueueNotFound)
		_, err = e.store.ListBatches(e.ctx, "Bad Name", 0)
		wantErr(t, "list a malformed queue", err, ErrQueueNotFound)

		// Invalid input changed nothing.
		list, err := e.store.ListBatches(e.ctx, e.queue, 0)
		if err != nil || len(list) != 0 {
			t.Fatalf("ListBatches after bad input = %v %v", list, err)
		}
		if s := e.stats(); s != (Stats{Queue: e.queue}) {
			t.Fatalf("bad input changed the queue: %+v", s)
		}
		k := keysFor(e.queue)
		if n, _ := e.rdb.Exists(e.ctx, k.Batches(), k.BatchIndex(), k.Members(), k.Parked(), k.Meta()).Result(); n != 0 {
			t.Fatalf("bad input left %d batch keys", n)
		}
		n, err := e.rdb.Exists(e.ctx, keysFor("no-such-queue").All()...).Result()
		if err != nil || n != 0 {
			t.Fatalf("a batch for an unknown queue created %d keys (%v)", n, err)
		}

		// The bounds themselves are fine.
		for _, nb := range []NewBatch{
			{Title: strings.Repeat("é", 200), Priority: intRef(0), MaxConcurrent: intRef(1), Jobs: one},
			{Title: "b", Priority: intRef(100), MaxConcurrent: intRef(MaxConcurrentLimit), Jobs: make([]NewJob, MaxBatch)},
		} {
			for i := range nb.Jobs {
				nb.Jobs[i].Title = "job"
			}
			b, out, err := e.store.CreateBatch(e.ctx, e.queue, "pat", nb)
			if err != nil || b.Total != len(nb.Jobs) || len(out) != len(nb.Jobs) || *b.MaxConcurrent != *nb.MaxConcurrent {
				t.Fatalf("CreateBatch at the bounds = %+v %v", b, err)
			}
			e.checkBatch(b.ID)
		}
		if s := e.stats(); s.Ready != 1+MaxBatch || s.Held != 0 {
			t.Fatalf("stats = %+v", s)
		}
	})
}

func TestBatchList(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		// Far ahead of every other test's clock, and of this test's in
		// earlier runs (-count), so that these are the newest batches of
		// all queues.
		e.clock.Advance(20*365*24*time.Hour + time.Duration(queueSeq.Add(1))*time.Hour)
		var want []string // newest first
		first := e.queue
		second := e.newQueue(Queue{})
		for i, q := range []string{first, second, first, first} {
			e.clock.Advance(time.Second)
			b, _, err := e.store.CreateBatch(e.ctx, q, "pat", NewBatch{Title: fmt.Sprint("b", i), Jobs: titled("j", 1)})
			if err != nil {
				t.Fatal(err)
			}
			want = append([]string{b.ID}, want...)
		}
		ids := func(list []*Batch, err error) []string {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, b := range list {
				out = append(out, b.ID)
			}
			return out
		}
		if got := ids(e.store.ListBatches(e.ctx, first, 0)); !slices.Equal(got, []string{want[0], want[1], want[3]}) {
			t.Fatalf("ListBatches(first) = %v, want %v", got, []string{want[0], want[1], want[3]})
		}
		if got := ids(e.store.ListBatches(e.ctx, first, 2)); !slices.Equal(got, want[:2]) {
			t.Fatalf("ListBatches(first, 2) = %v", got)
		}
		if got := ids(e.store.ListBatches(e.ctx, second, 0)); !slices.Equal(got, want[2:3]) {
			t.Fatalf("ListBatches(second) = %v", got)
		}
		if got := ids(e.store.ListBatches(e.ctx, "", 4)); !slices.Equal(got, want) {
			t.Fatalf("ListBatches(all, 4) = %v, want %v", got, want)
		}
		if got := ids(e.store.ListBatches(e.ctx, "", 3)); !slices.Equal(got, want[:3]) {
			t.Fatalf("ListBatches(all, 3) = %v, want %v", got, want[:3])
		}
		list, err := e.store.ListBatches(e.ctx, first, 1)
		if err != nil || list[0].Title != "b3" || list[0].Queue != first || list[0].Total != 1 {
			t.Fatalf("ListBatches(first, 1) = %+v %v", list, err)
		}
		for _, limit := range []int{-1, MaxPageSize + 1} {
			_, err := e.store.ListBatches(e.ctx, first, limit)
			wantErr(t, fmt.Sprint("limit ", limit), err, ErrInvalid)
		}
		list, err = e.store.ListBatches(e.ctx, e.newQueue(Queue{}), 0)
		if err != nil || len(list) != 0 {
			t.Fatalf("ListBatches(empty queue) = %v %v", list, err)
		}
	})
}

// TestBatchRetention checks that Purge drops an ended batch only once both
// its completed and its dead jobs may be gone, whichever retention is the
// longer, and never an unfinished batch.
func TestBatchRetention(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		for _, q := range []Queue{{RetentionSeconds: 3600, DeadRetentionSeconds: 7200}, {RetentionSeconds: 7200, DeadRetentionSeconds: 3600}} {
			t.Run(fmt.Sprintf("%s/retention%d-dead%d", b.name, q.RetentionSeconds, q.DeadRetentionSeconds), func(t *testing.T) {
				t.Parallel()
				e := newEnv(t, b.rdb, q)
				ended, _ := e.createBatch(NewBatch{Title: "ended", Jobs: []NewJob{
					{Title: "done", Priority: intRef(90)}, {Title: "dies", Priority: intRef(80), MaxAttempts: 1},
				}})
				e.complete(e.claim("ann"))
				r := e.claim("ann")
				if _, err := e.store.Fail(e.ctx, r.Job.ID, r.Hold(), "broken"); err != nil {
					t.Fatal(err)
				}
				e.wantBatch(ended.ID, BatchCompletedWithFailures, true, batchCounts{Total: 2, Completed: 1, Dead: 1})
				open, _ := e.createBatch(NewBatch{Title: "open", Priority: intRef(90), Open: true, Jobs: titled("o", 1)})
				e.complete(e.claim("ann"))
				running, _ := e.createBatch(NewBatch{Title: "running", Jobs: titled("r", 1)})
				e.claim("ann")

				shorter := min(q.RetentionSeconds, q.DeadRetentionSeconds)
				longer := max(q.RetentionSeconds, q.DeadRetentionSeconds)
				e.clock.Advance(time.Duration(shorter+1) * time.Second)
				if _, _, err := e.store.Purge(e.ctx, e.queue, 100); err != nil {
					t.Fatal(err)
				}
				if _, err := e.store.GetBatch(e.ctx, ended.ID); err != nil {
					t.Fatalf("batch purged before its longer retention: %v", err)
				}
				e.clock.Advance(time.Duration(longer-shorter) * time.Second)
				n, more, err := e.store.Purge(e.ctx, e.queue, 100)
				if err != nil || more || n == 0 {
					t.Fatalf("Purge = %d %v %v", n, more, err)
				}
				_, err = e.store.GetBatch(e.ctx, ended.ID)
				wantErr(t, "GetBatch of a purged batch", err, ErrBatchNotFound)
				_, err = e.store.SealBatch(e.ctx, ended.ID)
				wantErr(t, "SealBatch of a purged batch", err, ErrBatchNotFound)
				_, _, err = e.cancelBatch(ended.ID)
				wantErr(t, "CancelBatch of a purged batch", err, ErrBatchNotFound)
				// The unfinished ones stay, whatever became of their jobs.
				if b, err := e.store.GetBatch(e.ctx, open.ID); err != nil || b.State != BatchOpen || b.Completed != 1 {
					t.Fatalf("open batch after purge = %+v %v", b, err)
				}
				e.wantBatch(running.ID, BatchSealed, false, batchCounts{Total: 1, Reserved: 1})
				list, err := e.store.ListBatches(e.ctx, e.queue, 0)
				if err != nil || len(list) != 2 || list[0].ID != running.ID || list[1].ID != open.ID {
					t.Fatalf("ListBatches after purge = %v %v", list, err)
				}
				k := keysFor(e.queue)
				if n, _ := e.rdb.ZCard(e.ctx, k.BatchDone()).Result(); n != 0 {
					t.Fatalf("%d ended batches left in batchdone", n)
				}
				if len(e.batchJobIDs(ended.ID)) != 0 || len(e.batchJobIDs(open.ID)) != 0 {
					t.Fatal("purged jobs are still members of their batch")
				}
			})
		}
	}
}

// TestBatchRaceManyClaimers has many operators claim from one capped batch
// at once, each completing, releasing, skipping, failing or abandoning what
// it got, while time jumps past the lease and expired reservations are
// reclaimed, and a checker watches the cap the whole time. In the end every
// job has ended exactly once and the batch's counters are the truth.
func TestBatchRaceManyClaimers(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		const jobs, limit, claimers = 60, 3, 16
		all := titled("job", jobs)
		for i := range all {
			all[i].MaxAttempts = 3 // so that some die
		}
		b, created := e.createBatch(NewBatch{Title: "race", MaxConcurrent: intRef(limit), Jobs: all})
		k := keysFor(e.queue)
		var done atomic.Bool
		var mu sync.Mutex
		completed := map[string]int{} // successful Completes per job

		var wg sync.WaitGroup
		run := func(fn func()) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				fn()
			}()
		}
		stop := time.Now().Add(20 * time.Second)
		over := func() bool { return done.Load() || time.Now().After(stop) }

		for i := range claimers {
			run(func() {
				op := fmt.Sprintf("op%02d", i)
				rnd := rand.New(rand.NewPCG(uint64(i), 11))
				for !over() {
					r, err := e.store.Claim(e.ctx, e.queue, op)
					if err != nil {
						t.Errorf("%s: Claim: %v", op, err)
						return
					}
					if r == nil {
						if cur, err := e.store.GetBatch(e.ctx, b.ID); err == nil && cur.Ended() {
							done.Store(true)
						}
						time.Sleep(time.Millisecond)
						continue
					}
					if r.Job.BatchID != b.ID {
						t.Errorf("%s claimed %s of batch %q", op, r.Job.ID, r.Job.BatchID)
					}
					time.Sleep(time.Duration(rnd.IntN(2000)) * time.Microsecond) // the work
					switch n := rnd.IntN(100); {
					case n < 70:
						_, err = e.store.Complete(e.ctx, r.Job.ID, r.Hold(), nil)
						if err == nil {
							mu.Lock()
							completed[r.Job.ID]++
							mu.Unlock()
						}
					case n < 78:
						_, err = e.store.Release(e.ctx, r.Job.ID, r.Hold())
					case n < 85:
						_, err = e.store.Fail(e.ctx, r.Job.ID, r.Hold(), "could not")
					case n < 92:
						_, err = e.store.Skip(e.ctx, r.Job.ID, r.Hold())
					default:
						// Abandon it: the reclaimer takes it back.
					}
					// The clock may have moved past the lease meanwhile.
					if err != nil && !errors.Is(err, ErrReservationLost) {
						t.Errorf("%s: %v", op, err)
					}
				}
			})
		}

		// Time jumps past the lease now and then; expired reservations are
		// reclaimed; a supervisor sometimes takes a job back.
		run(func() {
			for i := 0; !over(); i++ {
				time.Sleep(10 * time.Millisecond)
				e.clock.Advance(testLease + time.Second)
				if _, _, err := e.reclaim(100); err != nil {
					t.Errorf("ReclaimExpired: %v", err)
				}
				if i%3 == 0 {
					if held, _ := e.rdb.ZRange(e.ctx, k.Reserved(), 0, 0).Result(); len(held) == 1 {
						_, _, err := e.store.Requeue(e.ctx, globalID(held[0], e.queue), "sam")
						if err != nil && !errors.Is(err, ErrInvalidState) {
							t.Errorf("Requeue: %v", err)
						}
					}
				}
			}
		})

		// The checker reads the batch, and atomically its record with the
		// queue's reserved and ready indexes (the batch's jobs are the only
		// jobs of the queue).
		var checks atomic.Int64
		run(func() {
			for !over() {
				cur, err := e.store.GetBatch(e.ctx, b.ID)
				if err != nil {
					t.Errorf("GetBatch: %v", err)
					return
				}
				if cur.Reserved > limit || min(cur.Ready, cur.Reserved, cur.Completed, cur.Dead, cur.Canceled) < 0 {
					t.Errorf("batch %+v: over its cap or a counter below 0", countsOf(cur))
					return
				}
				var raw *redis.StringCmd
				var reserved, ready *redis.IntCmd
				if _, err := e.rdb.TxPipelined(e.ctx, func(p redis.Pipeliner) error {
					raw = p.HGet(e.ctx, k.Batches(), localID(b.ID))
					reserved = p.ZCard(e.ctx, k.Reserved())
					ready = p.ZCard(e.ctx, k.Ready())
					return nil
				}); err != nil {
					t.Errorf("snapshot: %v", err)
					return
				}
				var r batchRecord
				if err := json.Unmarshal([]byte(raw.Val()), &r); err != nil {
					t.Errorf("decode: %v", err)
					return
				}
				if r.Reserved > limit || r.Reserved+r.Admitted > limit ||
					min(r.Ready, r.Reserved, r.Completed, r.Dead, r.Canceled, r.Admitted) < 0 ||
					r.Ready+r.Reserved+r.Completed+r.Dead+r.Canceled != r.Total ||
					int64(r.Reserved) != reserved.Val() || int64(r.Admitted) != ready.Val() {
					t.Errorf("record %+v with %d reserved and %d in line", r, reserved.Val(), ready.Val())
					return
				}
				checks.Add(1)
			}
		})
		wg.Wait()
		if !done.Load() {
			t.Fatalf("the batch did not end in time: %+v", e.checkBatch(b.ID))
		}
		if checks.Load() == 0 {
			t.Fatal("the checker never ran")
		}

		for _, j := range created {
			got := e.get(j.ID)
			n := completed[j.ID]
			if n > 1 {
				t.Errorf("job %s completed %d times", j.Title, n)
			}
			if got.State != StateCompleted && got.State != StateDead || (got.State == StateCompleted) != (n == 1) {
				t.Errorf("job %s ended %s after %d successful completes", j.Title, got.State, n)
			}
		}
		end := e.checkBatch(b.ID)
		if end.State != BatchCompleted && end.State != BatchCompletedWithFailures || !end.Ended() ||
			end.Completed+end.Dead != jobs || end.Completed != len(completed) {
			t.Fatalf("batch at the end = %+v, %d jobs completed", end, len(completed))
		}
		if s := e.stats(); s.Ready+s.Held+s.Reserved+s.Scheduled != 0 {
			t.Fatalf("stats = %+v", s)
		}
		t.Logf("%d completed, %d dead, %d checks", end.Completed, end.Dead, checks.Load())
	})
}

// TestBatchRaceCancelWhileClaiming cancels a large batch while operators
// claim from its queue: once CancelBatch has returned, no claim hands out a
// job of it; the jobs reserved at the time end as their holders decide (a
// release cancels them); every other job of the batch ends canceled; and
// the queue's plain jobs are all done.
func TestBatchRaceCancelWhileClaiming(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		const claimers, plain = 8, 40
		b, created := e.createBatch(NewBatch{Title: "big", Priority: intRef(90), Jobs: titled("job", MaxBatch)})
		e.enqueueMany(plain)
		var canceledDone, done atomic.Bool
		var mu sync.Mutex
		completed := map[string]int{}
		var canceled []string

		var wg sync.WaitGroup
		for i := range claimers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				op := fmt.Sprintf("op%d", i)
				for !done.Load() {
					after := canceledDone.Load()
					r, err := e.store.Claim(e.ctx, e.queue, op)
					if err != nil {
						t.Errorf("%s: Claim: %v", op, err)
						return
					}
					if r == nil {
						time.Sleep(time.Millisecond)
						continue
					}
					if after && r.Job.BatchID != "" {
						t.Errorf("%s claimed %s of the batch after it was canceled", op, r.Job.Title)
					}
					if r.Job.BatchID != "" && i%4 == 0 {
						// Give it back: after the cancel, that cancels it.
						if _, err := e.store.Release(e.ctx, r.Job.ID, r.Hold()); err != nil {
							t.Errorf("%s: Release: %v", op, err)
						}
						continue
					}
					if _, err := e.store.Complete(e.ctx, r.Job.ID, r.Hold(), nil); err != nil {
						t.Errorf("%s: Complete: %v", op, err)
						continue
					}
					mu.Lock()
					completed[r.Job.ID]++
					mu.Unlock()
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(5 * time.Millisecond)
			_, ids, err := e.cancelBatch(b.ID)
			if err != nil {
				t.Errorf("CancelBatch: %v", err)
			}
			mu.Lock()
			canceled = ids
			mu.Unlock()
			canceledDone.Store(true)
		}()
		// Done when the batch has ended and every plain job is completed.
		for stop := time.Now().Add(20 * time.Second); !done.Load(); time.Sleep(5 * time.Millisecond) {
			cur, err := e.store.GetBatch(e.ctx, b.ID)
			if err != nil {
				t.Error(err)
				break
			}
			s := e.stats()
			if canceledDone.Load() && cur.Ended() && s.Completed-int64(cur.Completed) == plain {
				break
			}
			if time.Now().After(stop) {
				t.Errorf("not done in time: batch %+v, stats %+v", cur, s)
				break
			}
		}
		done.Store(true)
		wg.Wait()

		reported := map[string]bool{}
		for _, id := range canceled {
			reported[id] = true
		}
		for _, j := range created {
			got := e.get(j.ID)
			switch {
			case completed[j.ID] > 1:
				t.Errorf("job %s completed %d times", j.Title, completed[j.ID])
			case got.State == StateCompleted && completed[j.ID] != 1,
				got.State != StateCompleted && got.State != StateCanceled,
				reported[j.ID] && got.State != StateCanceled:
				t.Errorf("job %s is %s, completed %d times, reported canceled %v", j.Title, got.State, completed[j.ID], reported[j.ID])
			}
		}
		end := e.checkBatch(b.ID)
		if end.State != BatchCanceled || !end.Ended() || end.Completed+end.Canceled != MaxBatch || end.Canceled < len(canceled) {
			t.Fatalf("batch at the end = %+v, %d reported canceled", end, len(canceled))
		}
		if s := e.stats(); s.Ready+s.Held+s.Reserved != 0 || s.Completed != int64(plain+end.Completed) {
			t.Fatalf("stats = %+v", s)
		}
		t.Logf("%d of the batch completed, %d canceled (%d by CancelBatch)", end.Completed, end.Canceled, len(canceled))
	})
}

// A holder who gives back a job of a canceled batch ends it (canceled), and
// it is recorded as theirs: a retry of the give-back is answered as done,
// their tally counts a give-back (not a supervisor taking it back), and
// the history says both.
func TestGiveBackInACanceledBatch(t *testing.T) {
	onEachBackend(t, func(e *env) {
		b, _ := e.createBatch(NewBatch{Title: "b", Jobs: []NewJob{{Title: "one"}, {Title: "two"}}})
		r := e.claim("ann")
		if _, _, err := e.cancelBatch(b.ID); err != nil {
			e.t.Fatal(err)
		}
		if _, err := e.store.Release(e.ctx, r.Job.ID, r.Hold()); err != nil {
			e.t.Fatalf("release: %v", err)
		}
		j := e.get(r.Job.ID)
		h, _, err := j.History()
		if err != nil {
			e.t.Fatal(err)
		}
		last := h[len(h)-1]
		if j.State != StateCanceled || last.Action != ActionReleased || last.Actor != "ann" || last.To != StateCanceled {
			e.t.Fatalf("job %s, last entry %+v; want canceled by ann's release", j.State, last)
		}
		if _, err := e.store.Release(e.ctx, r.Job.ID, r.Hold()); err != nil {
			e.t.Fatalf("retried release: %v; want it answered as done", err)
		}
		tl, err := e.store.Tallies(e.ctx, []string{e.queue})
		if err != nil {
			e.t.Fatal(err)
		}
		if got := tl["ann"].Today; got.GivenBack != 1 || got.TakenBack != 0 {
			e.t.Fatalf("ann's tally: given back %d, taken back %d; want 1, 0", got.GivenBack, got.TakenBack)
		}
	})
}

// A batch request some of whose jobs' idempotency keys made jobs outside
// that batch is refused, changing nothing: those jobs would be answered as
// the batch's and are not. A repeat of an add to an open batch (its own
// jobs) is answered as before.
func TestBatchKeysMadeElsewhere(t *testing.T) {
	onEachBackend(t, func(e *env) {
		loose := e.add("loose", 50)
		if _, err := e.store.Enqueue(e.ctx, e.queue, "pat", []NewJob{{Title: "keyed", IdempotencyKey: "k-loose"}}); err != nil {
			e.t.Fatal(err)
		}
		other, _ := e.createBatch(NewBatch{Title: "other", Jobs: []NewJob{{Title: "o", IdempotencyKey: "k-other"}}})
		before := e.stats()

		_, _, err := e.store.CreateBatch(e.ctx, e.queue, "pat", NewBatch{Title: "mixed",
			Jobs: []NewJob{{Title: "new", IdempotencyKey: "k-new"}, {Title: "keyed", IdempotencyKey: "k-loose"}}})
		wantErr(e.t, "a new batch with a key made outside it", err, ErrInvalidState)
		open, _ := e.createBatch(NewBatch{Title: "open", Open: true})
		_, _, err = e.store.AddToBatch(e.ctx, open.ID, "pat", []NewJob{{Title: "new", IdempotencyKey: "k-new"}, {Title: "o", IdempotencyKey: "k-other"}})
		wantErr(e.t, "an add with a key of another batch", err, ErrInvalidState)
		if after := e.stats(); after.Ready != before.Ready || after.Scheduled != before.Scheduled {
			e.t.Fatalf("refused requests changed the queue: %+v, then %+v", before, after)
		}
		e.wantBatch(open.ID, BatchOpen, false, batchCounts{})
		e.wantBatch(other.ID, BatchSealed, false, batchCounts{Total: 1, Ready: 1})

		// The key refused is free: an add with it alone makes the job.
		_, first := e.addToBatch(open.ID, NewJob{Title: "new", IdempotencyKey: "k-new"})
		b, again, err := e.store.AddToBatch(e.ctx, open.ID, "pat", []NewJob{{Title: "new", IdempotencyKey: "k-new"}, {Title: "more"}})
		if err != nil || again[0].Created || again[0].Job.ID != first[0].ID || !again[1].Created || b.Total != 2 {
			e.t.Fatalf("a partial repeat of an add: %+v %+v %v", b, again, err)
		}
		if j := e.get(loose.ID); j.BatchID != "" {
			e.t.Fatalf("the loose job joined a batch: %+v", j)
		}
		// A key twice in one batch request makes one job, the batch's.
		twice, out, err := e.store.CreateBatch(e.ctx, e.queue, "pat", NewBatch{Title: "twice",
			Jobs: []NewJob{{Title: "one", IdempotencyKey: "k-twice"}, {Title: "again", IdempotencyKey: "k-twice"}}})
		if err != nil || twice.Total != 1 || !out[0].Created || out[1].Created || out[1].Job.ID != out[0].Job.ID || out[0].Job.BatchID != twice.ID {
			e.t.Fatalf("a key twice in one batch: %+v %+v %v", twice, out, err)
		}
	})
}
