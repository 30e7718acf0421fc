package handlers

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"claimdesk/internal/keys"
	"claimdesk/internal/notify"
	"claimdesk/internal/tasks"
	"claimdesk/internal/tasks/taskstest"
)

// A shared value is read once for all who want it at once, kept until
// dropped or stale, and a read that a drop overtook is never kept. It runs
// in a synctest bubble: synctest.Wait returns once every request is
// blocked (waiting on a read), and time moves only when the test sleeps.
func TestSharedReadsOnceAndDrops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := shared[int]{ttl: time.Hour}
		var reads atomic.Int64
		release := make(chan struct{})
		read := func(context.Context) (int, error) {
			n := reads.Add(1)
			<-release
			return int(n), nil
		}
		ctx := t.Context()
		var wg sync.WaitGroup
		got := make([]int, 20)
		for i := range got {
			wg.Go(func() { got[i], _ = s.get(ctx, read) })
		}
		// Everyone waits on the one read.
		synctest.Wait()
		if n := reads.Load(); n != 1 {
			t.Fatalf("%d reads under way for 20 requests at once, want 1", n)
		}
		close(release)
		wg.Wait()
		for i, v := range got {
			if v != 1 {
				t.Fatalf("request %d got %d, want the one read's 1", i, v)
			}
		}
		if v, _ := s.get(ctx, read); v != 1 || reads.Load() != 1 {
			t.Fatalf("kept value %d after %d reads, want 1 after 1", v, reads.Load())
		}

		// A drop while a read is under way: the read answers those who asked
		// before the drop, but whoever asks after it gets a read of its own,
		// and the older read is not kept.
		s.drop()
		slow := make(chan struct{})
		first := make(chan int)
		go func() {
			v, _ := s.get(ctx, func(context.Context) (int, error) { <-slow; return 100, nil })
			first <- v
		}()
		synctest.Wait() // the read before the drop is under way
		s.drop()
		if v, _ := s.get(ctx, func(context.Context) (int, error) { return 200, nil }); v != 200 {
			t.Fatalf("after the drop got %d, want a fresh read's 200", v)
		}
		close(slow)
		if v := <-first; v != 100 {
			t.Fatalf("the request before the drop got %d, want 100", v)
		}
		if v, _ := s.get(ctx, func(context.Context) (int, error) { return 300, nil }); v != 200 {
			t.Fatalf("kept %d, want the fresh read's 200, not the overtaken 100", v)
		}

		// Kept until its ttl passes, stale from then on.
		s.ttl = time.Minute
		time.Sleep(s.ttl - time.Nanosecond)
		if v, _ := s.get(ctx, func(context.Context) (int, error) { return 400, nil }); v != 200 {
			t.Fatalf("within its ttl got %d, want the kept 200", v)
		}
		time.Sleep(time.Nanosecond)
		if v, _ := s.get(ctx, func(context.Context) (int, error) { return 400, nil }); v != 400 {
			t.Fatalf("past its ttl the value was kept: %d", v)
		}
	})
}

// Entries read together are read in one call, each single-flight on its
// own: a request waits on the read under way of an entry rather than
// reading it again, and a drop of one entry while its read is under way
// makes that entry alone read afresh, its overtaken value never kept.
func TestSharedEntriesReadTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := &shared[int]{ttl: time.Hour}, &shared[int]{ttl: time.Hour}
		entries := []*shared[int]{a, b}
		var mu sync.Mutex
		var calls [][]int
		// read answers base plus each stale entry's index, once released.
		read := func(base int, release <-chan struct{}) func(context.Context, []int) ([]int, error) {
			return func(_ context.Context, stale []int) ([]int, error) {
				mu.Lock()
				calls = append(calls, slices.Clone(stale))
				mu.Unlock()
				<-release
				out := make([]int, len(stale))
				for k, i := range stale {
					out[k] = base + i
				}
				return out, nil
			}
		}
		ctx := t.Context()
		answer := func(read func(context.Context, []int) ([]int, error)) <-chan []int {
			got := make(chan []int, 1)
			go func() {
				v, err := getEach(ctx, entries, read)
				if err != nil {
					t.Errorf("getEach: %v", err)
				}
				got <- v
			}()
			return got
		}
		releaseFirst, releaseSecond := make(chan struct{}), make(chan struct{})
		first := answer(read(100, releaseFirst))
		synctest.Wait()
		a.drop()
		second := answer(read(200, releaseSecond))
		synctest.Wait()
		if want := [][]int{{0, 1}, {0}}; !reflect.DeepEqual(calls, want) {
			t.Fatalf("reads of the entries %v, want both at once, then the dropped one alone: %v", calls, want)
		}
		// The second read ends first: the first, overtaken by the drop,
		// must not replace what it read.
		close(releaseSecond)
		synctest.Wait()
		close(releaseFirst)
		if v := <-first; !reflect.DeepEqual(v, []int{100, 101}) {
			t.Fatalf("the request before the drop got %v, want its read's [100 101]", v)
		}
		if v := <-second; !reflect.DeepEqual(v, []int{200, 101}) {
			t.Fatalf("the request after the drop got %v, want its own read of the dropped entry and the first read of the other: [200 101]", v)
		}
		if v, _ := getEach(ctx, entries, read(300, releaseFirst)); !reflect.DeepEqual(v, []int{200, 101}) || len(calls) != 2 {
			t.Fatalf("kept %v after %d reads, want [200 101] after 2: the overtaken read of the dropped entry not kept", v, len(calls))
		}
	})
}

// queueEnv is a board over a Redis of the test's own. here is this
// instance's Store: the board observes its changes, and its every command
// is logged. there is another instance's: its changes reach the board only
// as notices do, announced on the bus and delivered by the hub that the
// board taps.
type queueEnv struct {
	t       *testing.T
	srv     *taskstest.Server
	ctx     context.Context
	board   *board
	here    *tasks.Store
	there   *tasks.Store
	log     *CommandLog
	bus     *notify.Bus
	hub     *notify.Hub
	notices chan notify.Notice
}

// newQueueEnv starts a queueEnv whose board keeps each entry ttl.
func newQueueEnv(t *testing.T, ttl time.Duration) *queueEnv {
	t.Parallel()
	srv := taskstest.Redis(t)
	discard := slog.New(slog.DiscardHandler)
	e := &queueEnv{t: t, srv: srv, ctx: t.Context(), board: newBoard(), log: &CommandLog{}, notices: make(chan notify.Notice, 1000)}
	e.board.queues = newQueueBoard(ttl)
	logged := srv.Client()
	logged.AddHook(e.log.Hook())
	e.here, e.there = tasks.New(logged), tasks.New(srv.Client())
	e.here.Observe(e.board.observe)

	e.bus, e.hub = notify.NewBus(srv.Client(), discard), notify.NewHub()
	e.hub.Tap(e.board.heard)
	// After the board's tap: a notice read here has reached the board.
	e.hub.Tap(func(n *notify.Notice) { e.notices <- *n })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.bus.Listen(ctx, e.hub.Deliver) }()
	t.Cleanup(func() { cancel(); <-done })
	deadline := time.Now().Add(5 * time.Second)
	for srv.Client().ZScore(e.ctx, keys.Instances, e.bus.ID()).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatal("the notice listener did not register within 5 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	announce := notify.NewAnnouncer(e.bus, discard)
	e.there.Observe(announce.Observe)
	t.Cleanup(func() {
		if err := announce.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return e
}

// queues makes n queues and returns their names, sorted.
func (e *queueEnv) queues(n int) []string {
	e.t.Helper()
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("queue-%03d", i)
		if _, err := e.there.PutQueue(e.ctx, tasks.Queue{Name: names[i]}); err != nil {
			e.t.Fatal(err)
		}
	}
	return names
}

// read reads the board's queues as a request does, and returns them by
// name, with the commands the read sent.
func (e *queueEnv) read() (map[string]tasks.QueueStats, []string) {
	e.t.Helper()
	var qs []tasks.QueueStats
	var err error
	cmds := e.log.During(func() { qs, err = e.board.queues.get(e.ctx, e.here) })
	if err != nil {
		e.t.Fatal(err)
	}
	byName := map[string]tasks.QueueStats{}
	for i, q := range qs {
		if i > 0 && qs[i-1].Queue.Name >= q.Queue.Name {
			e.t.Fatalf("queues not sorted by name: %s before %s", qs[i-1].Queue.Name, q.Queue.Name)
		}
		byName[q.Queue.Name] = q
	}
	return byName, cmds
}

// enqueue adds a job to the queue through the store s.
func (e *queueEnv) enqueue(s *tasks.Store, queue string) {
	e.t.Helper()
	if _, err := s.Enqueue(e.ctx, queue, "producer", []tasks.NewJob{{Title: "a job"}}); err != nil {
		e.t.Fatal(err)
	}
}

// heard waits until the board has heard a notice of the type about the
// queue.
func (e *queueEnv) heard(typ, queue string) {
	e.t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case n := <-e.notices:
			if n.Type == typ && n.Queue == queue {
				return
			}
		case <-timeout:
			e.t.Fatalf("no %s notice of %s within 10 s", typ, queue)
		}
	}
}

// readsOnly checks that the commands read the stats of the named queues
// alone, one command each.
func readsOnly(t *testing.T, what string, cmds []string, queues ...string) {
	t.Helper()
	if len(cmds) != len(queues) {
		t.Fatalf("%s: %d commands %v, want %d: the stats of %v alone", what, len(cmds), cmds, len(queues), queues)
	}
	for i, q := range queues {
		if !strings.HasPrefix(cmds[i], "fcall ") || !strings.Contains(cmds[i], "_stats cd:{"+q+"}:") {
			t.Fatalf("%s: sent %v, want the stats of %v alone", what, cmds, queues)
		}
	}
}

// A change of one queue, made here or told by another instance's notice,
// costs the next read of the queue list that queue's stats alone: one
// command, with 50 queues as with one, where a read of every queue costs
// one command per queue and one for the list.
func TestQueueBoardReadsOnlyTheChangedQueue(t *testing.T) {
	e := newQueueEnv(t, time.Hour)
	names := e.queues(50)
	e.read()
	e.hub.Deliver(notify.Notice{Type: notify.Resync})
	all, cmds := e.read()
	if len(all) != 50 || len(cmds) != 51 || cmds[0] != "smembers "+keys.Queues {
		t.Fatalf("a resync's read listed %d queues with %d commands, want 50 with the list and a stats call each: %v", len(all), len(cmds), cmds)
	}
	full := len(cmds)
	if _, cmds := e.read(); len(cmds) != 0 {
		t.Fatalf("a read with nothing changed sent %v", cmds)
	}

	// readsReady reads the queue list after a change of one queue, and
	// checks that it read that queue alone and shows the ready counts.
	readsReady := func(what, changed string, ready map[string]int64) {
		t.Helper()
		all, cmds = e.read()
		readsOnly(t, what, cmds, changed)
		if len(all) != 50 {
			t.Fatalf("%s: %d queues, want 50", what, len(all))
		}
		for q, n := range ready {
			if got := all[q].Stats.Ready; got != n {
				t.Fatalf("%s: %s has %d ready, want %d", what, q, got, n)
			}
		}
	}
	e.enqueue(e.here, names[7])
	readsReady("after a change here", names[7], map[string]int64{names[7]: 1, names[8]: 0})
	e.enqueue(e.there, names[23])
	e.heard(notify.QueueChanged, names[23])
	readsReady("after another instance's change", names[23], map[string]int64{names[23]: 1, names[7]: 1})
	t.Logf("with 50 queues, a read of the queue list after one queue's change sends %d command, a read of every queue %d", len(cmds), full)

	// Changes of two queues: both read in one round trip.
	e.enqueue(e.here, names[1])
	e.enqueue(e.here, names[40])
	_, cmds = e.read()
	readsOnly(t, "after changes of two queues", cmds, names[1], names[40])
}

// A change of a queue's settings, here or told by a notice, reads the set
// of queues again with that queue's stats: a queue made or deleted on any
// instance appears or disappears. A queue made elsewhere, which no notice
// tells of, appears with its first change's notice.
func TestQueueBoardSeesQueuesMadeAndDeleted(t *testing.T) {
	e := newQueueEnv(t, time.Hour)
	names := e.queues(3)
	e.read()

	// Made and deleted here (the desk tells the board: SettingsChanged).
	if _, err := e.here.PutQueue(e.ctx, tasks.Queue{Name: "made-here"}); err != nil {
		t.Fatal(err)
	}
	e.board.settingsChanged("made-here")
	all, cmds := e.read()
	if _, ok := all["made-here"]; !ok || len(all) != 4 || len(cmds) != 2 {
		t.Fatalf("after a queue made here: %d queues with %d commands %v, want 4 with made-here, from the list and its stats", len(all), len(cmds), cmds)
	}
	if err := e.here.DeleteQueue(e.ctx, "made-here"); err != nil {
		t.Fatal(err)
	}
	e.board.settingsChanged("made-here")
	if all, _ = e.read(); len(all) != 3 {
		t.Fatalf("after a queue deleted here: %d queues, want 3", len(all))
	}

	// Made elsewhere: its first change's notice tells of it.
	if _, err := e.there.PutQueue(e.ctx, tasks.Queue{Name: "made-there"}); err != nil {
		t.Fatal(err)
	}
	e.enqueue(e.there, "made-there")
	e.heard(notify.QueueChanged, "made-there")
	all, _ = e.read()
	if all["made-there"].Stats.Ready != 1 || len(all) != 4 {
		t.Fatalf("after a queue made elsewhere got a job: %d queues, made-there with %d ready; want 4, and 1", len(all), all["made-there"].Stats.Ready)
	}

	// Paused elsewhere: the notice of its settings.
	if _, err := e.there.SetPaused(e.ctx, names[1], true); err != nil {
		t.Fatal(err)
	}
	e.bus.TellQueueSettings(e.ctx, names[1], true)
	e.heard(notify.QueueSettings, names[1])
	all, cmds = e.read()
	if !all[names[1]].Queue.Paused || len(cmds) != 2 {
		t.Fatalf("after a queue paused elsewhere: paused %v, with %v; want paused, from the list and its stats", all[names[1]].Queue.Paused, cmds)
	}

	// Deleted elsewhere: the notice of its settings.
	if err := e.there.DeleteQueue(e.ctx, names[2]); err != nil {
		t.Fatal(err)
	}
	e.bus.TellQueueSettings(e.ctx, names[2], false)
	e.heard(notify.QueueSettings, names[2])
	if all, _ = e.read(); len(all) != 3 {
		t.Fatalf("after a queue deleted elsewhere: %d queues, want 3", len(all))
	} else if _, ok := all[names[2]]; ok {
		t.Fatalf("%s deleted elsewhere is still listed", names[2])
	}
}

// When notices are lost, the board is no staler than its entries' ttl: a
// change no notice told of shows once the ttl has passed.
func TestQueueBoardStaysNoStalerThanItsTTL(t *testing.T) {
	const ttl = 100 * time.Millisecond
	e := newQueueEnv(t, ttl)
	names := e.queues(2)
	e.read()
	// Changed with nothing told: as if its notice were lost.
	if _, err := tasks.New(e.srv.Client()).Enqueue(e.ctx, names[0], "producer", []tasks.NewJob{{Title: "a job"}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(ttl)
	if all, _ := e.read(); all[names[0]].Stats.Ready != 1 {
		t.Fatalf("%v after the ttl, %s has %d ready, want 1", ttl, names[0], all[names[0]].Stats.Ready)
	}
}
