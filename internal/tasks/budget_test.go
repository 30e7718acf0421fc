package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// budgetLine is a script's budget as its file states it, in its header:
// "-- BUDGET <case>: <n> commands".
var budgetLine = regexp.MustCompile(`(?m)^-- BUDGET ([a-z0-9 &]+): (\d+) commands`)

// budgets reads the budgets every script file states, by case.
func budgets(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	entries, err := luaFiles.ReadDir("lua")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := luaFiles.ReadFile("lua/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range budgetLine.FindAllStringSubmatch(string(b), -1) {
			n, _ := strconv.Atoi(m[2])
			out[m[1]] = n
		}
	}
	return out
}

// commandsRun is how many commands Redis ran, those run inside scripts
// included (INFO commandstats), but the FCALLs themselves, the INFOs that
// read the count, and the COMMAND GETKEYS of the tests' key check
// (checkedLibrary).
func commandsRun(t *testing.T, rdb *redis.Client) (n int) {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "cmdstat_"), ":calls=")
		if !ok || name == "fcall" || name == "info" || name == "command|getkeys" {
			continue
		}
		calls, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
		n += calls
	}
	return n
}

// Each of the engine's common operations runs at most as many Redis
// commands as its script's file budgets for it (scripts' own calls
// counted, INFO commandstats), on a standing queue: jobs ready and held,
// nothing expired or due, no skips, no batch, no idempotency key. The
// budgets are exact, so a change that costs Redis a command more must
// raise its budget, in its own commit, with its reason; one that saves a
// command lowers it.
func TestCommandBudgets(t *testing.T) {
	t.Parallel()
	rdb := mustServer(t).Client()
	t.Cleanup(func() { rdb.Close() })
	// The operations run as in production, on the Redis clock; reservations
	// made by a Store whose clock is two hours behind have run out.
	e := newEnv(t, rdb, Queue{})
	ctx, live := e.ctx, New(rdb)
	behind := New(rdb, WithClock(func() time.Time { return time.Now().Add(-2 * time.Hour) }))
	payload := json.RawMessage(`{"text":"` + strings.Repeat("x", 188) + `"}`)
	enqueue := func(n int) {
		jobs := make([]NewJob, n)
		for i := range jobs {
			jobs[i] = NewJob{Title: fmt.Sprint("job ", i), Payload: payload}
		}
		if _, err := live.Enqueue(ctx, e.queue, "pat", jobs); err != nil {
			t.Fatal(err)
		}
	}
	claim := func(s *Store, op string) *Reservation {
		r, err := s.Claim(ctx, e.queue, op)
		if err != nil || r == nil {
			t.Fatalf("claim: %v, %v", r, err)
		}
		return r
	}
	complete := func(r *Reservation) {
		if _, err := live.Complete(ctx, r.Job.ID, r.Hold(), nil); err != nil {
			t.Fatal(err)
		}
	}
	// A standing queue; one job completed, so the Store knows the queue's
	// outcome form, as a running instance does.
	enqueue(100)
	complete(claim(live, "ann"))
	held := []*Reservation{claim(live, "ann"), claim(live, "bob"), claim(live, "cat")}
	var joining []*Reservation
	for _, op := range []string{"hal", "ivy", "jon", "kim", "lea"} {
		joining = append(joining, claim(live, op))
	}
	g := &gate{}
	rdb.AddHook(g)

	got := map[string]int{}
	for _, c := range []struct {
		name string
		run  func()
	}{
		{"enqueue 1 job", func() { enqueue(1) }},
		{"enqueue 100 jobs", func() { enqueue(100) }},
		{"claim", func() { claim(live, "dan") }},
		{"complete", func() { complete(held[0]) }},
		{"complete & next", func() {
			if _, _, _, err := live.CompleteNext(ctx, held[1].Job.ID, held[1].Hold(), nil); err != nil {
				t.Fatal(err)
			}
		}},
		{"release", func() {
			if _, err := live.Release(ctx, held[2].Job.ID, held[2].Hold()); err != nil {
				t.Fatal(err)
			}
		}},
		// Four that come while a fifth is under way go as one joined
		// call (lines.go, sendChanges); the fifth, alone, is held to its
		// own budget above.
		{"4 complete & next joined", func() {
			g.arm()
			var wg sync.WaitGroup
			next := func(r *Reservation) {
				wg.Go(func() {
					if _, _, _, err := live.CompleteNext(ctx, r.Job.ID, r.Hold(), nil); err != nil {
						t.Error(err)
					}
				})
			}
			before := commandsRun(t, rdb)
			next(joining[0])
			<-g.entered
			for i, r := range joining[1:] {
				next(r)
				waitInLine(t, &live.changes, keysFor(e.queue).Conf(), i+1)
			}
			close(g.open)
			wg.Wait()
			if sent := g.pipelines(); !slices.EqualFunc(sent, [][]string{{"complete_next"}, {"many"}}, slices.Equal) {
				t.Fatalf("script calls sent %q, want one alone, then four joined", sent)
			}
			got["4 complete & next joined"] = commandsRun(t, rdb) - before - budgets(t)["complete & next"]
		}},
		{"reclaim 3 jobs", func() {
			for _, op := range []string{"eve", "fay", "gus"} {
				claim(behind, op)
			}
			before := commandsRun(t, rdb)
			if n, _, err := live.ReclaimExpired(ctx, e.queue, 10); err != nil || n != 3 {
				t.Fatalf("reclaimed %d, %v; want 3", n, err)
			}
			got["reclaim 3 jobs"] = commandsRun(t, rdb) - before
		}},
	} {
		before := commandsRun(t, rdb)
		c.run()
		if _, ok := got[c.name]; !ok {
			got[c.name] = commandsRun(t, rdb) - before
		}
	}
	want := budgets(t)
	for name, w := range want {
		if _, ok := got[name]; !ok {
			t.Errorf("a script states a budget for %q (%d commands), which no case here measures", name, w)
		}
	}
	for name, n := range got {
		w, ok := want[name]
		switch {
		case !ok:
			t.Errorf("%s: no script states its budget (-- BUDGET %s: N commands); it ran %d", name, name, n)
		case n > w:
			t.Errorf("%s ran %d commands, over its budget of %d", name, n, w)
		case n < w:
			t.Errorf("%s ran %d commands, under its budget of %d: lower the budget", name, n, w)
		}
	}
}
