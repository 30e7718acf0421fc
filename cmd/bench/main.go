// Command bench measures claimdesk and checks its performance targets: the
// engine against Redis's own ceiling, what a job costs Redis beside asynq,
// Lua against an optimistic WATCH/MULTI baseline under contention, the
// HTTP server, websocket notices, how claims and reclaims scale with a
// queue's size, and webhooks. It prints a table with PASS/FAIL per target
// and writes the numbers as JSON.
//
//	go run ./cmd/bench                     # every scenario, default sizes
//	go run ./cmd/bench -only engine,scale  # some of them
//	go run ./cmd/bench -smoke              # small sizes, every branch of every scenario
//
// It starts its own redis-server (and, for http, notify, floor and
// webhooks, a claimdesk server process from -claimdesk) on loopback; for
// peer it builds the asynq program of its own module, cmd/bench/asynq.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"claimdesk/internal/tasks"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		var usage usageError
		if errors.As(err, &usage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

type usageError struct{ error }

// config is what the flags say.
type config struct {
	only        []string
	concurrency int // concurrent callers in engine, ceiling and replicas; operators in webhooks
	jobs        int // jobs per engine run
	producers   int // contention: concurrent producers
	messages    int // contention: messages per path
	operators   int // http: virtual operators
	cycles      int // http: claim+complete cycles per operator
	batch       int // http: jobs per batch enqueue
	think       time.Duration
	sockets     int // notify: websocket clients
	notices     int // notify: jobs enqueued while they listen
	sizes       []int
	reclaim     int // scale: expired reservations to reclaim
	memJobs     int // scale: jobs for the memory figure
	dueJobs     int // scale: jobs with due times the cron job watches
	// peer: jobs per side and round, and rounds per side; whether
	// claimdesk's side also enqueues in batches and by a caller alone.
	peerJobs, peerRounds int
	peerBatches          bool
	// floor: open pages of operators and supervisors, jobs/s, and how
	// long each of its two phases lasts.
	floorPages, floorSupervisors, floorRate int
	floorPhase                              time.Duration
	// floor: how long a working operator holds a job, and how long one who
	// found nothing waits before claiming again (each a random moment in
	// [min, max)); how often every fragment polls.
	floorHold, floorRetry [2]time.Duration
	floorPoll             time.Duration
	// webhooks: jobs per round, claims per second (0: unpaced), and
	// events of the backlog.
	webhookJobs, webhookRate, webhookBacklog int
	claimdesk                                string
	jsonPath                                 string
}

// scenario is one part of the bench.
type scenario struct {
	name string
	run  func(context.Context, config) (result, error)
}

// scenarios in the order they run.
var scenarios = []scenario{
	{"engine", runEngine},
	{"peer", runPeer},
	{"contention", runContention},
	{"http", runHTTP},
	{"notify", runNotify},
	{"scale", runScale},
	{"replicas", runReplicas},
	{"floor", runFloor},
	{"webhooks", runWebhooks},
}

func parse(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	only := fs.String("only", "", "comma-separated scenarios to run (engine, peer, contention, http, notify, scale, replicas, floor, webhooks); default all")
	smoke := fs.Bool("smoke", false, "small sizes that take every branch of every scenario (the tests run it)")
	fs.IntVar(&c.concurrency, "concurrency", 16, "concurrent callers in engine, ceiling and replicas; API operators in webhooks")
	fs.IntVar(&c.jobs, "jobs", 20000, "engine: jobs enqueued, claimed and completed")
	fs.IntVar(&c.peerJobs, "peer-jobs", 20000, "peer: jobs each side enqueues, claims and completes in a round")
	fs.IntVar(&c.peerRounds, "peer-rounds", 5, "peer: rounds per side, in turns (each figure is the best of its rounds)")
	fs.BoolVar(&c.peerBatches, "peer-batches", true, "peer: claimdesk's side also enqueues in batches of 100 and by one caller alone (false: each side's Redis serves only the enqueue and the drain)")
	fs.IntVar(&c.producers, "producers", 64, "contention: concurrent producers")
	fs.IntVar(&c.messages, "messages", 5000, "contention: messages posted per path")
	fs.IntVar(&c.operators, "operators", 200, "http: virtual operators")
	fs.IntVar(&c.cycles, "cycles", 20, "http: claim and complete cycles per operator")
	fs.IntVar(&c.batch, "batch", 100, "http: jobs per batch enqueue (about half the jobs come in batches)")
	fs.DurationVar(&c.think, "think", 100*time.Millisecond, "http: an operator's time between actions (people read before they click)")
	fs.IntVar(&c.sockets, "sockets", 2000, "notify: websocket clients")
	fs.IntVar(&c.notices, "notices", 50, "notify: jobs enqueued while they listen")
	sizes := fs.String("sizes", "1000,100000,1000000", "scale: ready jobs at which to time claims")
	fs.IntVar(&c.reclaim, "reclaim", 100000, "scale: expired reservations to reclaim")
	fs.IntVar(&c.memJobs, "mem-jobs", 100000, "scale: jobs enqueued for the memory figure")
	fs.IntVar(&c.dueJobs, "due-jobs", 100000, "scale: waiting jobs with due times, watched by the cron job and claimed earliest due first")
	fs.IntVar(&c.floorPages, "floor-pages", 2000, "floor: open operator pages (a fifth of them working)")
	fs.IntVar(&c.floorSupervisors, "floor-supervisors", 40, "floor: open supervisor pages")
	fs.IntVar(&c.floorRate, "floor-rate", 10, "floor: jobs enqueued per second")
	fs.DurationVar(&c.floorPhase, "floor-phase", 20*time.Second, "floor: how long each phase is measured")
	c.floorHold, c.floorRetry, c.floorPoll = [2]time.Duration{5 * time.Second, 15 * time.Second}, [2]time.Duration{2 * time.Second, 5 * time.Second}, 15*time.Second
	fs.IntVar(&c.webhookJobs, "webhook-jobs", 2000, "webhooks: jobs claimed and completed through the API in each of four rounds (two without an endpoint, two with one)")
	fs.IntVar(&c.webhookRate, "webhook-rate", 200, "webhooks: claims per second in the rounds, all operators together (0: as fast as they go)")
	fs.IntVar(&c.webhookBacklog, "webhook-backlog", 5000, "webhooks: events made while no instance runs, delivered once one starts")
	fs.StringVar(&c.claimdesk, "claimdesk", "bin/claimdesk", "the claimdesk binary that http and notify start")
	fs.StringVar(&c.jsonPath, "json", "var/bench.json", "where to write the results as JSON (empty: nowhere)")
	if err := fs.Parse(args); err != nil {
		return c, usageError{err}
	}
	if fs.NArg() > 0 {
		return c, usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return c, usageError{fmt.Errorf("-sizes: %q is not a positive number", s)}
		}
		c.sizes = append(c.sizes, n)
	}
	if *only != "" {
		for _, s := range strings.Split(*only, ",") {
			if !slices.ContainsFunc(scenarios, func(sc scenario) bool { return sc.name == s }) {
				return c, usageError{fmt.Errorf("-only: no scenario %q", s)}
			}
			c.only = append(c.only, s)
		}
	}
	if *smoke {
		c.concurrency, c.jobs, c.producers, c.messages = 4, 200, 8, 200
		c.peerJobs, c.peerRounds = 200, 1
		c.operators, c.cycles, c.batch, c.think, c.sockets, c.notices = 6, 4, 5, 0, 20, 3
		c.sizes, c.reclaim, c.memJobs, c.dueJobs = []int{100, 1000}, 500, 1000, 1000
		c.floorPages, c.floorSupervisors, c.floorRate, c.floorPhase = 30, 2, 5, 2*time.Second
		// The floor's people and pages a tenth as slow, so that within its
		// short phases operators complete jobs (with and without a next
		// one) and pages poll.
		c.floorHold, c.floorRetry, c.floorPoll = [2]time.Duration{500 * time.Millisecond, 1500 * time.Millisecond}, [2]time.Duration{200 * time.Millisecond, 500 * time.Millisecond}, 1500*time.Millisecond
		c.webhookJobs, c.webhookBacklog = 40, 100
	}
	for _, v := range []int{c.concurrency, c.jobs, c.peerJobs, c.peerRounds, c.producers, c.messages, c.operators, c.cycles, c.batch, c.sockets, c.notices, c.reclaim, c.memJobs, c.dueJobs,
		c.floorPages, c.floorSupervisors, c.floorRate, int(c.floorPhase / time.Second), c.webhookJobs, c.webhookBacklog} {
		if v < 1 {
			return c, usageError{errors.New("counts and sizes must be at least 1")}
		}
	}
	// The http scenario enqueues half its jobs in batches: at least one.
	if c.batch > tasks.MaxBatch || c.operators*c.cycles < 2*c.batch {
		return c, usageError{fmt.Errorf("-batch %d: at most %d, and -operators × -cycles (%d) at least twice it", c.batch, tasks.MaxBatch, c.operators*c.cycles)}
	}
	return c, nil
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	c, err := parse(args, os.Stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "claimdesk bench: %s, %d CPUs, GOMAXPROCS %d, %s\n",
		runtime.GOOS+"/"+runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0), time.Now().UTC().Format(time.RFC3339))
	var results []result
	for _, sc := range scenarios {
		if len(c.only) > 0 && !slices.Contains(c.only, sc.name) {
			continue
		}
		fmt.Fprintf(stdout, "running %s…\n", sc.name)
		t0 := time.Now()
		r, err := sc.run(ctx, c)
		if err != nil {
			return fmt.Errorf("%s: %w", sc.name, err)
		}
		r.fig("scenario wall time", time.Since(t0).Seconds(), "s")
		results = append(results, r)
	}
	printResults(stdout, results)
	if c.jsonPath != "" {
		if err := os.MkdirAll(filepath.Dir(c.jsonPath), 0o755); err != nil {
			return err
		}
		b, _ := json.MarshalIndent(results, "", "  ")
		if err := os.WriteFile(c.jsonPath, append(b, '\n'), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "Results written to %s.\n", c.jsonPath)
	}
	for _, r := range results {
		for _, ch := range r.Checks {
			if !ch.OK {
				return fmt.Errorf("%s: check %q failed: %s", r.Scenario, ch.Name, ch.Detail)
			}
		}
	}
	return nil
}
