package handlers

import (
	"context"
	"errors"
	"sync"
	"time"

	"claimdesk/internal/notify"
	"claimdesk/internal/tasks"
)

// boardTTL is how long the instance's pages share what is the same for
// every viewer before it is read again, when no change said so sooner: the
// bound on how stale a count can be when notices were lost.
const boardTTL = time.Second

// boardFetchTimeout bounds one shared read: the requests waiting on it may
// give up sooner, but the read goes on for the others.
const boardFetchTimeout = 5 * time.Second

// board is what every page of the instance shows alike: the queues with
// their settings and counts, and the first page of live reservations. Each
// is read from Redis once for all the requests that want it at about the
// same time, and kept until a change drops it (a transition made here, or
// a notice from any instance) or boardTTL passes.
type board struct {
	queues       shared[[]tasks.QueueStats]
	reservations shared[tasks.Page]
	// settings are each queue's settings (name → *shared[tasks.Queue]),
	// which a holder's every action reads (the outcome form, the limits
	// of more time): kept until a notice says they changed (a queue's
	// settings, or a resync) or settingsTTL passes, not dropped by every
	// job's change as the counts are.
	settings sync.Map
}

// settingsTTL bounds how long a queue's settings are kept when the notice
// of their change was lost.
const settingsTTL = 5 * time.Second

func newBoard() *board {
	return &board{queues: shared[[]tasks.QueueStats]{ttl: boardTTL}, reservations: shared[tasks.Page]{ttl: boardTTL}}
}

// observe drops what a change made here changed (tasks.Store.Observe).
func (b *board) observe(_ context.Context, fx tasks.Effects) {
	b.queues.drop()
	for _, t := range fx.Transitions {
		if t.From == tasks.StateReserved || t.To == tasks.StateReserved {
			b.reservations.drop()
			return
		}
	}
}

// settingsChanged drops what a change of the queue's settings made here
// changed (desk.Config.SettingsChanged): other instances learn it from
// the notice.
func (b *board) settingsChanged(queue string) {
	b.queues.drop()
	b.settings.Delete(queue)
}

// heard drops what a notice says changed (notify.Hub.Tap): the counts of
// a queue, the reservations, or everything after a resync.
func (b *board) heard(n *notify.Notice) {
	switch n.Type {
	case notify.QueueSettings:
		b.queues.drop()
		b.settings.Delete(n.Queue)
	case notify.QueueChanged:
		b.queues.drop()
	case notify.ReservationCreated, notify.ReservationExtended, notify.ReservationReleased,
		notify.ReservationCompleted, notify.ReservationExpired:
		b.reservations.drop()
	case notify.Resync:
		b.queues.drop()
		b.reservations.drop()
		b.settings.Clear()
	}
}

// shared is a value that every request of the instance reads alike: it is
// fetched once for all the requests that want it meanwhile, and kept for
// ttl or until dropped. A fetch that began before a drop is never kept,
// nor answers a request that came after it.
type shared[T any] struct {
	ttl time.Duration

	mu sync.Mutex
	// gen counts the drops; a value or fetch of an older gen is stale.
	gen    uint64
	val    T
	valGen uint64
	at     time.Time
	ok     bool
	flight *fetch[T]
}

// fetch is one read under way, and its outcome once done is closed.
type fetch[T any] struct {
	gen  uint64
	done chan struct{}
	val  T
	err  error
}

// drop forgets the value: the next get reads it afresh.
func (s *shared[T]) drop() {
	s.mu.Lock()
	s.gen++
	s.mu.Unlock()
}

// get returns the value: kept, or read by the fetch under way since the
// last drop, or else read now by read. The value is shared: never change it.
func (s *shared[T]) get(ctx context.Context, read func(context.Context) (T, error)) (T, error) {
	s.mu.Lock()
	if s.ok && s.valGen == s.gen && time.Since(s.at) < s.ttl {
		v := s.val
		s.mu.Unlock()
		return v, nil
	}
	f := s.flight
	if f == nil || f.gen != s.gen {
		f = &fetch[T]{gen: s.gen, done: make(chan struct{})}
		s.flight = f
		go s.run(f, read)
	}
	s.mu.Unlock()
	select {
	case <-f.done:
		return f.val, f.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// run reads the value for the fetch f, and keeps it unless a drop came
// meanwhile.
func (s *shared[T]) run(f *fetch[T], read func(context.Context) (T, error)) {
	ctx, cancel := context.WithTimeout(context.Background(), boardFetchTimeout)
	defer cancel()
	began := time.Now()
	f.val, f.err = read(ctx)
	s.mu.Lock()
	if f.err == nil && f.gen == s.gen {
		s.val, s.valGen, s.at, s.ok = f.val, f.gen, began, true
	}
	if s.flight == f {
		s.flight = nil
	}
	s.mu.Unlock()
	close(f.done)
}

// queueSettings returns the settings of the named queue, from the
// instance's board.
func (s *Server) queueSettings(ctx context.Context, name string) (tasks.Queue, error) {
	v, _ := s.board.settings.LoadOrStore(name, &shared[tasks.Queue]{ttl: settingsTTL})
	q, err := v.(*shared[tasks.Queue]).get(ctx, func(ctx context.Context) (tasks.Queue, error) {
		return s.tasks.Queue(ctx, name)
	})
	if errors.Is(err, tasks.ErrQueueNotFound) {
		s.board.settings.Delete(name) // only queues that exist are kept
	}
	return q, err
}

// boardQueues reads every queue with its counts, from the board.
func (s *Server) boardQueues(ctx context.Context) ([]tasks.QueueStats, error) {
	return s.board.queues.get(ctx, s.tasks.Queues)
}

// outcomeOf returns the outcome form of the job's queue: nil when it has
// none, or when the queue is gone (the engine then says what became of
// the job).
func (s *Server) outcomeOf(ctx context.Context, id string) (*tasks.Outcome, error) {
	name, ok := tasks.QueueOf(id)
	if !ok {
		return nil, tasks.ErrNotFound
	}
	q, err := s.queueSettings(ctx, name)
	if errors.Is(err, tasks.ErrQueueNotFound) {
		return nil, nil
	}
	return q.Outcome, err
}
