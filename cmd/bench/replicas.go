package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"claimdesk/internal/keys"
	"claimdesk/internal/tasks"
	"claimdesk/internal/tasks/taskstest"

	"github.com/redis/go-redis/v9"
)

// runReplicas measures what waiting for a replica costs: on a cluster of
// three masters with one replica each, claims and completes through a
// Store that answers once the master has a change, and through one that
// answers once a replica confirmed it too (WAIT after each script, as
// CLAIMDESK_MIN_REPLICAS=1 does). The two take turns, twice each (A B A
// B), so the machine's noise falls on both alike; the better round of
// each counts. Each round works c.jobs/2 jobs of a fresh queue.
func runReplicas(ctx context.Context, c config) (result, error) {
	r := result{Scenario: "replicas: claim and complete on a cluster with a replica per master, without and with WAIT"}
	cl, err := taskstest.StartCluster(taskstest.ClusterConfig{Masters: 3, Replicas: 1})
	if err != nil {
		return r, err
	}
	defer cl.Close()
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), PoolSize: c.concurrency})
	defer client.Close()
	stores := []struct {
		name  string
		store *tasks.Store
	}{
		{"without WAIT", tasks.New(client)},
		{"with WAIT for 1 replica", tasks.New(client, tasks.WithMinReplicas(1, time.Second))},
	}
	counted := countCompletions(stores[0].store, stores[1].store)
	jobs := max(c.jobs/2, 1)
	best := map[string]summary{}
	keep := func(s summary) {
		if s.PerSecond > best[s.Op].PerSecond {
			best[s.Op] = s
		}
	}
	// The changes that waited for no replica: changes (FCALLs, or the
	// changes a joined FCALL made) that no WAIT followed on their
	// connection (one WAIT may follow several, sent together).
	unconfirmed, durable := 0, 0
	for round := range 2 {
		for i, s := range stores {
			queue := fmt.Sprintf("replicas-%d-%d", i, round)
			claim, complete := newRecorder(s.name+": claim"), newRecorder(s.name+": complete")
			master, err := client.MasterForKey(ctx, keys.ForQueue(queue).Conf())
			if err != nil {
				return r, err
			}
			// Both stores run under MONITOR, which costs the master alike;
			// the second's calls are checked.
			mon, err := monitorFCalls(master.Options().Addr)
			if err != nil {
				return r, err
			}
			if err := claimAndComplete(ctx, s.store, queue, jobs, c.concurrency, claim, complete); err != nil {
				return r, fmt.Errorf("%s: %w", s.name, err)
			}
			fcalls, left, err := mon.stop(ctx, master)
			if err != nil {
				return r, err
			}
			if i == 1 {
				unconfirmed += left
				durable += fcalls
			}
			keep(claim.summary())
			keep(complete.summary())
		}
	}
	for _, s := range stores {
		r.Ops = append(r.Ops, best[s.name+": claim"], best[s.name+": complete"])
	}
	completed, twice := counted.tally()
	want := 2 * len(stores) * jobs
	r.check("every job completed exactly once", completed == want && twice == 0,
		"%d jobs, %d completed, %d more than once", want, completed, twice)
	r.check("every claim and complete with WAIT waited for a replica", durable >= 2*2*jobs && unconfirmed == 0,
		"%d changes on the masters for %d claims and completes, %d with no WAIT after them", durable, 2*2*jobs, unconfirmed)
	r.fig("concurrent callers", float64(c.concurrency), "")
	r.fig("claim calls/s with WAIT as a fraction of without", r.Ops[2].PerSecond/r.Ops[0].PerSecond, "")
	r.fig("complete calls/s with WAIT as a fraction of without", r.Ops[3].PerSecond/r.Ops[1].PerSecond, "")
	return r, nil
}

// claimAndComplete fills a fresh queue with n jobs, then claims them all
// and completes them all, with c concurrent callers, timing each call.
func claimAndComplete(ctx context.Context, store *tasks.Store, queue string, n, c int, claim, complete *recorder) error {
	if err := fill(ctx, store, queue, n); err != nil {
		return err
	}
	held, err := claimAll(ctx, store, queue, n, c, claim)
	if err != nil {
		return err
	}
	return completeAll(ctx, store, held, c, complete)
}

// claimAll claims n jobs of the queue with c concurrent callers, each call
// timed by rec, and returns the reservations.
func claimAll(ctx context.Context, store *tasks.Store, queue string, n, c int, rec *recorder) ([]*tasks.Reservation, error) {
	var mu sync.Mutex
	held := make([]*tasks.Reservation, 0, n)
	err := parallel(c, n, func(w, _ int) error {
		var res *tasks.Reservation
		err := rec.time(func() error {
			var err error
			res, err = store.Claim(ctx, queue, fmt.Sprint("op", w))
			return err
		})
		if err == nil && res == nil {
			err = fmt.Errorf("a claim of %s found nothing while jobs were ready", queue)
		}
		if err != nil {
			return err
		}
		mu.Lock()
		held = append(held, res)
		mu.Unlock()
		return nil
	})
	return held, err
}

// completeAll completes the reservations with c concurrent callers, each
// call timed by rec.
func completeAll(ctx context.Context, store *tasks.Store, held []*tasks.Reservation, c int, rec *recorder) error {
	return parallel(c, len(held), func(_, i int) error {
		return rec.time(func() error {
			_, err := store.Complete(ctx, held[i].Job.ID, held[i].Hold(), nil)
			return err
		})
	})
}

// monitor reads what a Redis server runs (MONITOR), on a connection of its
// own, and counts per client connection the FCALLs no WAIT has followed yet.
type monitor struct {
	conn net.Conn
	done chan struct{}
	// fcalls counts every FCALL; pending those of each client that no
	// WAIT followed.
	fcalls  int
	pending map[string]int
}

func monitorFCalls(addr string) (*monitor, error) {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	r := bufio.NewReader(conn)
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		conn.Close()
		return nil, err
	}
	if line, err := r.ReadString('\n'); err != nil || line != "+OK\r\n" {
		conn.Close()
		return nil, fmt.Errorf("MONITOR answered %q, %v", line, err)
	}
	m := &monitor{conn: conn, done: make(chan struct{}), pending: map[string]int{}}
	go func() {
		defer close(m.done)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			// +<time> [<db> <client>] "<COMMAND>" ...
			_, rest, _ := strings.Cut(line, " [")
			client, rest, _ := strings.Cut(rest, "] ")
			if _, client, _ = strings.Cut(client, " "); client == "lua" {
				continue
			}
			command, _, _ := strings.Cut(strings.ToLower(rest), " ")
			switch command {
			case `"fcall"`:
				n := changesOf(rest)
				m.fcalls += n
				m.pending[client] += n
			case `"wait"`:
				m.pending[client] = 0
			case `"ping"`:
				if strings.Contains(rest, "monitor-end") {
					return
				}
			}
		}
	}()
	return m, nil
}

// changesOf returns how many changes an FCALL as MONITOR shows it makes:
// the count its arguments give for the library's function "many", which
// makes several in one call, else one.
func changesOf(fcall string) int {
	// "fcall" "<function>" "<numkeys>" "<key>"... "<changes>" ...
	f := strings.Split(strings.TrimSpace(fcall), `" "`)
	if len(f) < 3 || !strings.HasSuffix(f[1], "_many") {
		return 1
	}
	keys, err := strconv.Atoi(f[2])
	if err != nil || len(f) <= 3+keys {
		return 1
	}
	n, err := strconv.Atoi(f[3+keys])
	if err != nil {
		return 1
	}
	return n
}

// stop reads what the server ran up to now (a PING it is sent last marks
// the end) and returns how many FCALLs it saw and how many of them no WAIT
// followed.
func (m *monitor) stop(ctx context.Context, rdb *redis.Client) (fcalls, unfollowed int, err error) {
	defer m.conn.Close()
	if err := rdb.Do(ctx, "ping", "monitor-end").Err(); err != nil {
		return 0, 0, err
	}
	select {
	case <-m.done:
	case <-time.After(10 * time.Second):
		return 0, 0, fmt.Errorf("MONITOR did not show the end mark within 10s")
	}
	for _, n := range m.pending {
		unfollowed += n
	}
	return m.fcalls, unfollowed, nil
}
