package handlers

import (
	"context"
	"errors"
	"maps"
	"slices"
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
	queues       *queueBoard
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
	return &board{queues: newQueueBoard(boardTTL), reservations: shared[tasks.Page]{ttl: boardTTL}}
}

// observe drops what a change made here changed (tasks.Store.Observe):
// its queue's counts, and the reservations if one began or ended.
func (b *board) observe(_ context.Context, fx tasks.Effects) {
	b.queues.changed(fx.Queue)
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
	b.queues.settingsChanged(queue)
	b.settings.Delete(queue)
}

// heard drops what a notice says changed (notify.Hub.Tap): a queue's
// settings or counts, the reservations, or everything after a resync.
func (b *board) heard(n *notify.Notice) {
	switch n.Type {
	case notify.QueueSettings:
		b.settingsChanged(n.Queue)
	case notify.QueueChanged:
		// The counts a notice carries are not all the board shows (the
		// completed, the oldest wait): the queue is read again.
		b.queues.changed(n.Queue)
	case notify.ReservationCreated, notify.ReservationExtended, notify.ReservationReleased,
		notify.ReservationCompleted, notify.ReservationExpired:
		b.reservations.drop()
	case notify.Resync:
		b.queues.dropAll()
		b.reservations.drop()
		b.settings.Clear()
	}
}

// queueBoard is every queue's settings and counts, kept per queue: the
// set of queues is one entry, and each queue's settings and counts one
// more, so that a change of one queue drops only its own. A read of the
// board reads again, in one round trip, only the queues whose entries were
// dropped or are older than boardTTL.
type queueBoard struct {
	// names is the set of queues, sorted; its ttl is every entry's.
	names shared[[]string]
	mu    sync.Mutex
	// each is the entry of every queue of the last names read; nil in an
	// entry is a name of no queue (its settings not written yet, or gone).
	each map[string]*shared[*tasks.QueueStats]
}

// newQueueBoard returns a board of the queues whose entries are kept at
// most ttl.
func newQueueBoard(ttl time.Duration) *queueBoard {
	return &queueBoard{names: shared[[]string]{ttl: ttl}, each: map[string]*shared[*tasks.QueueStats]{}}
}

// get returns every queue with its settings and counts, sorted by name:
// the set of queues as kept, and each queue's entry as kept, the stale
// ones read in one round trip.
func (q *queueBoard) get(ctx context.Context, store *tasks.Store) ([]tasks.QueueStats, error) {
	names, err := q.names.get(ctx, store.QueueNames)
	if err != nil {
		return nil, err
	}
	vals, err := getEach(ctx, q.entries(names), func(ctx context.Context, stale []int) ([]*tasks.QueueStats, error) {
		want := make([]string, len(stale))
		for k, i := range stale {
			want[k] = names[i]
		}
		read, err := store.QueuesNamed(ctx, want)
		if err != nil {
			return nil, err
		}
		byName := make(map[string]*tasks.QueueStats, len(read))
		for i := range read {
			byName[read[i].Queue.Name] = &read[i]
		}
		out := make([]*tasks.QueueStats, len(want))
		for k, n := range want {
			out[k] = byName[n] // nil: no such queue
		}
		return out, nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]tasks.QueueStats, 0, len(vals))
	for _, v := range vals {
		if v != nil {
			out = append(out, *v)
		}
	}
	return out, nil
}

// entries returns the entries of the named queues, making those it lacks,
// and forgets those of queues no longer named.
func (q *queueBoard) entries(names []string) []*shared[*tasks.QueueStats] {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([]*shared[*tasks.QueueStats], len(names))
	for i, n := range names {
		e := q.each[n]
		if e == nil {
			e = &shared[*tasks.QueueStats]{ttl: q.names.ttl}
			q.each[n] = e
		}
		out[i] = e
	}
	if len(q.each) > len(names) {
		maps.DeleteFunc(q.each, func(n string, _ *shared[*tasks.QueueStats]) bool { return !slices.Contains(names, n) })
	}
	return out
}

// changed drops the queue's entry: its counts changed. A queue the board
// does not know of may be new, so the set of queues is read again too.
func (q *queueBoard) changed(name string) {
	q.mu.Lock()
	e := q.each[name]
	q.mu.Unlock()
	if e == nil {
		q.names.drop()
		return
	}
	e.drop()
}

// settingsChanged drops the queue's entry and the set of queues: the
// queue's settings changed, or it was made or deleted.
func (q *queueBoard) settingsChanged(name string) {
	q.names.drop()
	q.changed(name)
}

// dropAll drops the set of queues and every queue's entry.
func (q *queueBoard) dropAll() {
	q.names.drop()
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, e := range q.each {
		e.drop()
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
	vals, err := getEach(ctx, []*shared[T]{s}, func(ctx context.Context, _ []int) ([]T, error) {
		v, err := read(ctx)
		return []T{v}, err
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return vals[0], nil
}

// getEach returns the values of the entries, each as get returns it: kept,
// or read by the fetch under way since the entry's last drop, or else read
// now. The entries read now are read together, in one call of read, which
// is given their indexes in entries and answers their values in that
// order.
func getEach[T any](ctx context.Context, entries []*shared[T], read func(context.Context, []int) ([]T, error)) ([]T, error) {
	vals := make([]T, len(entries))
	fetches := make([]*fetch[T], len(entries))
	var stale []int
	for i, e := range entries {
		v, f, begun := e.want()
		if f == nil {
			vals[i] = v
			continue
		}
		fetches[i] = f
		if begun {
			stale = append(stale, i)
		}
	}
	if len(stale) > 0 {
		mine := make([]*fetch[T], len(stale))
		for k, i := range stale {
			mine[k] = fetches[i]
		}
		go runEach(entries, stale, mine, read)
	}
	for i, f := range fetches {
		if f == nil {
			continue
		}
		select {
		case <-f.done:
			if f.err != nil {
				return nil, f.err
			}
			vals[i] = f.val
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return vals, nil
}

// want returns the kept value, or else the fetch to wait on: the one under
// way since the last drop, or a new one (begun), which the caller must run.
func (s *shared[T]) want() (v T, f *fetch[T], begun bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ok && s.valGen == s.gen && time.Since(s.at) < s.ttl {
		return s.val, nil, false
	}
	if f := s.flight; f != nil && f.gen == s.gen {
		return v, f, false
	}
	f = &fetch[T]{gen: s.gen, done: make(chan struct{})}
	s.flight = f
	return v, f, true
}

// runEach reads the values of the fetches begun for the entries at the
// indexes stale, in one call of read, and settles each fetch.
func runEach[T any](entries []*shared[T], stale []int, fetches []*fetch[T], read func(context.Context, []int) ([]T, error)) {
	ctx, cancel := context.WithTimeout(context.Background(), boardFetchTimeout)
	defer cancel()
	began := time.Now()
	vals, err := read(ctx, stale)
	for k, i := range stale {
		f := fetches[k]
		if err != nil {
			f.err = err
		} else {
			f.val = vals[k]
		}
		entries[i].settle(f, began)
	}
}

// settle keeps the outcome of the fetch f, begun at began, unless a drop
// came meanwhile, and hands it to those waiting on f.
func (s *shared[T]) settle(f *fetch[T], began time.Time) {
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
	return s.board.queues.get(ctx, s.tasks)
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
