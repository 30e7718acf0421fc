package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"claimdesk/internal/tasks"
	"claimdesk/internal/tasks/taskstest"

	"github.com/redis/go-redis/v9"
)

// asynqModule is where the asynq program lives, from the repository root:
// a module of its own, so that claimdesk's does not depend on asynq.
const asynqModule = "cmd/bench/asynq"

const (
	// peerPayloadBytes is the size of every job's payload, on both sides.
	peerPayloadBytes = 200
	// peerBatch is how many jobs claimdesk's batch enqueues carry.
	peerBatch = 100
)

// runPeer sets claimdesk beside asynq 0.26, the Redis job queue a team
// might pick instead, on the same redis-server binary with the same jobs
// and concurrency, and compares what a job costs the store: redis-server
// CPU per job to enqueue it (one call per job, c.concurrency callers) and
// to claim and complete it (claimdesk: operators looping Complete & next;
// asynq: a server of c.concurrency workers, its polling included), and
// Redis memory per waiting job. claimdesk also enqueues in batches of
// peerBatch, and by one caller alone, unless c.peerBatches is off. The
// sides take turns, claimdesk first, each round on fresh servers; each
// figure is the best of its rounds. It checks that every job was done
// exactly once and nothing is left, on both sides.
func runPeer(ctx context.Context, c config) (result, error) {
	r := result{Scenario: "peer: claimdesk beside asynq 0.26, what a job costs the store"}
	dir, err := os.MkdirTemp("", "claimdesk-bench-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	bin, err := buildAsynq(ctx, dir)
	if err != nil {
		return r, err
	}
	payload := peerPayload()
	var ours, theirs peerSide
	var oursDone, theirsDone peerTally
	for round := range c.peerRounds {
		s, err := peerClaimdesk(ctx, c, payload, &oursDone)
		if err != nil {
			return r, fmt.Errorf("claimdesk, round %d: %w", round+1, err)
		}
		ours = ours.better(s, round)
		if s, err = peerAsynq(ctx, c, bin, payload, &theirsDone); err != nil {
			return r, fmt.Errorf("asynq, round %d: %w", round+1, err)
		}
		theirs = theirs.better(s, round)
	}

	best := fmt.Sprintf(" (best round of %d)", c.peerRounds)
	r.fig("jobs per round", float64(c.peerJobs), "")
	r.fig("concurrent callers and workers", float64(c.concurrency), "")
	for _, side := range []struct {
		name string
		s    peerSide
	}{{"claimdesk", ours}, {"asynq", theirs}} {
		r.fig(side.name+": redis-server CPU per job, enqueue"+best, side.s.enqueueCPU, "µs")
		r.fig(side.name+": redis-server CPU per job, claim and complete"+best, side.s.drainCPU, "µs")
		r.fig(side.name+": enqueue, jobs/s"+best, side.s.enqueueRate, "")
		r.fig(side.name+": claim and complete, jobs/s"+best, side.s.drainRate, "")
		r.fig(side.name+": Redis memory per waiting job, its payload included"+best, side.s.memory, "bytes")
	}
	if c.peerBatches {
		r.fig(fmt.Sprintf("claimdesk: redis-server CPU per job, enqueue in batches of %d%s", peerBatch, best), ours.batchCPU, "µs")
		r.fig(fmt.Sprintf("claimdesk: enqueue in batches of %d, jobs/s%s", peerBatch, best), ours.batchRate, "")
		r.fig("claimdesk: redis-server CPU per job, enqueue one per call by one caller alone"+best, ours.loneCPU, "µs")
		r.fig("claimdesk: enqueue one per call by one caller alone, jobs/s"+best, ours.loneRate, "")
	}

	oursDone.check(&r, "claimdesk")
	theirsDone.check(&r, "asynq")
	if c.peerBatches {
		r.check(fmt.Sprintf("claimdesk: every job of the batches of %d and of the lone caller enqueued", peerBatch),
			oursDone.batched == oursDone.jobs+oursDone.lone, "%d ready of %d", oursDone.batched, oursDone.jobs+oursDone.lone)
	}

	r.atMost("redis-server CPU per job, enqueue: claimdesk ÷ asynq", ours.enqueueCPU/theirs.enqueueCPU, 1, "×")
	r.atMost("redis-server CPU per job, claim and complete: claimdesk ÷ asynq", ours.drainCPU/theirs.drainCPU, 1, "×")
	r.atMost("Redis memory per waiting job: claimdesk ÷ asynq", ours.memory/theirs.memory, 1, "×")
	if c.peerBatches {
		// A single enqueue's own cost is that of a caller alone: concurrent
		// ones go together (tasks.Store.Enqueue), and cost less.
		r.atMost(fmt.Sprintf("claimdesk CPU per job, enqueue in batches of %d ÷ one per call alone", peerBatch), ours.batchCPU/ours.loneCPU, 0.25, "×")
	}
	return r, nil
}

// peerPayload is every job's payload: a JSON object of peerPayloadBytes
// bytes.
func peerPayload() string {
	const head, tail = `{"invoice":"INV-2026-0601","note":"`, `"}`
	return head + strings.Repeat("n", peerPayloadBytes-len(head)-len(tail)) + tail
}

// peerSide is what one side measured in a round, or the better of its
// rounds: redis-server CPU per job (µs) and jobs/s of each phase, and
// Redis memory per waiting job (bytes).
type peerSide struct {
	enqueueCPU, enqueueRate float64
	drainCPU, drainRate     float64
	memory                  float64
	// Enqueue in batches of peerBatch, and one job per call by one caller
	// alone, so that no other caller's jobs ride with it: claimdesk's only.
	batchCPU, batchRate float64
	loneCPU, loneRate   float64
}

// better keeps, figure by figure, the better of s (the rounds before
// round) and o: the lower CPU and memory, the higher rate.
func (s peerSide) better(o peerSide, round int) peerSide {
	if round == 0 {
		return o
	}
	return peerSide{
		enqueueCPU: min(s.enqueueCPU, o.enqueueCPU), enqueueRate: max(s.enqueueRate, o.enqueueRate),
		drainCPU: min(s.drainCPU, o.drainCPU), drainRate: max(s.drainRate, o.drainRate),
		memory:   min(s.memory, o.memory),
		batchCPU: min(s.batchCPU, o.batchCPU), batchRate: max(s.batchRate, o.batchRate),
		loneCPU: min(s.loneCPU, o.loneCPU), loneRate: max(s.loneRate, o.loneRate),
	}
}

// peerTally counts one side's jobs over the rounds.
type peerTally struct {
	jobs  int64 // enqueued one by one, then claimed and completed
	once  int64 // done exactly once, as the side's own callers saw them
	twice int64 // done more than once
	left  int64 // still in the store after the rounds' drains
	// done is the store's own count of jobs done, failed its count of
	// jobs that failed (asynq's).
	done, failed int64
	batched      int64 // claimdesk: jobs of the batches and the lone caller, ready after
	lone         int64 // claimdesk: jobs the lone caller enqueued
}

// check adds the check that every job was done exactly once and none is
// left.
func (t peerTally) check(r *result, side string) {
	r.check(side+": every job done exactly once, none left", t.once == t.jobs && t.twice == 0 && t.left == 0 && t.done == t.jobs && t.failed == 0,
		"%d jobs, %d done once, %d more than once, %d left; the store counts %d done, %d failed", t.jobs, t.once, t.twice, t.left, t.done, t.failed)
}

// redisCPU runs fn and returns the CPU time the redis-server pid used
// meanwhile, counted as at least one clock tick: /proc counts whole ticks,
// and a phase shorter than one would read as free.
func redisCPU(pid int, fn func() error) (time.Duration, error) {
	m := startCPU(pid)
	if err := fn(); err != nil {
		return 0, err
	}
	return max(m.used()[0], time.Second/clockTicks), nil
}

// perJob is CPU time per job, in µs.
func perJob(cpu time.Duration, jobs int) float64 {
	return float64(cpu) / float64(time.Microsecond) / float64(jobs)
}

// peerClaimdesk is one round of claimdesk's side on a fresh redis-server:
// c.peerJobs jobs enqueued one per call, then claimed and completed by
// c.concurrency operators looping Complete & next; then, with
// c.peerBatches, as many enqueued in batches of peerBatch into another
// queue, and half as many one per call by one caller alone into a third.
func peerClaimdesk(ctx context.Context, c config, payload string, t *peerTally) (peerSide, error) {
	var s peerSide
	srv, err := taskstest.NewServer()
	if err != nil {
		return s, err
	}
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: c.concurrency})
	defer rdb.Close()
	store := tasks.New(rdb)
	pid, err := redisPID(ctx, rdb)
	if err != nil {
		return s, err
	}
	const queue, batches, lone = "peer", "peer-batches", "peer-lone"
	for _, q := range []string{queue, batches, lone} {
		if _, err := store.PutQueue(ctx, tasks.Queue{Name: q}); err != nil {
			return s, err
		}
	}
	n := c.peerJobs

	before, err := usedMemory(ctx, rdb)
	if err != nil {
		return s, err
	}
	t0 := time.Now()
	cpu, err := redisCPU(pid, func() error {
		return enqueueBatches(ctx, store, queue, n, 1, c.concurrency, json.RawMessage(payload), nil)
	})
	if err != nil {
		return s, err
	}
	s.enqueueCPU, s.enqueueRate = perJob(cpu, n), float64(n)/time.Since(t0).Seconds()
	after, err := usedMemory(ctx, rdb)
	if err != nil {
		return s, err
	}
	s.memory = float64(after-before) / float64(n)

	counted := countCompletions(store)
	t0 = time.Now()
	if cpu, err = redisCPU(pid, func() error { return workLoop(ctx, store, queue, c.concurrency, nil) }); err != nil {
		return s, err
	}
	s.drainCPU, s.drainRate = perJob(cpu, n), float64(n)/time.Since(t0).Seconds()
	st, err := store.Stats(ctx, queue)
	if err != nil {
		return s, err
	}
	completed, twice := counted.tally()
	t.jobs += int64(n)
	t.once += int64(completed - twice)
	t.twice += int64(twice)
	t.left += st.Ready + st.Reserved
	t.done += st.Completed
	if !c.peerBatches {
		return s, nil
	}

	// The jobs enqueued into queue, per calls of callers; each ends ready.
	enqueued := func(queue string, jobs, per, callers int) (cpu, rate float64, err error) {
		t0 := time.Now()
		used, err := redisCPU(pid, func() error {
			return enqueueBatches(ctx, store, queue, jobs, per, callers, json.RawMessage(payload), nil)
		})
		if err != nil {
			return 0, 0, err
		}
		cpu, rate = perJob(used, jobs), float64(jobs)/time.Since(t0).Seconds()
		st, err := store.Stats(ctx, queue)
		t.batched += st.Ready
		return cpu, rate, err
	}
	if s.batchCPU, s.batchRate, err = enqueued(batches, n, peerBatch, c.concurrency); err != nil {
		return s, err
	}
	m := max(n/2, 1)
	if s.loneCPU, s.loneRate, err = enqueued(lone, m, 1, 1); err != nil {
		return s, err
	}
	t.lone += int64(m)
	return s, nil
}

// peerAsynq is one round of asynq's side on a fresh redis-server, through
// the asynq program bin: c.peerJobs tasks enqueued one per call, then
// drained by a server of c.concurrency workers.
func peerAsynq(ctx context.Context, c config, bin, payload string, t *peerTally) (peerSide, error) {
	var s peerSide
	srv, err := taskstest.NewServer()
	if err != nil {
		return s, err
	}
	defer srv.Close()
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: 1})
	defer rdb.Close()
	pid, err := redisPID(ctx, rdb)
	if err != nil {
		return s, err
	}
	n := c.peerJobs
	flags := []string{"-redis", srv.Addr(), "-jobs", strconv.Itoa(n), "-concurrency", strconv.Itoa(c.concurrency)}

	enq, err := asynqPhase(ctx, bin, rdb, pid, append([]string{"enqueue", "-payload", payload}, flags...)...)
	if err != nil {
		return s, fmt.Errorf("enqueue: %w", err)
	}
	s.enqueueCPU, s.enqueueRate, s.memory = perJob(enq.cpu, n), float64(n)/enq.Seconds, float64(enq.grew)/float64(n)

	drain, err := asynqPhase(ctx, bin, rdb, pid, append([]string{"drain"}, flags...)...)
	if err != nil {
		return s, fmt.Errorf("drain: %w", err)
	}
	s.drainCPU, s.drainRate = perJob(drain.cpu, n), float64(n)/drain.Seconds

	out, err := exec.CommandContext(ctx, bin, "check", "-redis", srv.Addr()).Output()
	if err != nil {
		return s, fmt.Errorf("check: %w%s", err, exitOutput(err))
	}
	var q struct{ Left, Processed, Failed int64 }
	if err := json.Unmarshal(out, &q); err != nil {
		return s, fmt.Errorf("check answered %q: %w", out, err)
	}
	t.jobs += int64(n)
	t.once += int64(drain.Jobs - drain.Twice)
	t.twice += int64(drain.Twice)
	t.left += q.Left
	t.done += q.Processed
	t.failed += q.Failed
	return s, nil
}

// asynqAnswer is what one phase of the asynq program measured and
// answered.
type asynqAnswer struct {
	// Jobs, Twice and Seconds are the program's answer: the tasks it
	// enqueued or handled, those handled more than once, and the phase's
	// wall time from its first call to its last task.
	Jobs, Twice int
	Seconds     float64
	// cpu is what redis-server used from the phase's start to the answer;
	// grew is how much its used memory grew meanwhile, the program's
	// connections open before and after.
	cpu  time.Duration
	grew int64
}

// asynqPhase runs one phase of the asynq program bin (args, the phase
// first) against the redis-server of rdb, whose process is pid: it starts
// the program, waits until it has connected, then starts the phase and
// measures the server around it until the program answers.
func asynqPhase(ctx context.Context, bin string, rdb *redis.Client, pid int, args ...string) (asynqAnswer, error) {
	var a asynqAnswer
	cmd := exec.CommandContext(ctx, bin, args...)
	setParentDeathSignal(cmd)
	stderr := &tailBuffer{max: 4 << 10}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return a, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return a, err
	}
	if err := cmd.Start(); err != nil {
		return a, err
	}
	// Closing its stdin lets the program go; wait for it either way.
	failed := func(err error) (asynqAnswer, error) {
		stdin.Close()
		if werr := cmd.Wait(); werr != nil {
			err = errors.Join(err, werr)
		}
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			err = fmt.Errorf("%w: %s", err, msg)
		}
		return a, err
	}
	out := bufio.NewReader(stdout)
	if line, err := out.ReadString('\n'); err != nil || line != "ready\n" {
		return failed(fmt.Errorf("the program did not say ready (%q, %v)", line, err))
	}
	before, err := usedMemory(ctx, rdb)
	if err != nil {
		return failed(err)
	}
	var line string
	a.cpu, err = redisCPU(pid, func() error {
		if _, err := io.WriteString(stdin, "go\n"); err != nil {
			return err
		}
		line, err = out.ReadString('\n')
		return err
	})
	if err != nil {
		return failed(fmt.Errorf("waiting for the answer: %w", err))
	}
	if err := json.Unmarshal([]byte(line), &a); err != nil {
		return failed(fmt.Errorf("the program answered %q: %w", line, err))
	}
	after, err := usedMemory(ctx, rdb)
	if err != nil {
		return failed(err)
	}
	a.grew = after - before
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		return a, fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	if a.Seconds <= 0 {
		return a, fmt.Errorf("the program answered %q: no time", line)
	}
	return a, nil
}

// exitOutput is what a program that failed wrote to its stderr, for an
// error message.
func exitOutput(err error) string {
	var exit *exec.ExitError
	if errors.As(err, &exit) && len(exit.Stderr) > 0 {
		return ": " + strings.TrimSpace(string(exit.Stderr))
	}
	return ""
}

// buildAsynq builds the asynq program into dir and returns its path. The
// module is found from the repository root, the nearest directory above
// the working one with a go.mod: cmd/bench runs from the root under make
// bench, and from cmd/bench under go test.
func buildAsynq(ctx context.Context, dir string) (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	root := wd
	for {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(root)
		if parent == root {
			return "", fmt.Errorf("no go.mod above %s: run the bench from the repository", wd)
		}
		root = parent
	}
	bin := filepath.Join(dir, "asynq")
	build := exec.CommandContext(ctx, "go", "build", "-C", filepath.Join(root, asynqModule), "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the asynq program (%s): %w\n%s", asynqModule, err, out)
	}
	return bin, nil
}
