package handlers_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"claimdesk/internal/handlers"
	"claimdesk/internal/tasks"
	"claimdesk/internal/users"

	"github.com/redis/go-redis/v9"
)

// appLogged is an app whose server's every Redis command is logged.
func appLogged(t *testing.T) (*app, *handlers.CommandLog) {
	log := &handlers.CommandLog{}
	var ts *tasks.Store
	a := appWith(t, func(c *handlers.Config) {
		r := redis.NewClient(&redis.Options{Addr: c.Redis.(*redis.Client).Options().Addr})
		t.Cleanup(func() { r.Close() })
		r.AddHook(log.Hook())
		ts = tasks.New(r)
		c.Redis, c.Tasks, c.Users = r, ts, users.New(r)
	})
	ts.Observe(a.announce.Observe)
	return a, log
}

// The operator's home costs a few commands however many others hold jobs
// of the queue, and never reads a payload: the counts come from the
// instance's board, the operator's reservations from their own index.
func TestHomeFragmentIsCheap(t *testing.T) {
	a, log := appLogged(t)
	big := strings.Repeat("x", 20_000)
	for i := range 30 {
		a.expect("POST", "/api/v1/queues/"+a.queue+"/jobs", a.producer,
			fmt.Sprintf(`{"title":"job %d","payload":{"blob":%q}}`, i, big), http.StatusCreated, "")
	}
	for range 25 {
		_, op := a.newUser(users.Operator, a.queue)
		a.expect("POST", "/api/v1/queues/"+a.queue+"/claim", op, "", http.StatusOK, "")
	}
	_, b := a.person(users.Operator, a.queue)
	b.do("GET", "/", nil)
	b.do("POST", "/queues/"+a.queue+"/claim", url.Values{"_csrf": {b.csrf}})
	mine, ok := strings.CutPrefix(b.body, "/jobs/")
	if b.status != http.StatusSeeOther || !ok {
		t.Fatalf("claim: %d %s", b.status, b.body)
	}
	a.published()

	// The board is read once, then shared: the second of two fragments in
	// a row reads only what is the viewer's. A notice of the claims above
	// that arrives between the two, or a slow second, drops the board
	// (board.go), so a few tries are allowed.
	var cmds []string
	for try := 0; try < 5; try++ {
		b.do("GET", "/fragments/home", nil)
		cmds = log.During(func() { b.do("GET", "/fragments/home", nil) })
		if b.status != http.StatusOK || !strings.Contains(b.body, mine) {
			t.Fatalf("home: %d, holding %s listed: %v", b.status, mine, strings.Contains(b.body, mine))
		}
		if strings.Contains(b.body, big[:100]) || len(b.body) > 20_000 {
			t.Fatalf("the home fragment is %d bytes, with payloads?", len(b.body))
		}
		for _, c := range cmds {
			if strings.Contains(c, ":payload") || strings.Contains(c, "list") {
				t.Fatalf("home fragment sent %q", c)
			}
		}
		// The session, the operator's reservations, their recent work.
		if len(cmds) <= 3 {
			return
		}
	}
	t.Fatalf("home fragment sent %d commands, want at most 3: %v", len(cmds), cmds)
}

// Each supervisor fragment reads only what it shows, and neither reads
// anything but the session while nothing changed.
func TestSupervisorFragmentsAreCheap(t *testing.T) {
	a, log := appLogged(t)
	a.enqueue("one")
	_, op := a.newUser(users.Operator, a.queue)
	a.expect("POST", "/api/v1/queues/"+a.queue+"/claim", op, "", http.StatusOK, "")
	_, b := a.person(users.Supervisor)
	b.do("GET", "/supervisor", nil)
	for _, path := range []string{"/supervisor/fragments/stats", "/supervisor/fragments/reservations"} {
		cmds := log.During(func() { b.do("GET", path, nil) })
		if b.status != http.StatusOK {
			t.Fatalf("%s: %d", path, b.status)
		}
		if len(cmds) > 1 {
			t.Fatalf("%s sent %v, want only the session read", path, cmds)
		}
	}
	// A change drops the board: the stats fragment reads the counts
	// again, not the reservations, and the other way round.
	a.enqueue("two")
	a.published()
	cmds := log.During(func() { b.do("GET", "/supervisor/fragments/stats", nil) })
	if !strings.Contains(strings.Join(cmds, "\n"), "stats") || strings.Contains(strings.Join(cmds, "\n"), " list") {
		t.Fatalf("stats fragment after a change sent %v", cmds)
	}
	ready := regexp.MustCompile(`data-stats-queue="` + a.queue + `">.*?data-count="ready">(\d+)</td>`)
	if m := ready.FindStringSubmatch(b.body); m == nil || m[1] != "1" {
		t.Fatalf("stats fragment after a change does not show 1 ready (%v):\n%s", m, b.body)
	}
}
