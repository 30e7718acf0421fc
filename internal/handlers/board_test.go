package handlers

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// A shared value is read once for all who want it at once, kept until
// dropped or stale, and a read that a drop overtook is never kept. It runs
// in a synctest bubble: synctest.Wait returns once every request is
// blocked (waiting on a read), and time moves only when the test sleeps.
func TestSharedReadsOnceAndDrops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := shared[int]{ttl: time.Hour}
		var reads atomic.Int64
		release := make(chan struct{})
		read := func(context.Context) (int, error) {
			n := reads.Add(1)
			<-release
			return int(n), nil
		}
		ctx := t.Context()
		var wg sync.WaitGroup
		got := make([]int, 20)
		for i := range got {
			wg.Go(func() { got[i], _ = s.get(ctx, read) })
		}
		// Everyone waits on the one read.
		synctest.Wait()
		if n := reads.Load(); n != 1 {
			t.Fatalf("%d reads under way for 20 requests at once, want 1", n)
		}
		close(release)
		wg.Wait()
		for i, v := range got {
			if v != 1 {
				t.Fatalf("request %d got %d, want the one read's 1", i, v)
			}
		}
		if v, _ := s.get(ctx, read); v != 1 || reads.Load() != 1 {
			t.Fatalf("kept value %d after %d reads, want 1 after 1", v, reads.Load())
		}

		// A drop while a read is under way: the read answers those who asked
		// before the drop, but whoever asks after it gets a read of its own,
		// and the older read is not kept.
		s.drop()
		slow := make(chan struct{})
		first := make(chan int)
		go func() {
			v, _ := s.get(ctx, func(context.Context) (int, error) { <-slow; return 100, nil })
			first <- v
		}()
		synctest.Wait() // the read before the drop is under way
		s.drop()
		if v, _ := s.get(ctx, func(context.Context) (int, error) { return 200, nil }); v != 200 {
			t.Fatalf("after the drop got %d, want a fresh read's 200", v)
		}
		close(slow)
		if v := <-first; v != 100 {
			t.Fatalf("the request before the drop got %d, want 100", v)
		}
		if v, _ := s.get(ctx, func(context.Context) (int, error) { return 300, nil }); v != 200 {
			t.Fatalf("kept %d, want the fresh read's 200, not the overtaken 100", v)
		}

		// Kept until its ttl passes, stale from then on.
		s.ttl = time.Minute
		time.Sleep(s.ttl - time.Nanosecond)
		if v, _ := s.get(ctx, func(context.Context) (int, error) { return 400, nil }); v != 200 {
			t.Fatalf("within its ttl got %d, want the kept 200", v)
		}
		time.Sleep(time.Nanosecond)
		if v, _ := s.get(ctx, func(context.Context) (int, error) { return 400, nil }); v != 400 {
			t.Fatalf("past its ttl the value was kept: %d", v)
		}
	})
}
