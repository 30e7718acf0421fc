package tasks

import (
	"context"
	"fmt"
	"testing"
)

// benchEnv is an env on the standalone Redis with the Redis clock, as in
// production.
func benchEnv(b *testing.B, q Queue) *env {
	b.Helper()
	e := &env{t: b, ctx: context.Background(), rdb: backends[0].rdb, store: New(backends[0].rdb)}
	q.Name = fmt.Sprintf("bench%d", queueSeq.Add(1))
	if _, err := e.store.PutQueue(e.ctx, q); err != nil {
		b.Fatal(err)
	}
	e.queue = q.Name
	return e
}

func BenchmarkEnqueue(b *testing.B) {
	e := benchEnv(b, Queue{})
	job := []NewJob{{Title: "Check invoice", Payload: []byte(`{"invoice":4711,"amount":"12.50"}`)}}
	for b.Loop() {
		if _, err := e.store.Enqueue(e.ctx, e.queue, job); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkClaimComplete(b *testing.B) {
	e := benchEnv(b, Queue{})
	e.enqueueMany(b.N)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r, err := e.store.Claim(e.ctx, e.queue, "ann")
			if err != nil || r == nil {
				b.Error("claim:", err)
				return
			}
			if _, err := e.store.Complete(e.ctx, r.Job.ID, r.Token, nil); err != nil {
				b.Error("complete:", err)
				return
			}
		}
	})
}

// BenchmarkClaimDepth claims and gives back with 1k and 100k jobs ready:
// the cost of a claim must not grow with the queue.
func BenchmarkClaimDepth(b *testing.B) {
	for _, depth := range []int{1_000, 100_000} {
		b.Run(fmt.Sprint(depth), func(b *testing.B) {
			e := benchEnv(b, Queue{})
			e.enqueueMany(depth)
			b.ResetTimer()
			for b.Loop() {
				r, err := e.store.Claim(e.ctx, e.queue, "ann")
				if err != nil || r == nil {
					b.Fatal("claim:", err)
				}
				if _, err := e.store.Release(e.ctx, r.Job.ID, r.Token); err != nil {
					b.Fatal("release:", err)
				}
			}
		})
	}
}
