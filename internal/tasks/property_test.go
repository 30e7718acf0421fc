package tasks

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"claimdesk/internal/skills"
)

// TestPropertyRandomOperations drives the engine with a seeded, reproducible
// stream of mixed operations on an explicit clock, predicts each outcome
// from a small model, and checks the whole store after every step: each job
// is in exactly one state and one index, reservations have exactly one live
// token, nothing completes twice, and no job disappears. Every transition
// the model predicts is told to the Store's observer exactly once, in
// order, and stands in the job's stored history with its actor and
// attempt; a job's state is the "to" of its last entry. Some jobs belong to
// batches, some with max_concurrent: their counters always equal the real
// job states, reserved jobs never exceed the cap, and a free slot never
// stays free while a job of the batch waits (no leaked slot). Retries of a
// holder's last action are answered as it was; anyone else's use of a
// holder's token is forbidden. Some jobs have due times: each is at risk,
// then breached, once, while unfinished; the indexes by due time hold
// exactly the jobs they should, and the ready ones' scores their rank
// after a breach raised it; a retry looks past those moments. With seed 2
// the queue claims earliest due first: no job the claimer may take that is
// due sooner stays in line. With seed 1 the queue has a breach queue:
// each job that misses its due time waiting moves there as it was, told
// once on each side, its old id and key leading to it; its batch counts
// it as moved until told that it ended there. Some jobs ask for skills,
// or are assigned, or prefer people until a fallback time, and the
// operators have skills of their own: a claim takes the best job its
// operator may take, in the queue's one order, whichever line it waits
// in; each routed job waits in exactly its lines; fallbacks come at claim
// time or from the cron job, once; supervisors assign and transfer jobs.
// With seed 3 the queue has overlap 2: each job is answered by two
// people, never held twice by one (whatever ended their reservation),
// and completed once, by the second answer; its answers stand as given.
// There cat is in training: each job cat completes waits for review,
// which only a review claim takes, never by cat; a reviewer approves it
// (it completes, once) or sends it back (to cat first, or to one more
// person with overlap), and it always comes back to be done. With seed 4
// the queue has overlap 2 held at once: up to as many people as a job
// still needs answers from hold it at the same time, each reservation
// fenced, extended, ended and reclaimed on its own, and whatever ends the
// job ends them all; nobody holds it twice, and a claim takes a free seat
// in the queue's one order.
func TestPropertyRandomOperations(t *testing.T) {
	t.Parallel()
	steps := map[string]int{"standalone": 3000, "cluster": 1000}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			for _, seed := range []uint64{1, 2, 3, 4} {
				t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
					order := []string{OrderRank, OrderDue, OrderRank, OrderRank}[seed-1]
					overlap := []int{1, 1, 2, 2}[seed-1]
					e := newEnv(t, b.rdb, Queue{LeaseSeconds: 60, MaxAttempts: 3, MaxExtensions: 2, MaxHoldSeconds: 150,
						BreachPriority: 95, Order: order, Overlap: overlap, OverlapAtOnce: seed == 4})
					if seed == 1 {
						// Jobs that miss their due time waiting move on.
						leads := e.newQueue(Queue{})
						if _, _, err := e.store.PatchQueue(e.ctx, e.queue, QueuePatch{BreachQueue: &leads}); err != nil {
							t.Fatal(err)
						}
					}
					n := steps[b.name]
					if seed >= 3 {
						n = max(n, 2500) // for enough review on the cluster too
					}
					// Seed 2 begins with a plain queue (lua/lib.lua, The
					// oldest wait) for a fifth of its steps: its jobs of
					// one priority, for no one in particular, none in a
					// batch with a cap, no breach's priority raised.
					plain := 0
					if seed == 2 {
						plain = n / 5
					}
					runModel(e, rand.New(rand.NewPCG(seed, 7)), n, plain)
				})
			}
		})
	}
}

// modelJob is what the model knows of a job.
type modelJob struct {
	state      State
	token      string // live reservation token
	holder     string
	claimKey   string // the live claim's idempotency key
	deadline   time.Time
	reservedAt time.Time
	runAt      time.Time
	attempts   int
	extensions int
	skippedBy  []string
	batch      string
	// dueAt and warnAt are the job's due time and warn point (zero: none);
	// atRisk and breached whether those moments were handled.
	dueAt, warnAt    time.Time
	atRisk, breached bool
	// away is the job's id in the breach queue once it moved there: the
	// model forgets it after the step that moved it.
	away string
	// lastToken and lastHolder are the last reservation's, once it ended.
	lastToken, lastHolder string
	// others are its other reservations, while several people hold it at
	// once (seed 4: lua/lib.lua, Seats); the fields above are one of
	// them. overlap is how many answer it, as its latest claim from the
	// line said.
	others  []modelHold
	overlap int
	// ended are the latest endedKept reservations that ended while
	// others held the job, oldest first: a retry of their holder's last
	// action is known by their token.
	ended []endedHold
	// asks are the skills the job asks for; routeTo the people it is
	// routed to, until fallbackAt (zero: for good).
	asks       skills.Set
	routeTo    []string
	fallbackAt time.Time
	// answers are who answered it, in a queue with overlap.
	answers []string
	// review is set while it waits for review (or is held by a
	// reviewer), of author's completion.
	review bool
	author string
	// agreed is set once its answers were agreed (its last came), until
	// a reviewer sends it back for one more.
	agreed bool
	// history is every transition, admissions into a batch slot aside
	// (checkHistory checks those); told is how many the observer has told.
	history []modelEntry
	told    int
}

// endedHold is how a reservation ended while others held its job: whose
// it was, and the action of the actor that ended it.
type endedHold struct {
	token, holder, actor string
	action               Action
}

// endedKept is how many such reservations a job keeps (lua/lib.lua,
// ENDED_KEPT).
const endedKept = 16

// modelHold is one reservation of a job.
type modelHold struct {
	token, holder, claimKey string
	deadline, reservedAt    time.Time
	extensions              int
}

// hold returns the job's reservation as the fields say.
func (mj *modelJob) hold() modelHold {
	return modelHold{mj.token, mj.holder, mj.claimKey, mj.deadline, mj.reservedAt, mj.extensions}
}

func (mj *modelJob) setHold(h modelHold) {
	mj.token, mj.holder, mj.claimKey, mj.deadline, mj.reservedAt, mj.extensions =
		h.token, h.holder, h.claimKey, h.deadline, h.reservedAt, h.extensions
}

// holds returns every reservation of the job, oldest first (then by
// holder).
func (mj *modelJob) holds() []modelHold {
	if mj.state != StateReserved {
		return nil
	}
	hs := append([]modelHold{mj.hold()}, mj.others...)
	slices.SortFunc(hs, func(a, b modelHold) int {
		return cmp.Or(a.reservedAt.Compare(b.reservedAt), strings.Compare(a.holder, b.holder))
	})
	return hs
}

// take makes op's reservation of the job the one its fields say, and
// reports whether op has one.
func (mj *modelJob) take(op string) bool {
	if mj.state != StateReserved {
		return false
	}
	if mj.holder == op {
		return true
	}
	for i, h := range mj.others {
		if h.holder == op {
			mj.others[i] = mj.hold()
			mj.setHold(h)
			return true
		}
	}
	return false
}

// firstDeadline is the earliest deadline of the job's reservations.
func (mj *modelJob) firstDeadline() time.Time {
	first := mj.deadline
	for _, h := range mj.others {
		if h.deadline.Before(first) {
			first = h.deadline
		}
	}
	return first
}

// modelEntry is a transition as the model predicts it.
type modelEntry struct {
	action   Action
	actor    string
	from, to State
	attempt  int
}

// modelBatch is what the model knows of a batch.
type modelBatch struct {
	cap      int // 0: no cap
	open     bool
	canceled bool
	jobs     []string
	// ended is whether the batch had ended when the outbox was last
	// checked (checkOutbox).
	ended bool
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
	// order is the queue's claim order (Queue.Order), and breachQueue
	// where its jobs that miss their due time waiting move ("": none).
	order, breachQueue string
	// moved maps the ids of the jobs that moved to their new ones, and
	// away those of batches to how their batch counts them (stateMoved
	// until they end there: endMoved).
	moved map[string]string
	away  map[string]State
	// movedBatch is the batch of each job of a batch that moved.
	movedBatch map[string]string
	// routedClaims counts the claims of routed jobs, seatClaims those of
	// seats of jobs others held (seed 4).
	routedClaims, seatClaims int
	// plainSteps counts down the steps whose new jobs leave the queue
	// plain; plainChecks counts the checks that found it plain.
	plainSteps, plainChecks int
	// overlap is the queue's (Queue.Overlap), and atOnce its
	// OverlapAtOnce.
	overlap int
	atOnce  bool
}

// stateMoved is how the model counts a job of a batch that moved to the
// breach queue and has not ended there.
const stateMoved State = "moved"

// stateOf is the state of a job of a batch, as its batch counts it.
func (m *model) stateOf(id string) State {
	switch mj := m.jobs[id]; {
	case mj == nil:
		return m.away[id]
	case mj.away != "":
		return stateMoved // moved in the step under way
	default:
		return mj.state
	}
}

type claimed struct{ id, token, holder string }

var modelOperators = []string{"ann", "bob", "cat"}

// modelSkills are the operators' skills; "dan", to whom jobs are
// assigned too, never claims; "rev" only reviews.
var modelSkills = map[string]skills.Set{"ann": {"de": 2}, "bob": {"fr": 1, "de": 1}, "cat": {}, "rev": {}}

func runModel(e *env, rnd *rand.Rand, steps, plain int) {
	m := &model{e: e, rnd: rnd, jobs: map[string]*modelJob{}, idKeys: map[string]string{}, batches: map[string]*modelBatch{},
		moved: map[string]string{}, away: map[string]State{}, movedBatch: map[string]string{}, plainSteps: plain}
	if err := e.store.SetOutbox(e.ctx, e.queue, true); err != nil {
		e.t.Fatal(err)
	}
	q, err := e.store.Queue(e.ctx, e.queue)
	if err != nil {
		e.t.Fatal(err)
	}
	m.order, m.breachQueue, m.overlap, m.atOnce = q.Order, q.BreachQueue, q.Overlap, q.OverlapAtOnce
	ops := []struct {
		name   string
		weight int
		run    func()
	}{
		{"enqueue", 12, m.enqueue},
		{"claim", 14, func() { m.claim(false) }},
		{"review claim", m.reviewWeight(), func() { m.claim(true) }},
		{"approve", m.reviewWeight(), func() { m.holderAction("approve") }},
		{"send back", m.reviewWeight(), func() { m.holderAction("send back") }},
		{"complete", 8, func() { m.holderAction("complete") }},
		{"release", 4, func() { m.holderAction("release") }},
		{"skip", 4, func() { m.holderAction("skip") }},
		{"extend", 4, func() { m.holderAction("extend") }},
		{"fail", 4, func() { m.holderAction("fail") }},
		{"stale", 5, m.staleAction},
		{"not yours", 2, m.othersAction},
		{"advance", 8, m.advance},
		{"reclaim", 5, m.reclaim},
		{"promote", 2, m.promote},
		{"cancel", 3, m.cancel},
		{"requeue", 3, m.requeue},
		{"seal", 2, m.seal},
		{"cancel batch", 1, m.cancelBatch},
		{"watch due times", 3, func() {
			if m.plainSteps <= 0 { // a breach's raised priority ends plainness
				m.watchDue()
			}
		}},
		{"end a job that moved", 1, m.endMoved},
		{"assign", 2, func() {
			if m.plainSteps <= 0 { // an assigned job ends plainness
				m.assign()
			}
		}},
	}
	total := 0
	for _, op := range ops {
		total += op.weight
	}
	for step := range steps {
		m.plainSteps--
		n := rnd.IntN(total)
		for _, op := range ops {
			if n < op.weight {
				op.run()
				if e.t.Failed() {
					e.t.Fatalf("step %d (%s) failed", step, op.name)
				}
				m.check(step, op.name)
				m.checkOutbox(step, op.name)
				m.checkTold(step, op.name)
				m.forgetMoved()
				break
			}
			n -= op.weight
		}
	}
	if plain > 0 && m.plainChecks < plain/4 {
		e.t.Fatalf("the queue was plain at %d checks of its first %d steps", m.plainChecks, plain)
	}
	told := 0
	for _, st := range m.away {
		if st == StateCanceled {
			told++
		}
	}
	// Enough routing happened to say it holds.
	routed := map[Action]int{}
	for _, mj := range m.jobs {
		for _, en := range mj.history {
			routed[en.action]++
		}
	}
	if routed[ActionFellBack] < 5 || routed[ActionAssigned] < 5 || routed[ActionTransferred] < 3 || m.routedClaims < 20 {
		e.t.Fatalf("too little routing to say it holds: %d fallbacks, %d assigned, %d transferred, %d routed jobs claimed",
			routed[ActionFellBack], routed[ActionAssigned], routed[ActionTransferred], m.routedClaims)
	}
	// (Seed 4 reviews too, and has fewer completions to review: its
	// measure is the seats.)
	if m.reviewWeight() > 0 && !m.atOnce && (routed[ActionSubmitted] < 5 || routed[ActionApproved] < 2 || routed[ActionSentBack] < 1 || routed[ActionAnswered] < 20) {
		e.t.Fatalf("too little overlap and review to say they hold: %d answers, %d sent to review, %d approved, %d sent back",
			routed[ActionAnswered], routed[ActionSubmitted], routed[ActionApproved], routed[ActionSentBack])
	}
	if last := routed[ActionCompleted] + routed[ActionSubmitted]; m.atOnce && (m.seatClaims < 20 || routed[ActionAnswered] < 20 || last < 5) {
		e.t.Fatalf("%d claims of seats of jobs others held, %d answers, %d last answers: too few to say seats hold",
			m.seatClaims, routed[ActionAnswered], last)
	}
	if m.breachQueue != "" && (len(m.moved) < 10 || told < 5) {
		e.t.Fatalf("%d jobs moved to the breach queue, %d batches told one ended there: too few to say moves hold", len(m.moved), told)
	}
}

func (m *model) now() time.Time { return m.e.clock.Now() }

// pick returns a random job id in one of the states, or "".
// pickReview picks a review's reservation at random, "" if none is held.
func (m *model) pickReview() string {
	var c []string
	for _, id := range m.ids {
		if mj := m.jobs[id]; mj.state == StateReserved && mj.review {
			c = append(c, id)
		}
	}
	if len(c) == 0 {
		return ""
	}
	return c[m.rnd.IntN(len(c))]
}

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
		if m.plainSteps > 0 {
			p = 50
		}
		batch[i] = NewJob{Title: "job", Priority: &p}
		if m.rnd.IntN(5) == 0 {
			batch[i].DelaySeconds = 1 + m.rnd.IntN(120)
		}
		if m.rnd.IntN(4) == 0 {
			batch[i].IdempotencyKey = fmt.Sprint("key-", m.rnd.IntN(20))
		}
		if m.rnd.IntN(3) == 0 {
			batch[i].DueInSeconds = 1 + m.rnd.IntN(200)
		}
		people := []string{"ann", "bob", "cat", "dan"}
		if m.plainSteps > 0 {
			continue
		}
		switch m.rnd.IntN(8) {
		case 0:
			batch[i].Assignee = people[m.rnd.IntN(len(people))]
		case 1:
			batch[i].Preferred = []string{people[m.rnd.IntN(len(people))]}
			batch[i].FallbackAfterSeconds = 1 + m.rnd.IntN(120)
		}
		if m.rnd.IntN(4) == 0 {
			batch[i].Skills = [][]string{{"de"}, {"de:2"}, {"fr"}, {"fr", "de:2"}}[m.rnd.IntN(4)]
		}
	}
	out, bid, err := m.enqueueInto(batch)
	if err != nil {
		e.t.Fatalf("enqueue: %v", err)
	}
	for i, got := range out {
		key := batch[i].IdempotencyKey
		if first, ok := m.idKeys[key]; key != "" && ok {
			if to, moved := m.moved[first]; moved {
				first = to
			}
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
		if d := batch[i].DueInSeconds; d > 0 {
			// The queue's warn fraction, 0.8, of the way, to the ms.
			mj.dueAt, mj.warnAt = m.now().Add(time.Duration(d)*time.Second), m.now().Add(time.Duration(d)*800*time.Millisecond)
		}
		mj.asks, _ = skills.FromList(batch[i].Skills)
		switch j := batch[i]; {
		case j.Assignee != "":
			mj.routeTo = []string{j.Assignee}
		case j.Preferred != nil:
			mj.routeTo, mj.fallbackAt = j.Preferred, m.now().Add(time.Duration(j.FallbackAfterSeconds)*time.Second)
		}
		m.note(mj, ActionEnqueued, "pat", "", mj.state)
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
		if m.plainSteps > 0 {
			mb.cap = 0
		}
		if mb.cap > 0 {
			nb.MaxConcurrent = &mb.cap
		}
		// A request whose jobs all exist by their keys repeats the one that
		// made them: it answers their batch, or is refused if none is theirs.
		// One with only some made already is refused.
		repeatOf, repeat, some := "", true, false
		for i, j := range jobs {
			first, ok := m.idKeys[j.IdempotencyKey]
			if !ok || j.IdempotencyKey == "" {
				repeat = false
				continue
			}
			some = true
			if bid := m.batchOf(first); i == 0 || bid == repeatOf {
				repeatOf = bid
			} else {
				repeatOf = ""
			}
		}
		b, out, err := e.store.CreateBatch(e.ctx, e.queue, "pat", nb)
		switch {
		case repeat && repeatOf == "" || !repeat && some:
			if !errors.Is(err, ErrInvalidState) {
				e.t.Fatalf("a repeat of no one batch, or in part: %v, want ErrInvalidState", err)
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
		_, out, err := e.store.AddToBatch(e.ctx, id, "pat", jobs)
		// A job made by its key outside the batch refuses the add.
		for _, j := range jobs {
			if first, ok := m.idKeys[j.IdempotencyKey]; ok && j.IdempotencyKey != "" && m.batchOf(first) != id {
				if !errors.Is(err, ErrInvalidState) {
					e.t.Fatalf("an add with a key of a job outside the batch: %v, want ErrInvalidState", err)
				}
				return nil, "", nil
			}
		}
		return out, id, err
	}
	out, err := e.store.Enqueue(e.ctx, e.queue, "pat", jobs)
	return out, "", err
}

// batchOf is the batch of the job, here or moved.
func (m *model) batchOf(id string) string {
	if mj := m.jobs[id]; mj != nil {
		return mj.batch
	}
	return m.movedBatch[id]
}

// endMoved cancels in the breach queue a job of a batch that moved there,
// and tells its batch (ReturnToBatches), which counts it as canceled.
func (m *model) endMoved() {
	e := m.e
	var open []string
	for id, st := range m.away {
		if st == stateMoved {
			open = append(open, id)
		}
	}
	if len(open) == 0 {
		return
	}
	slices.Sort(open)
	id := open[m.rnd.IntN(len(open))]
	if _, _, err := e.store.Cancel(e.ctx, m.moved[id], "sam", false); err != nil {
		e.t.Fatalf("cancel %s, moved from %s: %v", m.moved[id], id, err)
	}
	for {
		_, more, err := e.store.ReturnToBatches(e.ctx, m.breachQueue, 1+m.rnd.IntN(3))
		if err != nil {
			e.t.Fatalf("ReturnToBatches: %v", err)
		}
		if !more {
			break
		}
	}
	m.away[id] = StateCanceled
}

// forgetMoved forgets the jobs that moved to the breach queue, once the
// step that moved them is checked.
func (m *model) forgetMoved() {
	for id, mj := range m.jobs {
		if mj.away != "" {
			m.moved[id] = mj.away
			if mj.batch != "" {
				m.away[id], m.movedBatch[id] = stateMoved, mj.batch
			}
			delete(m.jobs, id)
		}
	}
	m.ids = slices.DeleteFunc(m.ids, func(id string) bool { return m.jobs[id] == nil })
}

// batchState is the state and end the model expects of a batch.
func (m *model) batchState(b *modelBatch) (BatchState, bool) {
	ended, failures := true, false
	for _, id := range b.jobs {
		s := m.stateOf(id)
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
	_, canceled, err := e.cancelBatch(id)
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
		// One that moved stays as it is there.
		if mj := m.jobs[jid]; mj != nil && (mj.state == StateReady || mj.state == StateScheduled) {
			m.finish(jid, mj, StateCanceled, ActionCanceled, "sam")
			want = append(want, jid)
		}
	}
	slices.Sort(want)
	slices.Sort(canceled)
	if !slices.Equal(canceled, want) {
		e.t.Fatalf("cancel batch canceled %v, model %v", canceled, want)
	}
}

// note adds a transition of the job to what the model expects. attempt:
// which attempt a reservation is (a failure or expiry counted its own);
// otherwise the attempts spent.
func (m *model) note(mj *modelJob, a Action, actor string, from, to State) {
	attempt := mj.attempts
	if (from == StateReserved || to == StateReserved) && a != ActionFailed && a != ActionExpired {
		attempt++
	}
	mj.history = append(mj.history, modelEntry{a, actor, from, to, attempt})
}

// backInLine is where a job given back (by action of actor) goes: ready,
// or canceled when its batch is (the action stays the one taken).
func (m *model) backInLine(id string, mj *modelJob, a Action, actor string) {
	if m.overlap > 1 && mj.state == StateReserved && !mj.review {
		// Whoever held a job with overlap never gets it again (but a
		// reviewer, who answers nothing).
		if !slices.Contains(mj.skippedBy, mj.holder) {
			mj.skippedBy = append(mj.skippedBy, mj.holder)
		}
		mj.unassign(mj.holder)
	}
	if b := m.batches[mj.batch]; b != nil && b.canceled {
		m.finish(id, mj, StateCanceled, a, actor)
		return
	}
	if len(mj.others) > 0 {
		// Others hold it: this reservation alone ends.
		m.note(mj, a, actor, StateReserved, StateReserved)
		m.endHold(id, mj, a, actor)
		return
	}
	m.note(mj, a, actor, mj.state, StateReady)
	if mj.state == StateReserved {
		m.endReservation(id, mj)
	}
	mj.state = StateReady
}

// claimable reports whether op may be given the job now.
func (m *model) claimable(mj *modelJob, op string) bool {
	due := mj.state == StateScheduled && !mj.runAt.After(m.now())
	return (mj.state == StateReady || due || m.seatFree(mj)) && !mj.review && !slices.Contains(mj.skippedBy, op) && m.mayTake(mj, op)
}

// seatFree reports whether one more person may hold the job now (seed 4).
func (m *model) seatFree(mj *modelJob) bool {
	return m.atOnce && mj.state == StateReserved && !mj.review && mj.overlap > 1 &&
		len(mj.answers)+1+len(mj.others) < mj.overlap
}

// reviewable reports whether op may be given the job by a review claim.
func (m *model) reviewable(mj *modelJob, op string) bool {
	return mj.state == StateReady && mj.review && !slices.Contains(mj.skippedBy, op)
}

// reviewWeight is how often the review steps come: only where someone is
// in training (seed 3).
func (m *model) reviewWeight() int {
	if m.overlap > 1 {
		return 3
	}
	return 0
}

// mayTake reports whether op may take the job as routed, its fallback
// made if its time came (a claim makes those first).
func (m *model) mayTake(mj *modelJob, op string) bool {
	if mj.routeTo != nil && (mj.fallbackAt.IsZero() || m.now().Before(mj.fallbackAt)) {
		return slices.Contains(mj.routeTo, op)
	}
	return modelSkills[op].Covers(mj.asks)
}

// unassign ends the job's assignment to op, who skipped it or said it
// can't be done: it goes to anyone with its skills.
func (mj *modelJob) unassign(op string) {
	if slices.Equal(mj.routeTo, []string{op}) && mj.fallbackAt.IsZero() {
		mj.routeTo = nil
	}
}

// routed reports whether the job waits in lines of its own.
func (mj *modelJob) routed() bool { return mj.routeTo != nil || len(mj.asks) > 0 || mj.review }

// fallBack makes the fallbacks whose time came, of unfinished jobs: a
// claim's, or the cron job's, after their promotions.
func (m *model) fallBack() {
	for _, id := range m.ids {
		mj := m.jobs[id]
		if mj.away != "" || mj.state == "" || mj.state.Terminal() || mj.fallbackAt.IsZero() || m.now().Before(mj.fallbackAt) {
			continue
		}
		m.note(mj, ActionFellBack, System, mj.state, mj.state)
		mj.routeTo, mj.fallbackAt = nil, time.Time{}
	}
}

// assign assigns a job to a person, or transfers a held one, as a
// supervisor; a finished job stays.
func (m *model) assign() {
	e := m.e
	id := m.pick(States...)
	if held := m.pick(StateReserved); held != "" && m.rnd.IntN(2) == 0 {
		id = held
	}
	if id == "" {
		return
	}
	mj := m.jobs[id]
	person := []string{"ann", "bob", "cat", "dan"}[m.rnd.IntN(4)]
	_, holder, err := e.store.Assign(e.ctx, id, person, "sam")
	switch {
	case mj.state.Terminal():
		if !errors.Is(err, ErrInvalidState) {
			e.t.Fatalf("assign of a %s job: %v", mj.state, err)
		}
		return
	case mj.review:
		// A completion waiting for review is for reviewers.
		if !errors.Is(err, ErrInvalidState) {
			e.t.Fatalf("assign of a job waiting for review: %v", err)
		}
		return
	case len(mj.others) > 0:
		// Held by several at once, it is transferred only from one named.
		if !errors.Is(err, ErrInvalidState) {
			e.t.Fatalf("transfer of a job several hold, naming none: %v", err)
		}
		return
	case m.overlap > 1 && (slices.Contains(mj.skippedBy, person) || mj.state == StateReserved && mj.holder == person):
		// Nobody gets a job with overlap they held.
		if !errors.Is(err, ErrInvalidState) {
			e.t.Fatalf("assign of a job with overlap to %s, who held it: %v", person, err)
		}
		return
	case err != nil:
		e.t.Fatalf("assign of a %s job: %v", mj.state, err)
	case mj.state == StateReserved:
		if holder != mj.holder {
			e.t.Fatalf("transfer of %s's job told holder %q", mj.holder, holder)
		}
		mj.routeTo, mj.fallbackAt = []string{person}, time.Time{}
		m.backInLine(id, mj, ActionTransferred, "sam")
	default:
		m.note(mj, ActionAssigned, "sam", mj.state, mj.state)
		mj.routeTo, mj.fallbackAt = []string{person}, time.Time{}
	}
}

// claim claims as a random operator: the next job, or with review the
// next completion waiting for review.
func (m *model) claim(review bool) {
	e := m.e
	op := modelOperators[m.rnd.IntN(len(modelOperators))]
	var opts []ClaimOption
	if review {
		opts = append(opts, ForReview())
		// rev reviews, and does nothing else: the others may have held
		// every job they could review.
		if m.rnd.IntN(2) == 0 {
			op = "rev"
		}
	}
	key := ""
	if m.rnd.IntN(4) == 0 {
		key = fmt.Sprint("claim-", m.rnd.IntN(3))
		opts = append(opts, WithClaimKey(key))
		// A live reservation made with the key is answered again, and
		// nothing else happens.
		for _, id := range m.ids {
			if mj := m.jobs[id]; mj.take(op) && mj.claimKey == key && m.live(mj) {
				r, err := e.store.Claim(e.ctx, e.queue, op, opts...)
				if err != nil || r == nil || r.Job.ID != id || r.Token != mj.token || !r.Deadline.Equal(mj.deadline) {
					e.t.Fatalf("repeated claim with key %s = %+v, %v; want %s again", key, r, err, id)
				}
				return
			}
		}
	}
	// A claim first reclaims expired reservations (at most promoteOnClaim).
	var expired []string
	for _, id := range m.ids {
		if mj := m.jobs[id]; mj.state == StateReserved && !m.now().Before(mj.firstDeadline()) {
			expired = append(expired, id)
		}
	}
	if len(expired) > promoteOnClaim {
		e.t.Fatalf("model: %d expired reservations, more than one claim reclaims", len(expired))
	}
	for _, id := range expired {
		m.expireAll(id, m.jobs[id])
	}
	var want []string
	for _, id := range m.ids {
		if mj := m.jobs[id]; !review && m.claimable(mj, op) || review && m.reviewable(mj, op) {
			want = append(want, id)
		}
	}
	r, err := e.store.Claim(e.ctx, e.queue, op, append(opts, WithSkills(modelSkills[op]))...)
	if err != nil {
		e.t.Fatalf("claim: %v", err)
	}
	// Promotion happened for every due job, then every fallback that came.
	for _, mj := range m.jobs {
		if mj.state == StateScheduled && !mj.runAt.After(m.now()) {
			m.note(mj, ActionPromoted, System, StateScheduled, StateReady)
			mj.state = StateReady
		}
	}
	m.fallBack()
	if r == nil {
		// Jobs of a capped batch wait outside the claim line for a slot
		// (check proves the line holds every other ready job).
		line, err := e.rdb.ZRange(e.ctx, keysFor(e.queue).Ready(), 0, -1).Result()
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
	// The job claimed is the best op may take, by the queue's one order:
	// earliest due first among those with a due time (order "due"), then
	// by rank, then by id.
	if best := m.best(want, r.Job.ID); best != r.Job.ID {
		e.t.Fatalf("claim by %s gave %s, but %s came first", op, r.Job.ID, best)
	}
	mj := m.jobs[r.Job.ID]
	if mj.routed() {
		m.routedClaims++
	}
	if mj.state == StateReserved {
		// A seat of a job others hold (seed 4).
		mj.others = append(mj.others, mj.hold())
		m.seatClaims++
		m.note(mj, ActionClaimed, op, StateReserved, StateReserved)
	} else {
		m.note(mj, ActionClaimed, op, StateReady, StateReserved)
		if !mj.review {
			mj.overlap = max(m.overlap, len(mj.answers)+1)
		}
	}
	mj.state, mj.token, mj.holder, mj.claimKey = StateReserved, r.Token, op, key
	mj.reservedAt, mj.deadline, mj.extensions = m.now(), m.now().Add(60*time.Second), 0
	if m.atOnce && mj.overlap > 1 && !mj.review {
		// Held at once by several, a job is marked for its holder as
		// they claim it: nobody holds it twice.
		if !slices.Contains(mj.skippedBy, op) {
			mj.skippedBy = append(mj.skippedBy, op)
		}
		mj.unassign(op)
	}
}

// live reports whether the job's reservation is still good now.
func (m *model) live(mj *modelJob) bool {
	return mj.state == StateReserved && m.now().Before(mj.deadline)
}

func (m *model) endReservation(id string, mj *modelJob) {
	m.stale = append(m.stale, claimed{id, mj.token, mj.holder})
	mj.lastToken, mj.lastHolder = mj.token, mj.holder
	mj.token, mj.holder, mj.claimKey = "", "", ""
}

// endHold ends the job's reservation while others hold it (action a of
// actor): one of them is the job's now.
func (m *model) endHold(id string, mj *modelJob, a Action, actor string) {
	m.stale = append(m.stale, claimed{id, mj.token, mj.holder})
	m.noteEnded(mj, a, actor)
	mj.setHold(mj.others[0])
	mj.others = mj.others[1:]
	if len(mj.others) == 0 {
		mj.others = nil
	}
}

// dropOthers ends the job's other reservations, oldest first, as a change
// that ends the job (action a of actor) ends them.
func (m *model) dropOthers(id string, mj *modelJob, a Action, actor string) {
	own := mj.hold()
	for _, h := range mj.holds() {
		if h.token == own.token {
			continue
		}
		mj.setHold(h)
		m.note(mj, a, actor, StateReserved, StateReserved)
		m.stale = append(m.stale, claimed{id, h.token, h.holder})
		m.noteEnded(mj, a, actor)
	}
	mj.setHold(own)
	mj.others = nil
}

// noteEnded keeps how the job's reservation ended (action a of actor)
// while others held it.
func (m *model) noteEnded(mj *modelJob, a Action, actor string) {
	mj.ended = append(mj.ended, endedHold{mj.token, mj.holder, actor, a})
	if len(mj.ended) > endedKept {
		mj.ended = mj.ended[1:]
	}
}

// dropping is how a job's other reservations end when it ends in state s
// by action a of actor: taken back by the system when it dies, canceled
// by the system with its batch.
func dropping(s State, a Action, actor string) (Action, string) {
	switch {
	case s == StateDead:
		return ActionForceReleased, System
	case s == StateCanceled && a != ActionCanceled:
		return ActionCanceled, System
	}
	return a, actor
}

// finish ends the job in state s by action of actor.
func (m *model) finish(id string, mj *modelJob, s State, a Action, actor string) {
	if mj.state == StateReserved {
		da, dactor := dropping(s, a, actor)
		m.dropOthers(id, mj, da, dactor)
	}
	m.note(mj, a, actor, mj.state, s)
	if mj.state == StateReserved {
		m.endReservation(id, mj)
	}
	mj.state, mj.skippedBy = s, nil
	mj.review, mj.author = false, ""
}

// expire ends a reservation that ran out: an attempt spent, but a
// review's, which waits for a reviewer again.
func (m *model) expire(id string, mj *modelJob) {
	if mj.review {
		m.backInLine(id, mj, ActionExpired, System)
		return
	}
	m.spendAttempt(id, mj, ActionExpired, System)
}

// expireAll ends each of the job's reservations that ran out, the first
// deadline first (then by holder), while it is reserved.
func (m *model) expireAll(id string, mj *modelJob) {
	for mj.state == StateReserved {
		first := mj.hold()
		for _, h := range mj.others {
			if h.deadline.Before(first.deadline) || h.deadline.Equal(first.deadline) && h.holder < first.holder {
				first = h
			}
		}
		if m.now().Before(first.deadline) {
			return
		}
		mj.take(first.holder)
		m.expire(id, mj)
	}
}

// spendAttempt counts a failed or expired attempt (action a of actor).
func (m *model) spendAttempt(id string, mj *modelJob, a Action, actor string) {
	mj.attempts++
	if mj.attempts >= 3 {
		m.finish(id, mj, StateDead, a, actor)
		return
	}
	m.backInLine(id, mj, a, actor)
}

func (m *model) holderAction(action string) {
	e := m.e
	id := m.pick(StateReserved)
	if action == "approve" || action == "send back" {
		// Mostly a review's holder; at times anyone's, refused.
		if r := m.pickReview(); r != "" && m.rnd.IntN(4) != 0 {
			id = r
		}
	}
	if id == "" {
		return
	}
	mj := m.jobs[id]
	if hs := mj.holds(); len(hs) > 1 {
		mj.take(hs[m.rnd.IntN(len(hs))].holder)
	}
	live := m.live(mj)
	var err error
	holder := mj.holder
	switch action {
	case "complete":
		// cat is in training where there is review (seed 3).
		training := holder == "cat" && m.reviewWeight() > 0
		_, err = e.store.Complete(e.ctx, id, Hold{Holder: mj.holder, Token: mj.token, Training: training}, json.RawMessage(`{"ok":true}`))
		switch {
		case !live:
		case mj.review:
			// A review is approved or sent back, never completed.
			if !errors.Is(err, ErrInvalidState) {
				e.t.Fatalf("complete of a review: %v, want ErrInvalidState", err)
			}
			return
		case len(mj.answers)+1 < m.overlap:
			mj.answers = append(mj.answers, holder)
			m.backInLine(id, mj, ActionAnswered, holder)
		case training:
			if m.overlap > 1 {
				mj.answers, mj.agreed = append(mj.answers, holder), true
			}
			// Never reviewed by its author.
			if !slices.Contains(mj.skippedBy, holder) {
				mj.skippedBy = append(mj.skippedBy, holder)
			}
			mj.unassign(holder)
			mj.review, mj.author = true, holder
			m.backInLine(id, mj, ActionSubmitted, holder)
		default:
			if m.overlap > 1 {
				mj.answers, mj.agreed = append(mj.answers, holder), true
			}
			m.finish(id, mj, StateCompleted, ActionCompleted, holder)
		}
	case "approve":
		_, err = e.store.Approve(e.ctx, id, Hold{Holder: mj.holder, Token: mj.token}, nil)
		switch {
		case !live:
		case !mj.review:
			if !errors.Is(err, ErrInvalidState) {
				e.t.Fatalf("approve of no review: %v, want ErrInvalidState", err)
			}
			return
		default:
			m.finish(id, mj, StateCompleted, ActionApproved, holder)
		}
	case "send back":
		first := m.rnd.IntN(2) == 0
		_, err = e.store.SendBack(e.ctx, id, Hold{Holder: mj.holder, Token: mj.token}, "again", first)
		switch {
		case !live:
		case !mj.review:
			if !errors.Is(err, ErrInvalidState) {
				e.t.Fatalf("send back of no review: %v, want ErrInvalidState", err)
			}
			return
		default:
			author := mj.author
			mj.review, mj.author, mj.agreed = false, "", false
			if len(mj.answers) == 0 {
				// Back to its author, who may take it again.
				mj.skippedBy = slices.DeleteFunc(mj.skippedBy, func(op string) bool { return op == author })
				if len(mj.skippedBy) == 0 {
					mj.skippedBy = nil
				}
				if first {
					mj.routeTo, mj.fallbackAt = []string{author}, m.now().Add(SendBackWait)
				}
			}
			m.backInLine(id, mj, ActionSentBack, holder)
		}
	case "release", "skip":
		if action == "skip" {
			_, err = e.store.Skip(e.ctx, id, Hold{Holder: mj.holder, Token: mj.token})
			if live && !slices.Contains(mj.skippedBy, mj.holder) {
				mj.skippedBy = append(mj.skippedBy, mj.holder)
			}
			if live {
				mj.unassign(holder)
			}
		} else {
			_, err = e.store.Release(e.ctx, id, Hold{Holder: mj.holder, Token: mj.token})
		}
		if live {
			a := ActionReleased
			if action == "skip" {
				a = ActionSkipped
			}
			m.backInLine(id, mj, a, holder)
		}
	case "fail":
		_, err = e.store.Fail(e.ctx, id, Hold{Holder: mj.holder, Token: mj.token}, "could not")
		if live && mj.review {
			if !errors.Is(err, ErrInvalidState) {
				e.t.Fatalf("fail of a review: %v, want ErrInvalidState", err)
			}
			return
		}
		if live {
			m.spendAttempt(id, mj, ActionFailed, holder)
			// Back in line, it is not offered to whoever reported it.
			if mj.state == StateReady && !slices.Contains(mj.skippedBy, holder) {
				mj.skippedBy = append(mj.skippedBy, holder)
			}
			if mj.state == StateReady {
				mj.unassign(holder)
			}
		}
	case "extend":
		secs := 1 + m.rnd.IntN(120)
		var j *Job
		j, err = e.store.Extend(e.ctx, id, Hold{Holder: mj.holder, Token: mj.token}, secs)
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
				m.note(mj, ActionExtended, holder, StateReserved, StateReserved)
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

// staleAction has a holder complete or give back with the token of a
// reservation that ended: refused, unless it repeats the action that ended
// it and nobody claimed the job since (a retry whose answer was lost),
// which is answered as the first time. Either way nothing changes.
func (m *model) staleAction() {
	e := m.e
	if len(m.stale) == 0 {
		return
	}
	c := m.stale[m.rnd.IntN(len(m.stale))]
	mj := m.jobs[c.id]
	h := Hold{Holder: c.holder, Token: c.token}
	if mj == nil {
		// It moved to the breach queue: not here any more.
		if _, err := e.store.Release(e.ctx, c.id, h); !errors.Is(err, ErrNotFound) {
			e.t.Fatalf("release of a job that moved, by its old id: %v, want ErrNotFound", err)
		}
		return
	}
	var a Action
	var err error
	if m.rnd.IntN(2) == 0 {
		a = ActionCompleted
		_, err = e.store.Complete(e.ctx, c.id, h, json.RawMessage(`{"stale":true}`))
	} else {
		a = ActionReleased
		_, err = e.store.Release(e.ctx, c.id, h)
	}
	// A due time's moments are no one's action: the retry looks past them.
	last := mj.history[len(mj.history)-1]
	for i := len(mj.history) - 1; i > 0 && (last.action == ActionAtRisk || last.action == ActionBreached); i-- {
		last = mj.history[i-1]
	}
	// (An answer to a job with overlap is its holder's completion.)
	did := func(last Action) bool {
		return last == a || a == ActionCompleted && slices.Contains([]Action{ActionAnswered, ActionSubmitted, ActionApproved}, last)
	}
	var retry bool
	if mj.state != StateReserved && mj.lastToken == c.token {
		retry = did(last.action) && last.actor == c.holder
	} else if i := slices.IndexFunc(mj.ended, func(e endedHold) bool { return e.token == c.token }); i >= 0 {
		// It ended while others held the job (seed 4).
		e := mj.ended[i]
		retry = e.holder == c.holder && e.actor == c.holder && did(e.action)
	}
	if retry && err != nil || !retry && !errors.Is(err, ErrReservationLost) {
		e.t.Fatalf("%s with an ended reservation's token (a retry: %v): %v", a, retry, err)
	}
}

// othersAction has someone other than the holder act with the holder's live
// token: forbidden, and nothing changes.
func (m *model) othersAction() {
	e := m.e
	id := m.pick(StateReserved)
	if id == "" {
		return
	}
	mj := m.jobs[id]
	if !m.live(mj) {
		return
	}
	other := modelOperators[(slices.Index(modelOperators, mj.holder)+1)%len(modelOperators)]
	_, err := e.store.Complete(e.ctx, id, Hold{Holder: other, Token: mj.token}, json.RawMessage(`{"by":"someone else"}`))
	if !errors.Is(err, ErrForbidden) {
		e.t.Fatalf("complete by %s with %s's token: %v, want ErrForbidden", other, mj.holder, err)
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
		if mj := m.jobs[id]; mj.state == StateReserved && !m.now().Before(mj.firstDeadline()) {
			expired = append(expired, id)
		}
	}
	moved, more, err := e.reclaim(limit)
	if err != nil {
		e.t.Fatalf("reclaim: %v", err)
	}
	// Each job reclaimed once, every reservation of it that ran out
	// (checkTold checks each transition).
	var jobs []string
	for _, r := range moved {
		if !slices.Contains(jobs, r.JobID) {
			jobs = append(jobs, r.JobID)
		}
	}
	if len(jobs) != min(limit, len(expired)) || more != (len(expired) > limit) {
		e.t.Fatalf("reclaim moved %d (more %v) of %d expired, limit %d", len(jobs), more, len(expired), limit)
	}
	for _, id := range jobs {
		if !slices.Contains(expired, id) {
			e.t.Fatalf("reclaimed %s, which had not expired", id)
		}
		m.expireAll(id, m.jobs[id])
	}
}

func (m *model) promote() {
	e := m.e
	ids, _, err := e.promote(100)
	if err != nil {
		e.t.Fatalf("promote: %v", err)
	}
	for _, id := range ids {
		mj := m.jobs[id]
		if mj.state != StateScheduled || mj.runAt.After(m.now()) {
			e.t.Fatalf("promoted %s in state %s due %v", id, mj.state, mj.runAt)
		}
		m.note(mj, ActionPromoted, System, StateScheduled, StateReady)
		mj.state = StateReady
	}
	m.fallBack()
}

// best returns which of the jobs, all claimable, a claim takes first, as
// stored after the claim that took claimed: in a queue that claims
// earliest due first, the earliest due of those in line with a due time;
// else, or if none has one, the lowest rank; on a tie, the lowest id. A
// job parked for a batch slot is in no line.
func (m *model) best(ids []string, claimed string) string {
	e := m.e
	type cand struct {
		id        string
		due, rank float64
	}
	var c []cand
	for _, id := range ids {
		raw, err := e.rdb.HGet(e.ctx, keysFor(e.queue).Meta(), localID(id)).Result()
		if err != nil {
			e.t.Fatal(err)
		}
		j, err := decodeJob(id, raw, "", time.Time{})
		if err != nil {
			e.t.Fatal(err)
		}
		if id != claimed && j.State != StateReserved { // (a seat's: seed 4)
			if _, err := e.rdb.ZScore(e.ctx, keysFor(e.queue).Ready(), localID(id)).Result(); err != nil {
				continue // parked
			}
		}
		x := cand{id: id, rank: j.rank}
		if m.order == OrderDue && j.DueAt != nil {
			x.due = float64(ms(*j.DueAt))
		}
		c = append(c, x)
	}
	if len(c) == 0 {
		return ""
	}
	return slices.MinFunc(c, func(a, b cand) int {
		if (a.due > 0) != (b.due > 0) {
			if a.due > 0 {
				return -1
			}
			return 1
		}
		if a.due != b.due {
			return cmp.Compare(a.due, b.due)
		}
		if a.rank != b.rank {
			return cmp.Compare(a.rank, b.rank)
		}
		return strings.Compare(localID(a.id), localID(b.id))
	}).id
}

// watchDue handles the moments of due times that came, a few at a time:
// each unfinished job past its warn point is at risk, past its due time
// breached, once.
func (m *model) watchDue() {
	e := m.e
	limit := 1 + m.rnd.IntN(4)
	for {
		_, more, err := e.store.WatchDue(e.ctx, e.queue, limit)
		if err != nil {
			e.t.Fatalf("WatchDue: %v", err)
		}
		if !more {
			break
		}
	}
	for _, id := range m.ids {
		mj := m.jobs[id]
		if mj.dueAt.IsZero() || mj.state.Terminal() {
			continue
		}
		if !mj.atRisk && !m.now().Before(mj.warnAt) {
			mj.atRisk = true
			m.note(mj, ActionAtRisk, System, mj.state, mj.state)
		}
		if !mj.breached && !m.now().Before(mj.dueAt) {
			mj.breached = true
			m.note(mj, ActionBreached, System, mj.state, mj.state)
			if m.breachQueue != "" && (mj.state == StateReady || mj.state == StateScheduled) {
				mj.away = localID(id) + "." + m.breachQueue
			}
		}
	}
	for {
		_, more, err := e.store.MoveBreached(e.ctx, e.queue, limit)
		if err != nil {
			e.t.Fatalf("MoveBreached: %v", err)
		}
		if !more {
			break
		}
	}
	// Each moved as it was, its old id leading to it.
	for _, id := range m.ids {
		mj := m.jobs[id]
		if mj.away == "" {
			continue
		}
		j, err := e.store.Get(e.ctx, mj.away)
		if err != nil {
			e.t.Fatalf("job %s moved to %s: %v", id, mj.away, err)
		}
		hist, _, err := j.History()
		if err != nil || j.State != mj.state || j.Attempts != mj.attempts || j.MovedFrom != e.queue || len(j.SkippedBy) != 0 ||
			!j.RunAt.Equal(mj.runAt) || hist[len(hist)-1].Action != ActionMoved {
			e.t.Fatalf("job %s moved as %+v, history %+v (%v); model %+v", id, j, hist, err, mj)
		}
		if to, ok, err := e.store.MovedTo(e.ctx, id); err != nil || !ok || to != mj.away {
			e.t.Fatalf("MovedTo(%s) = %s, %v, %v", id, to, ok, err)
		}
		m.note(mj, ActionMoved, System, mj.state, "")
		mj.state, mj.skippedBy = "", nil
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
	_, _, err := e.store.Cancel(e.ctx, id, "sam", force)
	if mj.state == StateReady || mj.state == StateScheduled || (mj.state == StateReserved && force) {
		if err != nil {
			e.t.Fatalf("cancel %s job: %v", mj.state, err)
		}
		m.finish(id, mj, StateCanceled, ActionCanceled, "sam")
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
	_, _, err := e.store.Requeue(e.ctx, id, "sam")
	canceled := m.batches[mj.batch] != nil && m.batches[mj.batch].canceled
	switch {
	case mj.state == StateDead && !canceled:
		if err != nil {
			e.t.Fatalf("requeue %s job: %v", mj.state, err)
		}
		// Its wait starts over; its due time stays, what came meanwhile
		// taken as come.
		mj.attempts, mj.runAt = 0, m.now()
		// Still nobody answers it twice.
		for _, op := range mj.answers {
			if !slices.Contains(mj.skippedBy, op) {
				mj.skippedBy = append(mj.skippedBy, op)
			}
		}
		m.backInLine(id, mj, ActionRequeued, "sam")
		if !mj.dueAt.IsZero() {
			mj.atRisk = mj.atRisk || !m.now().Before(mj.warnAt)
			mj.breached = mj.breached || !m.now().Before(mj.dueAt)
		}
	case mj.state == StateReserved:
		if err != nil {
			e.t.Fatalf("requeue %s job: %v", mj.state, err)
		}
		// Naming no holder, it takes the job from everyone.
		m.dropOthers(id, mj, ActionForceReleased, "sam")
		m.backInLine(id, mj, ActionForceReleased, "sam")
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
	localMetas, err := e.rdb.HGetAll(e.ctx, k.Meta()).Result()
	if err != nil {
		t.Fatal(err)
	}
	metas := map[string]string{}
	for id, raw := range localMetas {
		metas[globalID(id, e.queue)] = raw
	}
	here := 0
	for _, mj := range m.jobs {
		if mj.away == "" {
			here++
		}
	}
	if len(metas) != here {
		fail("%d jobs stored, model has %d", len(metas), here)
	}
	seen := map[string]State{}
	scores := map[string]float64{}
	for _, s := range States {
		members, err := e.rdb.ZRangeWithScores(e.ctx, stateKey(k, s), 0, -1).Result()
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
	members, err := e.rdb.ZRange(e.ctx, k.Parked(), 0, -1).Result()
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
	if len(seen) != here {
		fail("%d jobs indexed, model has %d", len(seen), here)
	}
	tokens := map[string]bool{}
	for id, mj := range m.jobs {
		if mj.away != "" {
			continue
		}
		raw, ok := metas[id]
		if !ok {
			fail("job %s disappeared", id)
		}
		j, err := decodeJob(id, raw, "", time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if j.State != mj.state || seen[id] != mj.state {
			fail("job %s: stored state %s, index %s, model %s", id, j.State, seen[id], mj.state)
		}
		if j.Attempts != mj.attempts || !slices.Equal(j.SkippedBy, mj.skippedBy) || !j.RunAt.Equal(mj.runAt) {
			fail("job %s: attempts %d skipped %v run_at %v, model %d %v %v", id, j.Attempts, j.SkippedBy, j.RunAt, mj.attempts, mj.skippedBy, mj.runAt)
		}
		m.checkHistory(fail, id, j, parked[id] == "" && seen[id] == StateReady)
		if m.overlap > 1 {
			m.checkAnswers(fail, id, mj)
		}
		if author := ""; (j.Review != nil) != mj.review || j.Review != nil && j.Review.Author != mj.author {
			if j.Review != nil {
				author = j.Review.Author
			}
			fail("job %s waits for review by %q (%v), model %v by %q", id, author, j.Review != nil, mj.review, mj.author)
		}
		if !slices.Equal(j.Skills, mj.asks.List()) && len(j.Skills)+len(mj.asks) > 0 {
			fail("job %s asks for %q, model %q", id, j.Skills, mj.asks.List())
		}
		people, until := j.Preferred, time.Time{}
		if j.Assignee != "" {
			people = []string{j.Assignee}
		}
		if j.FallbackAt != nil {
			until = *j.FallbackAt
		}
		if !slices.Equal(people, mj.routeTo) || !until.Equal(mj.fallbackAt) {
			fail("job %s is for %q until %v, model %q until %v", id, people, until, mj.routeTo, mj.fallbackAt)
		}
		switch j.State {
		case StateReserved:
			// Each reservation, as the model has it; the job filed by the
			// first deadline.
			hs, each := mj.holds(), j.Each()
			if len(each) != len(hs) || len(hs) > 1 && len(j.Holders) != len(hs) {
				fail("job %s: %d reservations, model %d", id, len(each), len(hs))
			}
			for i, r := range each {
				if r.token == "" || r.token != hs[i].token || tokens[r.token] || r.ReservedBy != hs[i].holder || !r.Deadline.Equal(hs[i].deadline) {
					fail("job %s: reservation token/holder %q/%q until %v, model %+v", id, r.token, r.ReservedBy, r.Deadline, hs[i])
				}
				tokens[r.token] = true
			}
			if float64(ms(mj.firstDeadline())) != scores[id] {
				fail("job %s: filed at %v, model's first deadline %v", id, scores[id], mj.firstDeadline())
			}
		case StateReady:
			if member, ok := parked[id]; ok {
				if want := fmt.Sprintf("%s|%017.0f|%s", localID(mj.batch), j.rank+1e14, localID(id)); member != want {
					fail("job %s parked as %q, want %q", id, member, want)
				}
			} else if scores[id] != j.rank+routedScore(mj) {
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
	got, _ := e.rdb.SMembers(e.ctx, k.Skips()).Result()
	if len(got) != len(want) {
		fail("%d skip records, model %d", len(got), len(want))
	}
	for _, s := range got {
		if !want[s] {
			fail("stray skip record %q", s)
		}
	}
	// The holding index names every live reservation by its holder, and
	// nothing else.
	holding := map[string]bool{}
	for id, mj := range m.jobs {
		for _, h := range mj.holds() {
			holding[h.holder+"\n"+localID(id)] = true
		}
	}
	filed, _ := e.rdb.ZRange(e.ctx, k.Holding(), 0, -1).Result()
	if len(filed) != len(holding) {
		fail("%d reservations filed by holder, model has %d", len(filed), len(holding))
	}
	for _, f := range filed {
		if !holding[f] {
			fail("stray reservation filed by holder: %q", f)
		}
	}
	// The waiting index holds every ready job, parked ones too, since it
	// came due, and nothing else; a plain queue keeps none, each of its
	// ready jobs in line at its run_at less the queue's offset (lib.lua,
	// The oldest wait). Either way the oldest wait is the ready jobs'
	// earliest run_at.
	ready, oldest := 0, int64(0)
	for id, s := range seen {
		if s == StateReady {
			ready++
			if j, err := decodeJob(id, metas[id], "", time.Time{}); err == nil && (oldest == 0 || ms(j.RunAt) < oldest) {
				oldest = ms(j.RunAt)
			}
		}
	}
	index := k.Waiting()
	plain, err := e.rdb.HGet(e.ctx, k.Conf(), "plain").Result()
	offset := 0.0
	// (An index kept, whole, counts whatever plain says.)
	if err == nil && !e.rdb.HExists(e.ctx, k.Conf(), "waiting_indexed").Val() {
		m.plainChecks++
		offset, _ = strconv.ParseFloat(plain, 64)
		if n := e.rdb.ZCard(e.ctx, k.Waiting()).Val(); n != 0 {
			fail("a plain queue (%q) keeps %d jobs in the waiting index", plain, n)
		}
		index = k.Ready()
	}
	waiting, _ := e.rdb.ZRangeWithScores(e.ctx, index, 0, -1).Result()
	if len(waiting) != ready {
		fail("%d jobs in %s, %d ready", len(waiting), index, ready)
	}
	for _, z := range waiting {
		id := globalID(z.Member.(string), e.queue)
		j, err := decodeJob(id, metas[id], "", time.Time{})
		if err != nil || j.State != StateReady || float64(ms(j.RunAt)) != z.Score-offset {
			fail("job %s waits in %s since %v less %v: %+v, %v", id, index, z.Score, offset, j, err)
		}
	}
	st, err := e.store.Stats(e.ctx, e.queue)
	since := int64(0)
	if err == nil && st.OldestWaitingSince != nil {
		since = ms(*st.OldestWaitingSince)
	}
	if err != nil || since != oldest {
		fail("oldest waiting since %d ms (%v), want %d", since, err, oldest)
	}
	m.checkDue(fail, scores, seen, parked)
	m.checkBatches(fail, parked)
	m.checkRouting(fail, seen, parked)
}

// routedScore is what a routed job's scores in the ready indexes are
// raised by (lua/lib.lua, Routing).
func routedScore(mj *modelJob) float64 {
	if mj.routed() {
		return 1e15
	}
	return 0
}

// checkAnswers checks the answers of a job with overlap: as the model
// says, each by another person, and their agreement once the last came
// (a reviewer who sends the job back asks one more person).
func (m *model) checkAnswers(fail func(string, ...any), id string, mj *modelJob) {
	j, err := m.e.store.Get(m.e.ctx, id)
	if err != nil {
		fail("get %s: %v", id, err)
	}
	var by []string
	for _, a := range j.Answers {
		if slices.Contains(by, a.By) {
			fail("job %s answered twice by %s", id, a.By)
		}
		by = append(by, a.By)
	}
	if !slices.Equal(by, mj.answers) {
		fail("job %s answered by %q, model %q", id, by, mj.answers)
	}
	if mj.agreed != (j.Agreement != nil) || mj.state == StateCompleted && mj.agreed && string(j.Result) != `{"ok":true}` {
		fail("job %s (%s, agreed %v): result %s, agreement %v", id, mj.state, mj.agreed, j.Result, j.Agreement)
	}
}

// checkRouting checks the lines of routed jobs against the model: each
// routed job in line is in exactly its lines, by rank and by due time; the
// skills lines' counts are right; the fallbacks to come are exactly those
// of the unfinished preferred jobs.
func (m *model) checkRouting(fail func(string, ...any), seen map[string]State, parked map[string]string) {
	e := m.e
	k := keysFor(e.queue)
	lines, counts, fallbacks := map[string]bool{}, map[string]string{}, map[string]float64{}
	for id, mj := range m.jobs {
		if mj.away != "" || mj.state == "" {
			continue
		}
		if !mj.fallbackAt.IsZero() && !mj.state.Terminal() {
			fallbacks[localID(id)] = float64(ms(mj.fallbackAt))
		}
		// A job with a seat free waits in the seat lines (seed 4).
		seat := m.seatFree(mj)
		if !seat && (!mj.routed() || seen[id] != StateReady || parked[id] != "") {
			continue
		}
		j, err := e.store.Get(e.ctx, id)
		if err != nil {
			e.t.Fatal(err)
		}
		var names []string
		for _, p := range mj.routeTo {
			names = append(names, "@"+p)
		}
		if mj.review {
			names = []string{"!review"}
		}
		if names == nil && len(mj.asks) > 0 {
			names = []string{"+" + mj.asks.String()}
			if !seat {
				n, _ := strconv.Atoi(counts[names[0]])
				counts[names[0]] = strconv.Itoa(n + 1)
			}
		}
		if seat {
			if names == nil {
				names = []string{""}
			}
			for i := range names {
				names[i] = seatLine + names[i]
			}
		}
		for _, line := range names {
			lines[fmt.Sprintf("r%s|%017.0f|%s", line, j.rank+1e14, localID(id))] = true
			if j.DueAt != nil {
				lines[fmt.Sprintf("d%s|%017d|%s", line, ms(*j.DueAt)+1e14, localID(id))] = true
			}
		}
	}
	got, err := e.rdb.ZRange(e.ctx, k.Routed(), 0, -1).Result()
	if err != nil {
		e.t.Fatal(err)
	}
	if len(got) != len(lines) {
		fail("the routed lines hold %q, model %v", got, lines)
	}
	for _, member := range got {
		if !lines[member] {
			fail("the routed lines hold %q, model %v", member, lines)
		}
	}
	// Each line with a job has its first's score in the heads.
	heads := map[string]string{}
	for member := range lines {
		line, place, _ := strings.Cut(member, "|")
		if old, ok := heads[line]; !ok || place < old {
			heads[line] = place
		}
	}
	gotHeads, _ := e.rdb.HGetAll(e.ctx, k.Heads()).Result()
	if !maps.Equal(gotHeads, heads) {
		fail("the lines' heads are %v, model %v", gotHeads, heads)
	}
	// Each skills line with a job is known, and stays so.
	known, _ := e.rdb.HGetAll(e.ctx, k.Routes()).Result()
	for line := range counts {
		if known[line] != "1" {
			fail("the skills line %s is not known: %v", line, known)
		}
	}
	zs, _ := e.rdb.ZRangeWithScores(e.ctx, k.Fallback(), 0, -1).Result()
	gotFallbacks := map[string]float64{}
	for _, z := range zs {
		gotFallbacks[z.Member.(string)] = z.Score
	}
	if !maps.Equal(gotFallbacks, fallbacks) {
		fail("fallbacks to come %v, model %v", gotFallbacks, fallbacks)
	}
}

// checkDue checks the indexes by due time against the model: sla holds
// each unfinished job with a due time not yet breached, by its next
// moment; late each unfinished one at risk, by its due time; readydue
// each one in the claim line (not parked), by its due time.
func (m *model) checkDue(fail func(string, ...any), scores map[string]float64, seen map[string]State, parked map[string]string) {
	e := m.e
	k := keysFor(e.queue)
	want := map[string]map[string]float64{k.SLA(): {}, k.Late(): {}, k.ReadyDue(): {}}
	for id, mj := range m.jobs {
		if mj.dueAt.IsZero() || mj.state.Terminal() || mj.away != "" {
			continue
		}
		due := float64(ms(mj.dueAt))
		switch {
		case !mj.atRisk:
			want[k.SLA()][localID(id)] = float64(ms(mj.warnAt))
		case !mj.breached:
			want[k.SLA()][localID(id)] = due
		}
		if mj.atRisk {
			want[k.Late()][localID(id)] = due
		}
		if seen[id] == StateReady && parked[id] == "" {
			want[k.ReadyDue()][localID(id)] = due + routedScore(mj)
		}
	}
	for key, w := range want {
		zs, err := e.rdb.ZRangeWithScores(e.ctx, key, 0, -1).Result()
		if err != nil {
			e.t.Fatal(err)
		}
		got := map[string]float64{}
		for _, z := range zs {
			got[z.Member.(string)] = z.Score
		}
		if !maps.Equal(got, w) {
			fail("%s holds %v, model %v", key, got, w)
		}
	}
}

// checkBatches compares every batch's record with the real states of its
// jobs, and checks its slots: never more reserved than the cap, and no slot
// free while a job of the batch is parked.
func (m *model) checkBatches(fail func(string, ...any), parked map[string]string) {
	e := m.e
	k := keysFor(e.queue)
	line, err := e.rdb.ZRange(e.ctx, k.Ready(), 0, -1).Result()
	if err != nil {
		e.t.Fatal(err)
	}
	inLine := map[string]bool{}
	for _, id := range line {
		inLine[globalID(id, e.queue)] = true
	}
	records, err := e.rdb.HGetAll(e.ctx, k.Batches()).Result()
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
			switch m.stateOf(id) {
			case stateMoved:
				want.Moved++
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
			r.Dead != want.Dead || r.Canceled != want.Canceled || r.Admitted != want.Admitted || r.Moved != want.Moved {
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
	if n, _ := e.rdb.ZCard(e.ctx, k.Members()).Result(); int(n) != jobs {
		fail("%d batch members recorded, model has %d", n, jobs)
	}
}

// checkHistory compares the job's stored history with the model's: the
// same transitions in the same order, with their actors and attempts, and
// at most one completion. Admissions into a batch slot, which the model
// does not predict, must stand exactly where a job of a capped batch moved
// from parked into line: one since it last became ready while in line
// (inLine), none while parked, never for other jobs.
func (m *model) checkHistory(fail func(string, ...any), id string, j *Job, inLine bool) {
	mj := m.jobs[id]
	h, dropped, err := j.History()
	if err != nil {
		fail("job %s: %v", id, err)
	}
	if len(h) == 0 || h[len(h)-1].To != j.State {
		fail("job %s in state %s, its history ends %+v", id, j.State, h)
	}
	var got []modelEntry
	admitted, completed := 0, 0
	for _, en := range h {
		switch en.Action {
		case ActionAdmitted:
			if en.From != StateReady || en.To != StateReady || en.Actor != System {
				fail("job %s: admission %+v", id, en)
			}
			admitted++
			continue
		case ActionCompleted:
			completed++
		}
		// A due time's moments, a fallback and an assignment leave the job
		// as it was, admitted or not.
		if en.Action != ActionAtRisk && en.Action != ActionBreached && en.Action != ActionFellBack && en.Action != ActionAssigned {
			admitted = 0
		}
		got = append(got, modelEntry{en.Action, en.Actor, en.From, en.To, en.Attempt})
	}
	if completed > 1 {
		fail("job %s completed %d times: %+v", id, completed, h)
	}
	capped := false
	if b := m.batches[mj.batch]; b != nil && b.cap > 0 {
		capped = true
	}
	want := 0
	if capped && inLine && j.State == StateReady {
		want = 1
	}
	if admitted != want {
		fail("job %s (capped %v, in line %v): %d admissions since it became ready, want %d: %+v", id, capped, inLine, admitted, want, h)
	}
	if dropped == 0 {
		if !slices.Equal(got, mj.history) {
			fail("job %s: history %+v, model %+v", id, got, mj.history)
		}
		return
	}
	// Trimmed: the first entries and the latest are kept.
	if len(got) > len(mj.history) || !slices.Equal(got[:3], mj.history[:3]) ||
		!slices.Equal(got[len(got)-10:], mj.history[len(mj.history)-10:]) {
		fail("job %s: trimmed history %+v, model %+v", id, got, mj.history)
	}
}

// checkOutbox checks that the step put in the queue's outbox exactly an
// event per job it ended (each as the step left it) and per batch it
// ended, and then empties the outbox.
func (m *model) checkOutbox(step int, op string) {
	e := m.e
	events, err := e.store.ReadOutbox(e.ctx, e.queue, "model", 1000, time.Hour)
	if err != nil {
		e.t.Fatal(err)
	}
	var got, want []string
	for _, ev := range events {
		id := ""
		if ev.Job != nil {
			id = ev.Job.ID
		} else {
			id = ev.Batch.ID
		}
		got = append(got, string(ev.Type)+" "+id)
		if ev.Job != nil && ev.Type != EventJobSLABreached && string(ev.Job.State) != strings.TrimPrefix(string(ev.Type), "job.") {
			e.t.Fatalf("after step %d (%s): %s of job %s in state %s", step, op, ev.Type, ev.Job.ID, ev.Job.State)
		}
	}
	for _, id := range m.ids {
		for _, h := range m.jobs[id].history[m.jobs[id].told:] {
			if h.to.Terminal() && h.from != h.to {
				want = append(want, "job."+string(h.to)+" "+id)
			}
			if h.action == ActionBreached {
				want = append(want, string(EventJobSLABreached)+" "+id)
			}
		}
	}
	for _, bid := range m.batchIDs {
		b := m.batches[bid]
		_, ended := m.batchState(b)
		if ended && !b.ended {
			want = append(want, string(EventBatchFinished)+" "+bid)
		}
		b.ended = ended
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		e.t.Fatalf("after step %d (%s): outbox %v, want %v", step, op, got, want)
	}
	if err := e.store.AckOutbox(e.ctx, e.queue, events...); err != nil {
		e.t.Fatal(err)
	}
	if st, err := e.store.Outbox(e.ctx, e.queue); err != nil || st.Waiting != 0 || !st.On || st.Lost != 0 {
		e.t.Fatalf("after step %d (%s): outbox %+v, %v; want on and empty", step, op, st, err)
	}
}

// checkTold checks that the observer was told each transition of the step
// exactly once, in each job's order, as the model predicts them.
func (m *model) checkTold(step int, op string) {
	e := m.e
	byJob := map[string][]modelEntry{}
	arrived, movedTo := map[string]bool{}, map[string]bool{}
	for _, to := range m.moved {
		movedTo[to] = true
	}
	for _, t := range e.changes() {
		if t.Queue == m.breachQueue && t.Action == ActionMoved && t.From == "" && !arrived[t.JobID] {
			arrived[t.JobID] = true
			continue
		}
		if t.Queue == m.breachQueue && t.Action == ActionCanceled && movedTo[t.JobID] {
			continue // endMoved's: the model follows no job there
		}
		if t.Queue != e.queue {
			e.t.Fatalf("after step %d (%s): a transition of queue %s", step, op, t.Queue)
		}
		if t.Action != ActionAdmitted {
			byJob[t.JobID] = append(byJob[t.JobID], modelEntry{t.Action, t.Actor, t.From, t.To, t.Attempt})
		}
	}
	for id, mj := range m.jobs {
		if mj.away != "" && !arrived[mj.away] {
			e.t.Fatalf("after step %d (%s): job %s moved to %s untold", step, op, id, mj.away)
		}
		delete(arrived, mj.away)
		want := mj.history[mj.told:]
		if !slices.Equal(byJob[id], want) && len(byJob[id])+len(want) > 0 {
			e.t.Fatalf("after step %d (%s): job %s: told %+v, model %+v", step, op, id, byJob[id], want)
		}
		mj.told = len(mj.history)
		delete(byJob, id)
	}
	for id := range byJob {
		e.t.Fatalf("after step %d (%s): told of job %s, which the model does not know", step, op, id)
	}
	for id := range arrived {
		e.t.Fatalf("after step %d (%s): told of job %s moving in, which the model did not move", step, op, id)
	}
}
