// Command asynq runs one phase of the bench's peer scenario with asynq, the
// Redis job queue claimdesk is measured against, and exits. It lives in a
// module of its own so that claimdesk's module does not depend on asynq;
// cmd/bench builds it and runs it once per phase.
//
//	asynq enqueue -redis ADDR -jobs N -concurrency C -payload JSON
//	asynq drain   -redis ADDR -jobs N -concurrency C
//	asynq check   -redis ADDR
//
// enqueue adds N tasks to the default queue, one Client.Enqueue per task,
// from C goroutines. drain runs an asynq.Server of concurrency C whose
// handler counts each task and returns nil, until N distinct tasks were
// handled, then shuts the server down. Both connect first, print "ready"
// and wait for a line on stdin, so whoever measures the phase leaves out
// the program's start; when the phase is over they print one JSON line,
// {"jobs": tasks enqueued or handled, "twice": tasks handled more than
// once, "seconds": from the first call to the last task}, and wait for
// stdin to close before they exit, keeping their connections meanwhile.
// check prints {"left": tasks still in the queue, "processed": tasks
// processed, "failed": tasks failed} at once.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
)

// queue is the queue every phase uses: asynq's default.
const queue = "default"

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "asynq:", err)
		os.Exit(1)
	}
}

// answer is the line a phase prints when it is over.
type answer struct {
	Jobs    int     `json:"jobs"`
	Twice   int     `json:"twice"`
	Seconds float64 `json:"seconds"`
}

// queueState is what check prints.
type queueState struct {
	Left      int `json:"left"`
	Processed int `json:"processed"`
	Failed    int `json:"failed"`
}

func run(args []string, stdin io.Reader, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("want a phase: enqueue, drain or check")
	}
	phase := args[0]
	fs := flag.NewFlagSet(phase, flag.ContinueOnError)
	addr := fs.String("redis", "", "the Redis server's host:port")
	jobs := fs.Int("jobs", 0, "tasks to enqueue or to handle")
	concurrency := fs.Int("concurrency", 0, "concurrent callers (enqueue) or workers (drain)")
	payload := fs.String("payload", "{}", "enqueue: every task's payload, a JSON value")
	timeout := fs.Duration("timeout", 10*time.Minute, "how long the phase may take")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if *addr == "" {
		return errors.New("-redis is required")
	}
	opt := asynq.RedisClientOpt{Addr: *addr, PoolSize: max(*concurrency, 1)}
	if phase == "check" {
		return check(opt, stdout)
	}
	if *jobs < 1 || *concurrency < 1 {
		return errors.New("-jobs and -concurrency must be at least 1")
	}
	if !json.Valid([]byte(*payload)) {
		return fmt.Errorf("-payload %q is not JSON", *payload)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	var (
		a   answer
		err error
	)
	in := bufio.NewReader(stdin)
	switch phase {
	case "enqueue":
		a, err = enqueue(ctx, opt, in, stdout, *jobs, *concurrency, []byte(*payload))
	case "drain":
		a, err = drain(ctx, opt, in, stdout, *jobs, *concurrency)
	default:
		return fmt.Errorf("no phase %q: enqueue, drain or check", phase)
	}
	if err != nil {
		return err
	}
	if err := json.NewEncoder(stdout).Encode(a); err != nil {
		return err
	}
	// Keep the connections until told to go, so that whoever measures
	// the server's memory sees them as during the phase.
	_, err = io.Copy(io.Discard, in)
	return err
}

// ready says the program is connected and waits for the line that starts
// the phase.
func ready(in *bufio.Reader, out io.Writer) error {
	if _, err := fmt.Fprintln(out, "ready"); err != nil {
		return err
	}
	if _, err := in.ReadString('\n'); err != nil {
		return fmt.Errorf("waiting for the start: %w", err)
	}
	return nil
}

// enqueue adds n tasks, one Enqueue each, from c goroutines.
func enqueue(ctx context.Context, opt asynq.RedisClientOpt, in *bufio.Reader, out io.Writer, n, c int, payload []byte) (answer, error) {
	client := asynq.NewClient(opt)
	defer client.Close()
	if err := client.Ping(); err != nil {
		return answer{}, err
	}
	if err := ready(in, out); err != nil {
		return answer{}, err
	}
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	t0 := time.Now()
	for range c {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if _, err := client.EnqueueContext(ctx, asynq.NewTask("bench", payload), asynq.Queue(queue)); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return answer{}, err
	}
	return answer{Jobs: n, Seconds: time.Since(t0).Seconds()}, nil
}

// drain handles tasks with a server of c workers until n distinct tasks
// were handled, then shuts it down.
func drain(ctx context.Context, opt asynq.RedisClientOpt, in *bufio.Reader, out io.Writer, n, c int) (answer, error) {
	// The server opens its connections as it starts: a client of its own
	// checks that Redis answers before the start.
	client := asynq.NewClient(opt)
	defer client.Close()
	if err := client.Ping(); err != nil {
		return answer{}, err
	}
	srv := asynq.NewServer(opt, asynq.Config{
		Concurrency: c,
		Queues:      map[string]int{queue: 1},
		LogLevel:    asynq.WarnLevel,
	})
	var (
		mu   sync.Mutex
		seen = make(map[string]int, n)
		all  = make(chan struct{})
	)
	handler := asynq.HandlerFunc(func(ctx context.Context, _ *asynq.Task) error {
		id, _ := asynq.GetTaskID(ctx)
		mu.Lock()
		defer mu.Unlock()
		seen[id]++
		if seen[id] == 1 && len(seen) == n {
			close(all)
		}
		return nil
	})
	if err := ready(in, out); err != nil {
		return answer{}, err
	}
	t0 := time.Now()
	if err := srv.Start(handler); err != nil {
		return answer{}, err
	}
	var waitErr error
	select {
	case <-all:
	case <-ctx.Done():
		waitErr = fmt.Errorf("%d of %d tasks handled: %w", len(seen), n, ctx.Err())
	}
	elapsed := time.Since(t0)
	// Shutdown waits for the workers, and so for the last tasks' removal.
	srv.Shutdown()
	if waitErr != nil {
		return answer{}, waitErr
	}
	a := answer{Jobs: len(seen), Seconds: elapsed.Seconds()}
	for _, k := range seen {
		if k > 1 {
			a.Twice++
		}
	}
	return a, nil
}

// check prints what is left in the queue, and asynq's own counts.
func check(opt asynq.RedisClientOpt, stdout io.Writer) error {
	in := asynq.NewInspector(opt)
	defer in.Close()
	info, err := in.GetQueueInfo(queue)
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(queueState{Left: info.Size, Processed: info.ProcessedTotal, Failed: info.FailedTotal})
}
