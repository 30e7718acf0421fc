// Command producer is an example of a system that puts work into
// claimdesk with the Go client: it enqueues a few jobs into a queue in one
// request, waits until people have finished each, and prints what came
// of it. With `make run` going:
//
//	TOKEN=cdt_demo_billing7f3a9c21e84b6d05 go run ./examples/producer
//
// Flags: -base, the server (BASE, default http://localhost:8080); -token,
// a producer's API token (TOKEN); -queue (default invoice-review); -wait,
// how long to wait for the results (default 10m). The arguments are the
// jobs' titles; without any, three invoices to check.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"claimdesk/client"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "producer:", err)
		os.Exit(1)
	}
}

// run is the whole program: the flags and the environment, then the jobs.
func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("producer", flag.ContinueOnError)
	base := fs.String("base", cmp.Or(getenv("BASE"), "http://localhost:8080"), "the claimdesk server (BASE)")
	token := fs.String("token", getenv("TOKEN"), "a producer's API token (TOKEN)")
	queue := fs.String("queue", "invoice-review", "the queue to put the jobs into")
	wait := fs.Duration("wait", 10*time.Minute, "how long to wait for the results")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *token == "" {
		return errors.New("no API token: set TOKEN or -token")
	}
	titles := fs.Args()
	if len(titles) == 0 {
		titles = []string{"Check invoice INV-2026-0701", "Check invoice INV-2026-0702", "Check invoice INV-2026-0703"}
	}

	desk, err := client.New(*base, *token)
	if err != nil {
		return err
	}
	var jobs []client.NewJob
	for _, title := range titles {
		jobs = append(jobs, client.NewJob{Title: title})
	}
	created, err := desk.Enqueue(ctx, *queue, jobs...)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "enqueued %d jobs into %s; waiting for their results\n", len(created), *queue)

	ctx, cancel := context.WithTimeout(ctx, *wait)
	defer cancel()
	for _, job := range created {
		done, err := desk.Wait(ctx, job.ID)
		if err != nil {
			return fmt.Errorf("waiting for %q: %w", job.Title, err)
		}
		fmt.Fprintf(stdout, "%s: %s\n", done.Title, outcome(done))
	}
	return nil
}

// outcome says how a finished job ended: completed, by whom and with what
// result; dead, and why; or canceled.
func outcome(job *client.Job) string {
	switch {
	case job.State == client.JobStateCompleted && job.CompletedBy != nil:
		result, _ := json.Marshal(job.Result)
		return fmt.Sprintf("completed by %s: %s", *job.CompletedBy, result)
	case job.State == client.JobStateDead && job.LastError != nil:
		return "dead: " + *job.LastError
	}
	return string(job.State)
}
