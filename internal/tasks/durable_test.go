package tasks

import (
	"context"
	"errors"
	"testing"
	"time"

	"claimdesk/internal/storeerr"
	"claimdesk/internal/tasks/taskstest"
)

func mustServer(t *testing.T, args ...string) *taskstest.Server {
	t.Helper()
	s, err := taskstest.NewServer(args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestDurableAnswers: with a replica required, every change is on the
// replica when it is answered; when the replica does not confirm, the
// caller hears so and retrying by the retry contracts is safe.
func TestDurableAnswers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A replica that follows again syncs at once, not after 5 s.
	master := mustServer(t, "--repl-diskless-sync-delay", "0")
	replica := taskstest.Replica(t, master)
	const timeout = time.Second
	store := New(master.Client(), WithMinReplicas(1, timeout))
	onReplica := New(replica.Client())
	if _, err := store.PutQueue(ctx, Queue{Name: "durable"}); err != nil {
		t.Fatal(err)
	}
	if _, err := onReplica.Queue(ctx, "durable"); err != nil {
		t.Fatalf("the replica lacks the queue answered as saved: %v", err)
	}
	enqueue := func(key string) (*Job, error) {
		out, err := store.Enqueue(ctx, "durable", "pat", []NewJob{{Title: "Check " + key, IdempotencyKey: key}})
		if err != nil {
			return nil, err
		}
		return out[0].Job, nil
	}
	unconfirmed := func(what string, err error, start time.Time) {
		t.Helper()
		if !errors.Is(err, storeerr.ErrNotReplicated) {
			t.Fatalf("%s without a replica: err = %v, want ErrNotReplicated", what, err)
		}
		if took := time.Since(start); took < timeout {
			t.Errorf("%s gave up after %v, before the %v timeout", what, took, timeout)
		}
	}

	// Confirmed: each answer is already on the replica.
	job, err := enqueue("k1")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := onReplica.Get(ctx, job.ID); err != nil || got.State != StateReady {
		t.Fatalf("replica has job %v, %v; want it ready", got, err)
	}
	r, err := store.Claim(ctx, "durable", "olga", WithClaimKey("c1"))
	if err != nil || r == nil {
		t.Fatalf("claim = %v, %v", r, err)
	}
	if got, err := onReplica.Get(ctx, job.ID); err != nil || got.State != StateReserved || got.ReservedBy != "olga" {
		t.Fatalf("replica has job %+v, %v; want it reserved by olga", got, err)
	}
	if _, err := store.Complete(ctx, job.ID, r.Hold(), nil); err != nil {
		t.Fatal(err)
	}
	if got, err := onReplica.Get(ctx, job.ID); err != nil || got.State != StateCompleted {
		t.Fatalf("replica has job %+v, %v; want it completed", got, err)
	}

	// Unconfirmed: each call says so, and its retry answers the same.
	taskstest.Detach(t, replica)
	start := time.Now()
	_, err = enqueue("k2")
	unconfirmed("enqueue", err, start)
	taskstest.Follow(t, master, replica)
	job, err = enqueue("k2")
	if err != nil {
		t.Fatalf("enqueue retried: %v", err)
	}
	if n, _ := store.Stats(ctx, "durable"); n.Ready != 1 {
		t.Fatalf("after a retried enqueue %d jobs are ready, want 1", n.Ready)
	}

	taskstest.Detach(t, replica)
	start = time.Now()
	_, err = store.Claim(ctx, "durable", "olga", WithClaimKey("c2"))
	unconfirmed("claim", err, start)
	if n, _ := store.Stats(ctx, "durable"); n.Ready != 0 || n.Reserved != 1 {
		t.Fatalf("after an unconfirmed claim %d jobs are ready and %d reserved, want 0 and 1", n.Ready, n.Reserved)
	}
	taskstest.Follow(t, master, replica)
	// Nothing is ready: the retry can only answer the reservation made.
	r, err = store.Claim(ctx, "durable", "olga", WithClaimKey("c2"))
	if err != nil || r == nil || r.Job.ID != job.ID {
		t.Fatalf("claim retried = %+v, %v; want job %s again", r, err, job.ID)
	}

	taskstest.Detach(t, replica)
	start = time.Now()
	_, err = store.Complete(ctx, job.ID, r.Hold(), nil)
	unconfirmed("complete", err, start)
	taskstest.Follow(t, master, replica)
	done, err := store.Complete(ctx, job.ID, r.Hold(), nil)
	if err != nil || done.State != StateCompleted {
		t.Fatalf("complete retried = %+v, %v; want completed", done, err)
	}
	if got, err := onReplica.Get(ctx, job.ID); err != nil || got.State != StateCompleted {
		t.Fatalf("replica has job %+v, %v; want it completed", got, err)
	}
}

// TestDurableAcrossFailover: a claim answered on a cluster whose masters
// have two replicas each survives the death of its master, and the holder
// completes it on the replica that took over, confirmed by the other.
func TestDurableAcrossFailover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cl, err := taskstest.StartCluster(taskstest.ClusterConfig{Masters: 3, Replicas: 2, NodeTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	store := New(cl.Client(), WithMinReplicas(1, time.Second))
	if _, err := store.PutQueue(ctx, Queue{Name: "failover"}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Enqueue(ctx, "failover", "pat", []NewJob{{Title: "Survive"}}); err != nil {
		t.Fatal(err)
	}
	r, err := store.Claim(ctx, "failover", "olga")
	if err != nil || r == nil {
		t.Fatalf("claim = %v, %v", r, err)
	}
	old, err := cl.MasterOf(ctx, keysFor("failover").Conf())
	if err != nil {
		t.Fatal(err)
	}
	old.Kill()
	killed := time.Now()
	// Calls fail while the master is missed, then reach the new one.
	var done *Job
	for {
		done, err = store.Complete(ctx, r.Job.ID, r.Hold(), nil)
		if err == nil {
			break
		}
		if errors.Is(err, ErrReservationLost) {
			t.Fatal("the failover forgot the claim answered before it")
		}
		if time.Since(killed) > 30*time.Second {
			t.Fatalf("no completion within 30s of the master's death: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if done.State != StateCompleted || done.ReservedBy != "" && done.ReservedBy != "olga" {
		t.Fatalf("completed = %+v", done)
	}
	t.Logf("the holder completed %v after the master died", time.Since(killed).Round(time.Millisecond))
}
