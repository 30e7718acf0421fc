package handlers

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A shared value is read once for all who want it at once, kept until
// dropped or stale, and a read that a drop overtook is never kept.
func TestSharedReadsOnceAndDrops(t *testing.T) {
	s := shared[int]{ttl: time.Hour}
	var reads atomic.Int64
	release := make(chan struct{})
	read := func(context.Context) (int, error) {
		n := reads.Add(1)
		<-release
		return int(n), nil
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	got := make([]int, 20)
	for i := range got {
		wg.Add(1)
		go func() { defer wg.Done(); got[i], _ = s.get(ctx, read) }()
	}
	// Everyone waits on the one read.
	for deadline := time.Now().Add(5 * time.Second); reads.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
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
	time.Sleep(20 * time.Millisecond)
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

	// Stale after ttl.
	s.ttl = time.Nanosecond
	time.Sleep(time.Millisecond)
	if v, _ := s.get(ctx, func(context.Context) (int, error) { return 400, nil }); v != 400 {
		t.Fatalf("past its ttl the value was kept: %d", v)
	}
}
