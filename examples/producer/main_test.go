package main

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"

	"claimdesk/client"
	"claimdesk/internal/servertest"
)

func TestMain(m *testing.M) { servertest.Main(m) }

// The example against a running server: it enqueues its jobs, and prints
// each one's end as an operator, with the generated client, completes or
// fails it.
func TestProducer(t *testing.T) {
	srv := servertest.Start(t)
	srv.Command(t, "", "queue", "add", "invoices", "--max-attempts", "1")
	producer := srv.Token(t, "billing-bot", "producer", "invoices")
	operator, err := client.New(srv.URL, srv.Token(t, "alice", "operator", "invoices"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()

	var out bytes.Buffer
	done := make(chan error, 1)
	go func() {
		env := map[string]string{"BASE": srv.URL, "TOKEN": producer}
		args := []string{"-queue", "invoices", "-wait", "1m", "Check invoice A", "Check invoice B", "Check invoice C"}
		done <- run(ctx, args, func(k string) string { return env[k] }, &out)
	}()

	for worked := 0; worked < 3; {
		r, err := operator.API.ClaimWithResponse(ctx, "invoices", nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.StatusCode() == http.StatusNoContent {
			select {
			case <-ctx.Done():
				t.Fatalf("the operator found %d of the 3 jobs within a minute", worked)
			case <-time.After(20 * time.Millisecond):
			}
			continue
		}
		if r.JSON200 == nil {
			t.Fatalf("claim: %s %s", r.Status(), r.Body)
		}
		job, token := r.JSON200.Job, r.JSON200.Reservation.Token
		status := 0
		if job.Title == "Check invoice B" {
			reason := "Scan unreadable"
			f, err := operator.API.FailWithResponse(ctx, job.ID, client.FailRequest{Token: token, Reason: &reason})
			if err != nil {
				t.Fatal(err)
			}
			status = f.StatusCode()
		} else {
			result := client.Result{"approved": job.Title == "Check invoice A"}
			c, err := operator.API.CompleteWithResponse(ctx, job.ID, nil, client.CompleteRequest{Token: token, Result: &result})
			if err != nil {
				t.Fatal(err)
			}
			status = c.StatusCode()
		}
		if status != http.StatusOK {
			t.Fatalf("%s: answered %d", job.Title, status)
		}
		worked++
	}

	if err := <-done; err != nil {
		t.Fatalf("the example: %v\n%s", err, out.String())
	}
	want := `enqueued 3 jobs into invoices; waiting for their results
Check invoice A: completed by alice: {"approved":true}
Check invoice B: dead: Scan unreadable
Check invoice C: completed by alice: {"approved":false}
`
	if out.String() != want {
		t.Fatalf("the example printed:\n%s\nwant:\n%s", out.String(), want)
	}
}

// Without a token the example says what it needs, and asks nothing of a
// server.
func TestProducerNeedsAToken(t *testing.T) {
	err := run(t.Context(), nil, func(string) string { return "" }, &bytes.Buffer{})
	if err == nil || err.Error() != "no API token: set TOKEN or -token" {
		t.Fatalf("run without a token: %v", err)
	}
}
