package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"claimdesk/internal/keys"

	"github.com/redis/go-redis/v9"
)

// gate holds the first pipeline of script calls a client sends once it is
// armed, until it is opened, and lists the script calls of every pipeline
// since: a test makes calls wait in line behind the first,
// deterministically.
type gate struct {
	mu      sync.Mutex
	armed   bool
	entered chan struct{} // closed once the first pipeline waits
	open    chan struct{}
	sent    [][]string // each pipeline's script calls, by the script's file
}

// arm holds the next pipeline.
func (g *gate) arm() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.armed, g.entered, g.open, g.sent = true, make(chan struct{}), make(chan struct{}), nil
}

func (g *gate) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (g *gate) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (g *gate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		var calls []string
		for _, c := range cmds {
			if c.Name() == "fcall" {
				fn := fmt.Sprint(c.Args()[1])
				calls = append(calls, fn[len("cd_")+16+1:])
			}
		}
		g.mu.Lock()
		first := g.armed && len(calls) > 0
		if first {
			g.armed = false
		}
		if len(calls) > 0 {
			g.sent = append(g.sent, calls)
		}
		entered, open := g.entered, g.open
		g.mu.Unlock()
		if first {
			close(entered)
			<-open
		}
		return next(ctx, cmds)
	}
}

func (g *gate) pipelines() [][]string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.sent
}

// waitInLine waits until n calls wait in the line of key.
func waitInLine[R request](t *testing.T, ls *lines[R], key string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ls.mu.Lock()
		got := 0
		if l := ls.m[key]; l != nil {
			got = len(l.waiting)
		}
		ls.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d calls wait in line %q, want %d", got, key, n)
		}
		time.Sleep(time.Millisecond)
	}
}

func gatedStore(t *testing.T) (*Store, *gate, string) {
	t.Helper()
	rdb := mustServer(t).Client()
	t.Cleanup(func() { rdb.Close() })
	s := New(rdb)
	if _, err := s.PutQueue(context.Background(), Queue{Name: "together"}); err != nil {
		t.Fatal(err)
	}
	g := &gate{}
	rdb.AddHook(g)
	return s, g, "together"
}

// Enqueues of one queue and producer that come while another is under way
// go together, in one script call once it ends; each gets its own jobs
// back, and a key given twice names the job the first of them made.
func TestEnqueuesGoTogether(t *testing.T) {
	t.Parallel()
	s, g, q := gatedStore(t)
	g.arm()
	ctx := context.Background()
	type answer struct {
		out []Enqueued
		err error
	}
	answers := make([]answer, 6)
	var wg sync.WaitGroup
	enqueue := func(i int, j NewJob) {
		wg.Go(func() {
			out, err := s.Enqueue(ctx, q, "pat", []NewJob{j})
			answers[i] = answer{out, err}
		})
	}
	enqueue(0, NewJob{Title: "first"})
	<-g.entered
	for i := 1; i < 4; i++ {
		enqueue(i, NewJob{Title: fmt.Sprint("job ", i)})
		waitInLine(t, &s.enqueues, q+"\x00pat", i)
	}
	enqueue(4, NewJob{Title: "keyed", IdempotencyKey: "k"})
	waitInLine(t, &s.enqueues, q+"\x00pat", 4)
	enqueue(5, NewJob{Title: "keyed again", IdempotencyKey: "k"})
	waitInLine(t, &s.enqueues, q+"\x00pat", 5)
	close(g.open)
	wg.Wait()

	for i, title := range []string{"first", "job 1", "job 2", "job 3", "keyed", "keyed"} {
		a := answers[i]
		if a.err != nil || len(a.out) != 1 || a.out[0].Job.Title != title {
			t.Fatalf("enqueue %d: %+v, %v; want its own job %q", i, a.out, a.err, title)
		}
	}
	if a, b := answers[4].out[0], answers[5].out[0]; a.Job.ID != b.Job.ID || !a.Created || b.Created {
		t.Errorf("a key given twice: %s created %t, then %s created %t; want one job, made by the first", a.Job.ID, a.Created, b.Job.ID, b.Created)
	}
	if sent := g.pipelines(); len(sent) != 2 || len(sent[1]) != 1 || sent[1][0] != "enqueue" {
		t.Errorf("script calls sent %q, want the first alone and then the five that waited in one call", sent)
	}
	if st, err := s.Stats(ctx, q); err != nil || st.Ready != 5 {
		t.Errorf("ready %d, %v; want 5 jobs", st.Ready, err)
	}
}

// A caller that gives up while its enqueue waits in line has nothing
// made: its jobs are never sent.
func TestAnEnqueueGivenUpInLineIsNotSent(t *testing.T) {
	t.Parallel()
	s, g, q := gatedStore(t)
	g.arm()
	ctx := context.Background()
	var wg sync.WaitGroup
	wg.Go(func() {
		if _, err := s.Enqueue(ctx, q, "pat", []NewJob{{Title: "first"}}); err != nil {
			t.Error(err)
		}
	})
	<-g.entered
	waiting, giveUp := context.WithCancel(ctx)
	var err error
	wg.Go(func() { _, err = s.Enqueue(waiting, q, "pat", []NewJob{{Title: "given up"}}) })
	waitInLine(t, &s.enqueues, q+"\x00pat", 1)
	giveUp()
	waitInLine(t, &s.enqueues, q+"\x00pat", 0)
	close(g.open)
	wg.Wait()
	if !errors.Is(err, context.Canceled) {
		t.Errorf("the enqueue given up answered %v, want context.Canceled", err)
	}
	if st, err := s.Stats(ctx, q); err != nil || st.Ready != 1 {
		t.Errorf("ready %d, %v; want only the first job", st.Ready, err)
	}
}

// Changes of one queue that come while another is under way go in one
// round trip, each its own change with its own answer: those of scripts
// that may be joined in one call of "many", one holder's complete done
// while another's, with a stale token, is refused; the numbers' sample
// beside them as a call of its own.
func TestChangesGoTogether(t *testing.T) {
	t.Parallel()
	s, g, q := gatedStore(t)
	ctx := context.Background()
	if _, err := s.Enqueue(ctx, q, "pat", []NewJob{{Title: "a"}, {Title: "b"}, {Title: "c"}, {Title: "d"}}); err != nil {
		t.Fatal(err)
	}
	var held []*Reservation
	for _, op := range []string{"ann", "bob", "cat", "dan"} {
		r, err := s.Claim(ctx, q, op)
		if err != nil || r == nil {
			t.Fatalf("claim: %v, %v", r, err)
		}
		held = append(held, r)
	}
	// A first completion, so the Store knows the queue's outcome form.
	if _, err := s.Complete(ctx, held[3].Job.ID, held[3].Hold(), nil); err != nil {
		t.Fatal(err)
	}
	g.arm()

	line := keys.ForQueue(q).Conf()
	var released, completed, refused, sampled error
	var wg sync.WaitGroup
	wg.Go(func() { _, released = s.Release(ctx, held[0].Job.ID, held[0].Hold()) })
	<-g.entered
	wg.Go(func() { _, completed = s.Complete(ctx, held[1].Job.ID, held[1].Hold(), nil) })
	waitInLine(t, &s.changes, line, 1)
	stale := held[2].Hold()
	stale.Token = "not-the-token"
	wg.Go(func() { _, refused = s.Complete(ctx, held[2].Job.ID, stale, nil) })
	waitInLine(t, &s.changes, line, 2)
	wg.Go(func() { sampled = s.SampleNumbers(ctx, q) })
	waitInLine(t, &s.changes, line, 3)
	close(g.open)
	wg.Wait()

	if released != nil || completed != nil || !errors.Is(refused, ErrReservationLost) || sampled != nil {
		t.Errorf("release %v, complete %v, complete with a stale token %v, sample %v; want nil, nil, ErrReservationLost, nil", released, completed, refused, sampled)
	}
	if sent := g.pipelines(); !slices.EqualFunc(sent, [][]string{{"release"}, {"many", "numbers"}}, slices.Equal) {
		t.Errorf("script calls sent %q, want the release alone, then both completes joined and the sample in one pipeline", sent)
	}
	st, err := s.Stats(ctx, q)
	if err != nil || st.Ready != 1 || st.Reserved != 1 || st.Completed != 2 {
		t.Errorf("ready %d, reserved %d, completed %d, %v; want 1, 1, 2", st.Ready, st.Reserved, st.Completed, err)
	}
	if n, err := s.Numbers(ctx, q); err != nil || len(n) != 1 {
		t.Errorf("numbers sampled beside them: %v, %v; want one minute", n, err)
	}
}

// A panic while a call is sent for others, as an observer of the Store
// may cause, answers that call with an error, as a request's own panic
// would end; the line goes on.
func TestAPanicWhileSendingAnswersAnError(t *testing.T) {
	t.Parallel()
	s, _, q := gatedStore(t)
	ctx := context.Background()
	var once sync.Once
	s.Observe(func(context.Context, Effects) { once.Do(func() { panic("an observer's bug") }) })
	if _, err := s.Enqueue(ctx, q, "pat", []NewJob{{Title: "first"}}); err == nil || !strings.Contains(err.Error(), "an observer's bug") {
		t.Errorf("an enqueue whose observer panicked: %v, want the panic as an error", err)
	}
	if out, err := s.Enqueue(ctx, q, "pat", []NewJob{{Title: "second"}}); err != nil || out[0].Job.Title != "second" {
		t.Errorf("the next enqueue: %v, %v", out, err)
	}
}

// joinCalls makes the calls as one joined call: lead goes alone and is
// held while the calls wait in line behind it, in their order; then they
// go together, as one call of "many".
func joinCalls(t *testing.T, s *Store, g *gate, q string, lead func(), calls ...func()) {
	t.Helper()
	g.arm()
	var wg sync.WaitGroup
	wg.Go(lead)
	<-g.entered
	for i, c := range calls {
		wg.Go(c)
		waitInLine(t, &s.changes, keys.ForQueue(q).Conf(), i+1)
	}
	close(g.open)
	wg.Wait()
	if sent := g.pipelines(); len(sent) < 2 || !slices.Equal(sent[1], []string{"many"}) {
		t.Fatalf("script calls sent %q, want the lead alone, then the others joined", sent)
	}
}

// claimEach claims one job of the queue for each operator.
func claimEach(t *testing.T, s *Store, q string, ops ...string) map[string]*Reservation {
	t.Helper()
	held := map[string]*Reservation{}
	for _, op := range ops {
		r, err := s.Claim(context.Background(), q, op)
		if err != nil || r == nil {
			t.Fatalf("claim for %s: %v, %v", op, r, err)
		}
		held[r.Job.Title] = r
	}
	return held
}

// A change of a joined call that fails (here: a job's record that cannot
// be read) ends the call there: it answers its error, the changes after
// it are not made there and are sent again, and the one before it is
// answered and its batch saved as if it had gone alone.
func TestAFailedJoinedChangeEndsTheCall(t *testing.T) {
	t.Parallel()
	s, g, q := gatedStore(t)
	ctx := context.Background()
	b, _, err := s.CreateBatch(ctx, q, "pat", NewBatch{Title: "b", Jobs: []NewJob{{Title: "in batch"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Enqueue(ctx, q, "pat", []NewJob{{Title: "lead"}, {Title: "unreadable"}, {Title: "after"}, {Title: "first"}}); err != nil {
		t.Fatal(err)
	}
	held := claimEach(t, s, q, "ann", "bob", "cat", "dan", "eve")
	// A first completion, so the Store knows the queue's outcome form.
	if _, err := s.Complete(ctx, held["first"].Job.ID, held["first"].Hold(), nil); err != nil {
		t.Fatal(err)
	}
	bad := held["unreadable"].Job.ID
	if err := s.rdb.HSet(ctx, keys.ForQueue(q).Key(keys.PartMeta), localID(bad), "\x93\x01").Err(); err != nil {
		t.Fatal(err)
	}
	var done, failed, after error
	joinCalls(t, s, g, q, func() { _, _ = s.Extend(ctx, held["lead"].Job.ID, held["lead"].Hold(), 60) },
		func() { _, done = s.Complete(ctx, held["in batch"].Job.ID, held["in batch"].Hold(), nil) },
		func() { _, failed = s.Release(ctx, bad, held["unreadable"].Hold()) },
		func() { _, after = s.Complete(ctx, held["after"].Job.ID, held["after"].Hold(), nil) })

	if done != nil || failed == nil || after != nil {
		t.Errorf("complete %v, release of an unreadable job %v, complete after it %v; want nil, its error, nil", done, failed, after)
	}
	if sent := g.pipelines(); len(sent) != 3 || !slices.Equal(sent[2], []string{"complete"}) {
		t.Errorf("script calls sent %q, want the complete not made sent again alone", sent)
	}
	if got, err := s.GetBatch(ctx, b.ID); err != nil || got.Completed != 1 || got.Reserved != 0 || got.State != BatchCompleted {
		t.Errorf("batch %+v, %v; want its one job completed, and it finished", got, err)
	}
	if j, err := s.Get(ctx, held["after"].Job.ID); err != nil || j.State != StateCompleted {
		t.Errorf("the job whose complete was sent again: %+v, %v; want it completed", j, err)
	}
}

// Each change of a joined call publishes its events as it leaves them: a
// job that dies, finishing its batch, and is requeued in the same call is
// published dead, and its batch finished.
func TestJoinedChangesPublishEachTheirOwn(t *testing.T) {
	t.Parallel()
	s, g, q := gatedStore(t)
	ctx := context.Background()
	if err := s.SetOutbox(ctx, q, true); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.CreateBatch(ctx, q, "pat", NewBatch{Title: "b", Jobs: []NewJob{{Title: "dies", MaxAttempts: 1}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Enqueue(ctx, q, "pat", []NewJob{{Title: "lead"}}); err != nil {
		t.Fatal(err)
	}
	held := claimEach(t, s, q, "ann", "bob")
	dies := held["dies"]
	var failed, requeued error
	joinCalls(t, s, g, q, func() { _, _ = s.Extend(ctx, held["lead"].Job.ID, held["lead"].Hold(), 60) },
		func() { _, failed = s.Fail(ctx, dies.Job.ID, dies.Hold(), "broken") },
		func() { _, _, requeued = s.Requeue(ctx, dies.Job.ID, "sup") })
	if failed != nil || requeued != nil {
		t.Fatalf("fail %v, requeue %v", failed, requeued)
	}
	events, err := s.ReadOutbox(ctx, q, "c", 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range events {
		if e.Job != nil {
			got = append(got, fmt.Sprintf("%s %s", e.Type, e.Job.State))
		} else {
			got = append(got, fmt.Sprintf("%s %s", e.Type, e.Batch.State))
		}
	}
	if want := []string{"job.dead dead", "batch.finished completed_with_failures"}; !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
}

// The changes of a joined call given times of their own (a Store with a
// clock) each look for what expired by their time: a claim at a later time
// reclaims a reservation that ran out after an earlier claim's.
func TestJoinedClaimsAtTheirOwnTimes(t *testing.T) {
	t.Parallel()
	rdb := mustServer(t).Client()
	t.Cleanup(func() { rdb.Close() })
	var now atomic.Int64
	start := time.Now()
	now.Store(start.UnixMilli())
	s := New(rdb, WithClock(func() time.Time { return time.UnixMilli(now.Load()) }))
	g := &gate{}
	rdb.AddHook(g)
	ctx := context.Background()
	q := "clock"
	if _, err := s.PutQueue(ctx, Queue{Name: q, LeaseSeconds: 60}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Enqueue(ctx, q, "pat", []NewJob{{Title: "runs out"}, {Title: "lead"}}); err != nil {
		t.Fatal(err)
	}
	held := claimEach(t, s, q, "eve", "fay")
	var early, late *Reservation
	var earlyErr, lateErr error
	joinCalls(t, s, g, q, func() { _, _ = s.Extend(ctx, held["lead"].Job.ID, held["lead"].Hold(), 600) },
		func() {
			now.Store(start.Add(30 * time.Second).UnixMilli())
			early, earlyErr = s.Claim(ctx, q, "ann")
		},
		func() {
			now.Store(start.Add(61 * time.Second).UnixMilli())
			late, lateErr = s.Claim(ctx, q, "bob")
		})
	if earlyErr != nil || early != nil || lateErr != nil || late == nil || late.Job.ID != held["runs out"].Job.ID {
		t.Errorf("claim at 30s %v, %v; at 61s %v, %v; want none, then the reservation that ran out at 60s", early, earlyErr, late, lateErr)
	}
}

// A skip made in a joined call counts for the claims after it: the
// operator who reported a job cannot be done is not given it again.
func TestAJoinedSkipCountsForTheClaimsAfterIt(t *testing.T) {
	t.Parallel()
	s, g, q := gatedStore(t)
	ctx := context.Background()
	if _, err := s.Enqueue(ctx, q, "pat", []NewJob{{Title: "reported"}, {Title: "lead"}}); err != nil {
		t.Fatal(err)
	}
	held := claimEach(t, s, q, "ann", "kim")
	var first, again *Reservation
	var firstErr, failed, againErr error
	joinCalls(t, s, g, q, func() { _, _ = s.Extend(ctx, held["lead"].Job.ID, held["lead"].Hold(), 60) },
		func() { first, firstErr = s.Claim(ctx, q, "ann") },
		func() { _, failed = s.Fail(ctx, held["reported"].Job.ID, held["reported"].Hold(), "cannot be done") },
		func() { again, againErr = s.Claim(ctx, q, "ann") })
	if firstErr != nil || first != nil || failed != nil || againErr != nil || again != nil {
		t.Errorf("claim %v, %v; fail %v; claim again %v, %v; want nothing to claim, the failure, and still nothing for ann", first, firstErr, failed, again, againErr)
	}
}

// Joined changes end the drafts of the reservations they end as alone: a
// completion drops its live draft, a supervisor's take-back keeps it.
func TestJoinedChangesEndDrafts(t *testing.T) {
	t.Parallel()
	s, g, q := gatedStore(t)
	ctx := context.Background()
	if _, err := s.Enqueue(ctx, q, "pat", []NewJob{{Title: "done"}, {Title: "taken"}, {Title: "lead"}, {Title: "first"}}); err != nil {
		t.Fatal(err)
	}
	held := claimEach(t, s, q, "ann", "bob", "cat", "dan")
	if _, err := s.Complete(ctx, held["first"].Job.ID, held["first"].Hold(), nil); err != nil {
		t.Fatal(err)
	}
	for _, title := range []string{"done", "taken"} {
		if _, err := s.SaveDraft(ctx, held[title].Job.ID, held[title].Hold(), json.RawMessage(`{"note":"half"}`)); err != nil {
			t.Fatal(err)
		}
	}
	var completed, taken error
	joinCalls(t, s, g, q, func() { _, _ = s.Extend(ctx, held["lead"].Job.ID, held["lead"].Hold(), 60) },
		func() { _, completed = s.Complete(ctx, held["done"].Job.ID, held["done"].Hold(), nil) },
		func() { _, _, taken = s.Requeue(ctx, held["taken"].Job.ID, "sup") })
	if completed != nil || taken != nil {
		t.Fatalf("complete %v, take back %v", completed, taken)
	}
	left, err := s.rdb.HKeys(ctx, keys.ForQueue(q).Drafts()).Result()
	if want := []string{localID(held["taken"].Job.ID) + "\nkept"}; err != nil || !slices.Equal(left, want) {
		t.Errorf("drafts left %q, %v; want only the one kept from the take-back, %q", left, err, want)
	}
}
