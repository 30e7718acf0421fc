package notify

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"claimdesk/internal/tasks"
	"claimdesk/internal/tasks/taskstest"
)

// page is what an open page shows of the queues' counts, as
// static/js/counts.js keeps it: the counts of the last queue.changed it
// read, or of its fetch after a resync. A frame that came while the fetch
// was on its way is shown after it (counts.js shows again, after a swap,
// the notices heard since its request went out).
type page struct {
	c      *Client
	viewer Viewer
	mu     sync.Mutex
	shown  map[string]tasks.Counts
	// every is how long the page takes to come back for more after it
	// read what waited (a slow link drains in bursts): zero for a page
	// that keeps up. stalled holds a page that reads nothing until it is
	// closed.
	every   time.Duration
	stalled chan struct{}
}

func (p *page) show(queue string, c tasks.Counts) {
	p.mu.Lock()
	p.shown[queue] = c
	p.mu.Unlock()
}

// read reads the page's frames until ctx ends.
func (p *page) read(ctx context.Context, store *tasks.Store, queues []string) {
	if p.stalled != nil {
		select {
		case <-p.stalled:
		case <-ctx.Done():
			return
		}
	}
	for {
		select {
		case <-p.c.Ready():
		case <-ctx.Done():
			return
		}
		for _, f := range p.c.Take() {
			for _, n := range f.Notices() {
				switch {
				case n.Type == Resync:
					for _, q := range queues {
						if st, err := store.Stats(ctx, q); err == nil && p.viewer.seesAlike(Notice{Type: QueueChanged, Queue: q}) {
							p.show(q, st.Counts())
						}
					}
				case n.Type == QueueChanged:
					p.show(n.Queue, tasks.Counts{Ready: *n.Ready, Held: *n.Held, Scheduled: *n.Scheduled, Reserved: *n.Reserved, Dead: *n.Dead})
				}
			}
		}
		if p.every > 0 {
			time.Sleep(p.every) // a slow page: it comes back this much later
		}
	}
}

// Many pages (quick, slow and stalled; operators of one queue or two, away
// or not, and supervisors) end showing the store's counts within
// convergeWithin of the last change, while the counts on their way from
// the store's changes are lost, held back behind later ones, and cross,
// and the last to arrive is older than the store's.
func TestPagesConvergeOnTheStoresCounts(t *testing.T) {
	t.Parallel()
	server := taskstest.Redis(t)
	rdb := server.Client()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store := tasks.New(rdb)
	queues := []string{"mail", "scans"}
	for _, q := range queues {
		if _, err := store.PutQueue(ctx, tasks.Queue{Name: q}); err != nil {
			t.Fatal(err)
		}
	}
	hub := NewHub()
	defer hub.Close()
	hub.Settle(func(ctx context.Context, q string) (tasks.Counts, error) {
		st, err := store.Stats(ctx, q)
		return st.Counts(), err
	})

	// The way from the store to the hub: of each change's counts, some
	// are lost, some held back and handed on after later ones.
	var way sync.Mutex
	rng := rand.New(rand.NewPCG(36, 1))
	var late []Notice
	lastAt := map[string]int64{} // the latest change of each queue
	store.Observe(func(_ context.Context, fx tasks.Effects) {
		n := countsNotice(fx.Queue, fx.Counts, fx.At.UnixMilli())
		way.Lock()
		defer way.Unlock()
		lastAt[fx.Queue] = max(lastAt[fx.Queue], n.At)
		switch r := rng.IntN(10); {
		case r < 2: // lost
		case r < 4:
			late = append(late, *n)
		default:
			hub.Deliver(*n)
			for _, l := range late {
				hub.Deliver(l)
			}
			late = nil
		}
	})

	var pages []*page
	open := func(v Viewer, n int, every time.Duration, stalled chan struct{}) {
		for range n {
			p := &page{c: hub.Join(v), viewer: v, shown: map[string]tasks.Counts{}, every: every, stalled: stalled}
			pages = append(pages, p)
			go p.read(ctx, store, queues)
		}
	}
	stalled := make(chan struct{})
	both := []string{"mail", "scans"}
	open(Viewer{Name: "ann", Queues: both}, 60, 0, nil)
	open(Viewer{Name: "bob", Queues: []string{"mail"}}, 20, 0, nil)
	open(Viewer{Name: "away", Queues: both, Away: true}, 10, 0, nil)
	open(Viewer{Name: "boss", All: true}, 10, 0, nil)
	open(Viewer{Name: "slow", Queues: both}, 20, 300*time.Millisecond, nil)
	open(Viewer{Name: "stalled", Queues: both}, 10, 0, stalled)
	open(Viewer{Name: "stalled-boss", All: true}, 5, 0, stalled)

	// Four people work the queues for a while: enqueue, claim, complete or
	// give back.
	var work sync.WaitGroup
	stop := time.Now().Add(2 * time.Second)
	for w := range 4 {
		work.Add(1)
		go func() {
			defer work.Done()
			q := queues[w%2]
			who := fmt.Sprintf("op-%d", w)
			for i := 0; time.Now().Before(stop); i++ {
				if _, err := store.Enqueue(ctx, q, who, []tasks.NewJob{{Title: fmt.Sprint(who, " ", i)}, {Title: fmt.Sprint(who, " ", i, "b")}}); err != nil {
					t.Error(err)
					return
				}
				r, err := store.Claim(ctx, q, who)
				if err != nil || r == nil {
					t.Errorf("claim: %v, %v", r, err)
					return
				}
				if i%3 == 0 {
					_, err = store.Release(ctx, r.Job.ID, r.Hold())
				} else {
					_, err = store.Complete(ctx, r.Job.ID, r.Hold(), nil)
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	work.Wait()
	if t.Failed() {
		return
	}
	// The last change of each queue arrives, and then counts older than
	// it that crossed it on the way, made in the same millisecond: nothing
	// tells them apart but the store.
	for _, q := range queues {
		st, err := store.Stats(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		way.Lock()
		stale := countsNotice(q, st.Counts(), lastAt[q])
		*stale.Ready++
		hub.Deliver(*countsNotice(q, st.Counts(), lastAt[q]))
		hub.Deliver(*stale)
		way.Unlock()
	}
	done := time.Now()
	close(stalled)

	want := map[string]tasks.Counts{}
	for _, q := range queues {
		st, err := store.Stats(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		want[q] = st.Counts()
	}
	wrong := func() (n int, example string) {
		for _, p := range pages {
			p.mu.Lock()
			for _, q := range queues {
				if !p.viewer.seesAlike(Notice{Type: QueueChanged, Queue: q}) {
					continue
				}
				if got := p.shown[q]; got != want[q] {
					n++
					example = fmt.Sprintf("%s's page shows %s %+v, the store %+v", p.viewer.Name, q, got, want[q])
				}
			}
			p.mu.Unlock()
		}
		return n, example
	}
	// The promise is of the state at the bound: what pages show then.
	time.Sleep(time.Until(done.Add(convergeWithin)))
	if n, example := wrong(); n > 0 {
		t.Fatalf("%d pages' counts are not the store's %v after the last change (%s)", n, convergeWithin, example)
	}
}
