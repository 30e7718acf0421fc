package tasks

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestPropertyRandomOperations drives the engine with a seeded, reproducible
// stream of mixed operations on an explicit clock, predicts each outcome
// from a small model, and checks the whole store after every step: each job
// is in exactly one state and one index, reservations have exactly one live
// token, nothing completes twice, and no job disappears. Some jobs belong to
// batches, some with max_concurrent: their counters always equal the real
// job states, reserved jobs never exceed the cap, and a free slot never
// stays free while a job of the batch waits (no leaked slot).
func TestPropertyRandomOperations(t *testing.T) {
	t.Parallel()
	steps := map[string]int{"standalone": 3000, "cluster": 1000}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			for _, seed := range []uint64{1, 2} {
				t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
					e := newEnv(t, b.rdb, Queue{LeaseSeconds: 60, MaxAttempts: 3, MaxExtensions: 2, MaxHoldSeconds: 150})
					runModel(e, rand.New(rand.NewPCG(seed, 7)), steps[b.name])
				})
			}
		})
	}
}

// modelJob is what the model knows of a job.
type modelJob struct {
	state       State
	token       string // live reservation token
	holder      string
	deadline    time.Time
	reservedAt  time.Time
	runAt       time.Time
	attempts    int
	extensions  int
	skippedBy   []string
	completions int
	batch       string
}

// modelBatch is what the model knows of a batch.
type modelBatch struct {
	cap      int // 0: no cap
	open     bool
	canceled bool
	jobs     []string
}

type model struct {
	e      *env
	rnd    *rand.Rand
	jobs   map[string]*modelJob
	ids    []string // in creation order
	stale  []claimed
	idKeys map[string]string

	batches  map[string]*modelBatch
	batchIDs []string // in creation order
}

type claimed struct{ id, token string }

var modelOperators = []string{"ann", "bob", "cat"}

func runModel(e *env, rnd *rand.Rand, steps int) {
	m := &model{e: e, rnd: rnd, jobs: map[string]*modelJob{}, idKeys: map[string]string{}, batches: map[string]*modelBatch{}}
	ops := []struct {
		name   string
		weight int
		run    func()
	}{
		{"enqueue", 12, m.enqueue},
		{"claim", 14, m.claim},
		{"complete", 8, func() { m.holderAction("complete") }},
		{"release", 4, func() { m.holderAction("release") }},
		{"skip", 4, func() { m.holderAction("skip") }},
		{"extend", 4, func() { m.holderAction("extend") }},
		{"fail", 4, func() { m.holderAction("fail") }},
		{"stale", 5, m.staleAction},
		{"advance", 8, m.advance},
		{"reclaim", 5, m.reclaim},
		{"promote", 2, m.promote},
		{"cancel", 3, m.cancel},
		{"requeue", 3, m.requeue},
		{"seal", 2, m.seal},
		{"cancel batch", 1, m.cancelBatch},
	}
	total := 0
	for _, op := range ops {
		total += op.weight
	}
	for step := range steps {
		n := rnd.IntN(total)
		for _, op := range ops {
			if n < op.weight {
				op.run()
				if e.t.Failed() {
					e.t.Fatalf("step %d (%s) failed", step, op.name)
				}
				m.check(step, op.name)
				break
			}
			n -= op.weight
		}
	}
}

func (m *model) now() time.Time { return m.e.clock.Now() }

// pick returns a random job id in one of the states, or "".
func (m *model) pick(states ...State) string {
	var c []string
	for _, id := range m.ids {
		if slices.Contains(states, m.jobs[id].state) {
			c = append(c, id)
		}
	}
	if len(c) == 0 {
		return ""
	}
	return c[m.rnd.IntN(len(c))]
}

func (m *model) enqueue() {
	e := m.e
	n := 1 + m.rnd.IntN(3)
	batch := make([]NewJob, n)
	for i := range batch {
		p := m.rnd.IntN(101)
		batch[i] = NewJob{Title: "job", Priority: &p}
		if m.rnd.IntN(5) == 0 {
			batch[i].DelaySeconds = 1 + m.rnd.IntN(120)
		}
		if m.rnd.IntN(4) == 0 {
			batch[i].IdempotencyKey = fmt.Sprint("key-", m.rnd.IntN(20))
		}
	}
	out, bid, err := m.enqueueInto(batch)
	if err != nil {
		e.t.Fatalf("enqueue: %v", err)
	}
	for i, got := range out {
		key := batch[i].IdempotencyKey
		if first, ok := m.idKeys[key]; key != "" && ok {
			if got.Created || got.Job.ID != first {
				e.t.Fatalf("idempotency key %s made a second job", key)
			}
			continue
		}
		if !got.Created || m.jobs[got.Job.ID] != nil {
			e.t.Fatalf("enqueue did not create a new job: %+v", got)
		}
		if key != "" {
			m.idKeys[key] = got.Job.ID
		}
		mj := &modelJob{state: StateReady, runAt: m.now(), batch: bid}
		if bid != "" {
			m.batches[bid].jobs = append(m.batches[bid].jobs, got.Job.ID)
		}
		if got.Job.BatchID != bid {
			e.t.Fatalf("job %s has batch %q, want %q", got.Job.ID, got.Job.BatchID, bid)
		}
		if d := batch[i].DelaySeconds; d > 0 {
			mj.state, mj.runAt = StateScheduled, m.now().Add(time.Duration(d)*time.Second)
		}
		m.jobs[got.Job.ID] = mj
		m.ids = append(m.ids, got.Job.ID)
	}
}

// enqueueInto adds the jobs to the queue: a third of the time into a new
// batch (open or sealed, with or without a cap), a sixth into an open one.
func (m *model) enqueueInto(jobs []NewJob) ([]Enqueued, string, error) {
	e := m.e
	var open []string
	for _, id := range m.batchIDs {
		if b := m.batches[id]; b.open && !b.canceled {
			open = append(open, id)
		}
	}
	switch n := m.rnd.IntN(6); {
	case n < 2:
		nb := NewBatch{Title: "batch", Open: m.rnd.IntN(2) == 0, Jobs: jobs}
		mb := &modelBatch{cap: m.rnd.IntN(4), open: nb.Open}
		if mb.cap > 0 {
			nb.MaxConcurrent = &mb.cap
		}
		// A request whose jobs all exist by their keys repeats the one that
		// made them: it answers their batch, or is refused if none is theirs.
		repeatOf, repeat := "", true
		for i, j := range jobs {
			first, ok := m.idKeys[j.IdempotencyKey]
			if !ok || j.IdempotencyKey == "" {
				repeat = false
				break
			}
			if bid := m.jobs[first].batch; i == 0 || bid == repeatOf {
				repeatOf = bid
			} else {
				repeatOf = ""
			}
		}
		b, out, err := e.store.CreateBatch(e.ctx, e.queue, nb)
		switch {
		case repeat && repeatOf == "":
			if !errors.Is(err, ErrInvalidState) {
				e.t.Fatalf("a repeat of no one batch: %v, want ErrInvalidState", err)
			}
			return nil, "", nil
		case err != nil:
			return nil, "", err
		case repeat:
			if b.ID != repeatOf {
				e.t.Fatalf("a repeat of batch %s answered %s", repeatOf, b.ID)
			}
			return out, b.ID, nil
		}
		m.batches[b.ID] = mb
		m.batchIDs = append(m.batchIDs, b.ID)
		return out, b.ID, nil
	case n < 3 && len(open) > 0:
		id := open[m.rnd.IntN(len(open))]
		_, out, err := e.store.AddToBatch(e.ctx, id, jobs)
		return out, id, err
	}
	out, err := e.store.Enqueue(e.ctx, e.queue, jobs)
	return out, "", err
}

// batchState is the state and end the model expects of a batch.
func (m *model) batchState(b *modelBatch) (BatchState, bool) {
	ended, failures := true, false
	for _, id := range b.jobs {
		s := m.jobs[id].state
		ended = ended && s.Terminal()
		failures = failures || s == StateDead || s == StateCanceled
	}
	switch {
	case b.canceled:
		return BatchCanceled, ended
	case b.open:
		return BatchOpen, false
	case !ended:
		return BatchSealed, false
	case failures:
		return BatchCompletedWithFailures, true
	}
	return BatchCompleted, true
}

func (m *model) pickBatch() string {
	if len(m.batchIDs) == 0 {
		return ""
	}
	return m.batchIDs[m.rnd.IntN(len(m.batchIDs))]
}

func (m *model) seal() {
	e := m.e
	id := m.pickBatch()
	if id == "" {
		return
	}
	if _, err := e.store.SealBatch(e.ctx, id); err != nil {
		e.t.Fatalf("seal: %v", err)
	}
	m.batches[id].open = false
}

func (m *model) cancelBatch() {
	e := m.e
	id := m.pickBatch()
	if id == "" {
		return
	}
	b := m.batches[id]
	_, canceled, err := e.store.CancelBatch(e.ctx, id)
	if state, _ := m.batchState(b); state == BatchCompleted || state == BatchCompletedWithFailures {
		if !errors.Is(err, ErrInvalidState) {
			e.t.Fatalf("cancel a %s batch: %v", state, err)
		}
		return
	}
	if err != nil {
		e.t.Fatalf("cancel batch: %v", err)
	}
	b.canceled = true
	var want []string
	for _, jid := range b.jobs {
		if mj := m.jobs[jid]; mj.state == StateReady || mj.state == StateScheduled {
			m.finish(jid, mj, StateCanceled)
			want = append(want, jid)
		}
	}
	slices.Sort(want)
	slices.Sort(canceled)
	if !slices.Equal(canceled, want) {
		e.t.Fatalf("cancel batch canceled %v, model %v", canceled, want)
	}
}

// backInLine is where a job given back goes: ready, or canceled when its
// batch is.
func (m *model) backInLine(id string, mj *modelJob) {
	if b := m.batches[mj.batch]; b != nil && b.canceled {
		m.finish(id, mj, StateCanceled)
		return
	}
	if mj.token != "" {
		m.endReservation(id, mj)
	}
	mj.state = StateReady
}

// claimable reports whether op may be given the job now.
func (m *model) claimable(mj *modelJob, op string) bool {
	due := mj.state == StateScheduled && !mj.runAt.After(m.now())
	return (mj.state == StateReady || due) && !slices.Contains(mj.skippedBy, op)
}

func (m *model) claim() {
	e := m.e
	op := modelOperators[m.rnd.IntN(len(modelOperators))]
	// A claim first reclaims expired reservations (at most promoteOnClaim).
	var expired []string
	for _, id := range m.ids {
		if mj := m.jobs[id]; mj.state == StateReserved && !m.now().Before(mj.deadline) {
			expired = append(expired, id)
		}
	}
	if len(expired) > promoteOnClaim {
		e.t.Fatalf("model: %d expired reservations, more than one claim reclaims", len(expired))
	}
	for _, id := range expired {
		m.spendAttempt(id, m.jobs[id])
	}
	var want []string
	for _, id := range m.ids {
		if m.claimable(m.jobs[id], op) {
			want = append(want, id)
		}
	}
	r, err := e.store.Claim(e.ctx, e.queue, op)
	if err != nil {
		e.t.Fatalf("claim: %v", err)
	}
	// Promotion happened for every due job.
	for _, mj := range m.jobs {
		if mj.state == StateScheduled && !mj.runAt.After(m.now()) {
			mj.state = StateReady
		}
	}
	if r == nil {
		// Jobs of a capped batch wait outside the claim line for a slot
		// (check proves the line holds every other ready job).
		line, err := e.rdb.ZRange(e.ctx, keysFor(e.queue).ready(), 0, -1).Result()
		if err != nil {
			e.t.Fatal(err)
		}
		for _, id := range want {
			if slices.Contains(line, localID(id)) {
				e.t.Fatalf("claim by %s found nothing, but %s was claimable", op, id)
			}
		}
		return
	}
	if !slices.Contains(want, r.Job.ID) {
		e.t.Fatalf("claim by %s gave %s, which was not claimable", op, r.Job.ID)
	}
	mj := m.jobs[r.Job.ID]
	mj.state, mj.token, mj.holder = StateReserved, r.Token, op
	mj.reservedAt, mj.deadline, mj.extensions = m.now(), m.now().Add(60*time.Second), 0
}

// live reports whether the job's reservation is still good now.
func (m *model) live(mj *modelJob) bool {
	return mj.state == StateReserved && m.now().Before(mj.deadline)
}

func (m *model) endReservation(id string, mj *modelJob) {
	m.stale = append(m.stale, claimed{id, mj.token})
	mj.token, mj.holder = "", ""
}

func (m *model) finish(id string, mj *modelJob, s State) {
	m.endReservation(id, mj)
	mj.state, mj.skippedBy = s, nil
}

func (m *model) spendAttempt(id string, mj *modelJob) {
	mj.attempts++
	if mj.attempts >= 3 {
		m.finish(id, mj, StateDead)
		return
	}
	m.backInLine(id, mj)
}

func (m *model) holderAction(action string) {
	e := m.e
	id := m.pick(StateReserved)
	if id == "" {
		return
	}
	mj := m.jobs[id]
	live := m.live(mj)
	var err error
	switch action {
	case "complete":
		_, err = e.store.Complete(e.ctx, id, mj.token, json.RawMessage(`{"ok":true}`))
		if live {
			mj.completions++
			m.finish(id, mj, StateCompleted)
		}
	case "release", "skip":
		if action == "skip" {
			_, err = e.store.Skip(e.ctx, id, mj.token)
			if live && !slices.Contains(mj.skippedBy, mj.holder) {
				mj.skippedBy = append(mj.skippedBy, mj.holder)
			}
		} else {
			_, err = e.store.Release(e.ctx, id, mj.token)
		}
		if live {
			m.backInLine(id, mj)
		}
	case "fail":
		_, err = e.store.Fail(e.ctx, id, mj.token, "could not")
		if live {
			m.spendAttempt(id, mj)
		}
	case "extend":
		secs := 1 + m.rnd.IntN(120)
		var j *Job
		j, err = e.store.Extend(e.ctx, id, mj.token, secs)
		if live {
			wanted, cap := m.now().Add(time.Duration(secs)*time.Second), mj.reservedAt.Add(150*time.Second)
			switch {
			case !wanted.After(mj.deadline):
			case mj.extensions >= 2 || !cap.After(mj.deadline):
				if !errors.Is(err, ErrExtensionLimit) {
					e.t.Fatalf("extend past the limits: %v", err)
				}
				return
			default:
				mj.deadline = wanted
				if cap.Before(wanted) {
					mj.deadline = cap
				}
				mj.extensions++
			}
			if err == nil && !j.Deadline.Equal(mj.deadline) {
				e.t.Fatalf("extend: deadline %v, model %v", j.Deadline, mj.deadline)
			}
		}
	}
	if live && err != nil {
		e.t.Fatalf("%s with the live token: %v", action, err)
	}
	if !live && !errors.Is(err, ErrReservationLost) {
		e.t.Fatalf("%s after the deadline: %v, want ErrReservationLost", action, err)
	}
}

// staleAction uses a token whose reservation ended: always refused.
func (m *model) staleAction() {
	e := m.e
	if len(m.stale) == 0 {
		return
	}
	c := m.stale[m.rnd.IntN(len(m.stale))]
	if _, err := e.store.Complete(e.ctx, c.id, c.token, json.RawMessage(`{"stale":true}`)); !errors.Is(err, ErrReservationLost) {
		e.t.Fatalf("complete with a stale token: %v", err)
	}
}

func (m *model) advance() {
	m.e.clock.Advance(time.Duration(1+m.rnd.IntN(40)) * time.Second)
}

func (m *model) reclaim() {
	e := m.e
	limit := 1 + m.rnd.IntN(4)
	var expired []string
	for _, id := range m.ids {
		if mj := m.jobs[id]; mj.state == StateReserved && !m.now().Before(mj.deadline) {
			expired = append(expired, id)
		}
	}
	moved, more, err := e.store.ReclaimExpired(e.ctx, e.queue, limit)
	if err != nil {
		e.t.Fatalf("reclaim: %v", err)
	}
	if len(moved) != min(limit, len(expired)) || more != (len(expired) > limit) {
		e.t.Fatalf("reclaim moved %d (more %v) of %d expired, limit %d", len(moved), more, len(expired), limit)
	}
	for _, r := range moved {
		mj := m.jobs[r.JobID]
		if !slices.Contains(expired, r.JobID) || r.Operator != mj.holder {
			e.t.Fatalf("reclaimed %+v, which had not expired", r)
		}
		m.spendAttempt(r.JobID, mj)
		if r.State != mj.state {
			e.t.Fatalf("reclaimed job went to %s, model says %s", r.State, mj.state)
		}
	}
}

func (m *model) promote() {
	e := m.e
	ids, _, err := e.store.PromoteDue(e.ctx, e.queue, 100)
	if err != nil {
		e.t.Fatalf("promote: %v", err)
	}
	for _, id := range ids {
		mj := m.jobs[id]
		if mj.state != StateScheduled || mj.runAt.After(m.now()) {
			e.t.Fatalf("promoted %s in state %s due %v", id, mj.state, mj.runAt)
		}
		mj.state = StateReady
	}
}

func (m *model) cancel() {
	e := m.e
	id := m.pick(States...)
	if id == "" {
		return
	}
	mj := m.jobs[id]
	force := m.rnd.IntN(2) == 0
	_, _, err := e.store.Cancel(e.ctx, id, force)
	if mj.state == StateReady || mj.state == StateScheduled || (mj.state == StateReserved && force) {
		if err != nil {
			e.t.Fatalf("cancel %s job: %v", mj.state, err)
		}
		m.finish(id, mj, StateCanceled)
		return
	}
	if !errors.Is(err, ErrInvalidState) {
		e.t.Fatalf("cancel %s job (force %v): %v", mj.state, force, err)
	}
}

func (m *model) requeue() {
	e := m.e
	id := m.pick(StateDead, StateReserved, StateReady, StateCompleted)
	if id == "" {
		return
	}
	mj := m.jobs[id]
	_, _, err := e.store.Requeue(e.ctx, id)
	canceled := m.batches[mj.batch] != nil && m.batches[mj.batch].canceled
	switch {
	case mj.state == StateDead && !canceled:
		mj.attempts = 0
		fallthrough
	case mj.state == StateReserved:
		if err != nil {
			e.t.Fatalf("requeue %s job: %v", mj.state, err)
		}
		m.backInLine(id, mj)
	default:
		if !errors.Is(err, ErrInvalidState) {
			e.t.Fatalf("requeue %s job: %v", mj.state, err)
		}
	}
}

// check reads the whole queue from Redis and compares it with the model.
func (m *model) check(step int, op string) {
	e := m.e
	t := e.t
	k := keysFor(e.queue)
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("after step %d (%s): %s", step, op, fmt.Sprintf(format, args...))
	}
	localMetas, err := e.rdb.HGetAll(e.ctx, k.meta()).Result()
	if err != nil {
		t.Fatal(err)
	}
	metas := map[string]string{}
	for id, raw := range localMetas {
		metas[globalID(id, e.queue)] = raw
	}
	if len(metas) != len(m.jobs) {
		fail("%d jobs stored, model has %d", len(metas), len(m.jobs))
	}
	seen := map[string]State{}
	scores := map[string]float64{}
	for _, s := range States {
		members, err := e.rdb.ZRangeWithScores(e.ctx, k.stateKey(s), 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, z := range members {
			id := globalID(z.Member.(string), e.queue)
			if prev, dup := seen[id]; dup {
				fail("job %s is in the %s and %s indexes", id, prev, s)
			}
			seen[id], scores[id] = s, z.Score
		}
	}
	// Ready jobs of capped batches wait in parked, named by batch and rank.
	parked := map[string]string{} // id -> member
	members, err := e.rdb.ZRange(e.ctx, k.parked(), 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, member := range members {
		parts := strings.Split(member, "|")
		id := globalID(parts[2], e.queue)
		if prev, dup := seen[id]; dup {
			fail("job %s is parked and in the %s index", id, prev)
		}
		seen[id], parked[id] = StateReady, member
	}
	if len(seen) != len(m.jobs) {
		fail("%d jobs indexed, model has %d", len(seen), len(m.jobs))
	}
	tokens := map[string]bool{}
	for id, mj := range m.jobs {
		raw, ok := metas[id]
		if !ok {
			fail("job %s disappeared", id)
		}
		j, err := decodeJob(id, raw, "")
		if err != nil {
			t.Fatal(err)
		}
		if j.State != mj.state || seen[id] != mj.state {
			fail("job %s: stored state %s, index %s, model %s", id, j.State, seen[id], mj.state)
		}
		if j.Attempts != mj.attempts || !slices.Equal(j.SkippedBy, mj.skippedBy) {
			fail("job %s: attempts %d skipped %v, model %d %v", id, j.Attempts, j.SkippedBy, mj.attempts, mj.skippedBy)
		}
		if mj.completions > 1 {
			fail("job %s completed %d times", id, mj.completions)
		}
		switch j.State {
		case StateReserved:
			if j.token == "" || j.token != mj.token || tokens[j.token] || j.ReservedBy != mj.holder {
				fail("job %s: reservation token/holder %q/%q, model %q/%q", id, j.token, j.ReservedBy, mj.token, mj.holder)
			}
			tokens[j.token] = true
			if !j.Deadline.Equal(mj.deadline) || float64(ms(mj.deadline)) != scores[id] {
				fail("job %s: deadline %v (index %v), model %v", id, j.Deadline, scores[id], mj.deadline)
			}
		case StateReady:
			if member, ok := parked[id]; ok {
				if want := fmt.Sprintf("%s|%017.0f|%s", localID(mj.batch), j.rank+1e14, localID(id)); member != want {
					fail("job %s parked as %q, want %q", id, member, want)
				}
			} else if scores[id] != j.rank {
				fail("job %s: ready at score %v, rank %v", id, scores[id], j.rank)
			}
			fallthrough
		default:
			if j.token != "" || j.ReservedBy != "" || j.Deadline != nil {
				fail("job %s in state %s keeps a reservation", id, j.State)
			}
		}
	}
	// Skip records match the jobs' skipped_by lists exactly.
	want := map[string]bool{}
	for id, mj := range m.jobs {
		for _, op := range mj.skippedBy {
			want[op+"\n"+localID(id)] = true
		}
	}
	got, _ := e.rdb.SMembers(e.ctx, k.skips()).Result()
	if len(got) != len(want) {
		fail("%d skip records, model %d", len(got), len(want))
	}
	for _, s := range got {
		if !want[s] {
			fail("stray skip record %q", s)
		}
	}
	m.checkBatches(fail, parked)
}

// checkBatches compares every batch's record with the real states of its
// jobs, and checks its slots: never more reserved than the cap, and no slot
// free while a job of the batch is parked.
func (m *model) checkBatches(fail func(string, ...any), parked map[string]string) {
	e := m.e
	k := keysFor(e.queue)
	line, err := e.rdb.ZRange(e.ctx, k.ready(), 0, -1).Result()
	if err != nil {
		e.t.Fatal(err)
	}
	inLine := map[string]bool{}
	for _, id := range line {
		inLine[globalID(id, e.queue)] = true
	}
	records, err := e.rdb.HGetAll(e.ctx, k.batches()).Result()
	if err != nil {
		e.t.Fatal(err)
	}
	if len(records) != len(m.batchIDs) {
		fail("%d batches stored, model has %d", len(records), len(m.batchIDs))
	}
	jobs := 0
	for _, bid := range m.batchIDs {
		mb := m.batches[bid]
		jobs += len(mb.jobs)
		raw, ok := records[localID(bid)]
		if !ok {
			fail("batch %s disappeared", bid)
		}
		var r batchRecord
		if err := json.Unmarshal([]byte(raw), &r); err != nil {
			e.t.Fatal(err)
		}
		var want batchRecord
		held := 0
		for _, id := range mb.jobs {
			switch m.jobs[id].state {
			case StateReady, StateScheduled:
				want.Ready++
			case StateReserved:
				want.Reserved++
			case StateCompleted:
				want.Completed++
			case StateDead:
				want.Dead++
			case StateCanceled:
				want.Canceled++
			}
			if inLine[id] {
				want.Admitted++
			}
			if parked[id] != "" {
				held++
			}
		}
		want.Total = len(mb.jobs)
		if r.Total != want.Total || r.Ready != want.Ready || r.Reserved != want.Reserved || r.Completed != want.Completed ||
			r.Dead != want.Dead || r.Canceled != want.Canceled || r.Admitted != want.Admitted {
			fail("batch %s counts %+v, real %+v", bid, r, want)
		}
		if state, ended := m.batchState(mb); r.State != state || (r.FinishedAt != 0) != ended {
			fail("batch %s: state %s finished %d, model %s ended %v", bid, r.State, r.FinishedAt, state, ended)
		}
		switch {
		case mb.cap == 0 && held > 0:
			fail("batch %s has no cap but %d parked jobs", bid, held)
		case mb.cap > 0 && r.Reserved+r.Admitted > mb.cap:
			fail("batch %s: %d reserved + %d in line, over its cap %d", bid, r.Reserved, r.Admitted, mb.cap)
		case mb.cap > 0 && held > 0 && !mb.canceled && r.Reserved+r.Admitted < mb.cap:
			fail("batch %s: a slot is free (%d reserved + %d in line < %d) while %d jobs wait", bid, r.Reserved, r.Admitted, mb.cap, held)
		}
	}
	if n, _ := e.rdb.ZCard(e.ctx, k.members()).Result(); int(n) != jobs {
		fail("%d batch members recorded, model has %d", n, jobs)
	}
}
