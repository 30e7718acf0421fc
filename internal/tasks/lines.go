package tasks

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// Calls that arrive while another call of the same kind and key is under
// way wait for it to end, then go together: group commit. A lone call goes
// at once, so nothing waits that could have gone; under a steady flow from
// many callers, each send carries every call that came meanwhile, and
// Redis pays what a round trip costs it (reading the request, writing the
// answer, a replica's confirmation), and for enqueues a script call's own
// fixed cost, once for them all. Two kinds go together: enqueues of one
// queue and producer, as one call of enqueue.lua (Store.Enqueue), and the
// engine's other changes of one queue, as one pipeline of their script
// calls, each still its own atomic call (Store.fcall).

// request is one call waiting in a line: answered is closed once it is
// answered; fail answers it with err.
type request interface {
	comparable
	answered() chan struct{}
	fail(err error)
}

// lines are the lines of waiting calls of one kind, by key.
type lines[R request] struct {
	mu sync.Mutex
	m  map[string]*line[R]
}

// line is the calls of one key waiting for the send under way, if one is
// (busy).
type line[R request] struct {
	busy    bool
	waiting []R
}

// call puts r in key's line and returns once it is answered (true), or
// ctx is done (false: a call already sent then runs to its end unread). The first call of an
// idle line starts send, which takes the waiting calls (take says how
// many go together) and answers them, until none is left.
func (ls *lines[R]) call(ctx context.Context, key string, r R, take func(waiting []R) int, send func(ctx context.Context, group []R)) bool {
	ls.mu.Lock()
	if ls.m == nil {
		ls.m = map[string]*line[R]{}
	}
	l := ls.m[key]
	if l == nil {
		l = &line[R]{}
		ls.m[key] = l
	}
	l.waiting = append(l.waiting, r)
	lead := !l.busy
	l.busy = true
	ls.mu.Unlock()
	if lead {
		// The sends run to their end whatever becomes of this call:
		// others ride on them.
		go ls.drain(context.WithoutCancel(ctx), key, l, take, send)
	}
	select {
	case <-r.answered():
		return true
	case <-ctx.Done():
		ls.mu.Lock()
		if i := slices.Index(l.waiting, r); i >= 0 {
			l.waiting = slices.Delete(l.waiting, i, i+1)
		}
		ls.mu.Unlock()
		// Answered meanwhile: the answer stands.
		select {
		case <-r.answered():
			return true
		default:
			return false
		}
	}
}

// drain sends the calls waiting in line l, as many together as take
// allows, until none is left.
func (ls *lines[R]) drain(ctx context.Context, key string, l *line[R], take func(waiting []R) int, send func(ctx context.Context, group []R)) {
	for {
		ls.mu.Lock()
		if len(l.waiting) == 0 {
			l.busy = false
			delete(ls.m, key)
			ls.mu.Unlock()
			return
		}
		n := max(take(l.waiting), 1)
		group := slices.Clone(l.waiting[:n])
		l.waiting = slices.Delete(l.waiting, 0, n)
		ls.mu.Unlock()
		sendSafely(ctx, group, send)
	}
}

// sendSafely sends the group; should send panic, as a request's own code
// may (the Store's observers), each call it left unanswered is answered
// with the panic as an error, as a request's own panic would end in an
// internal error, and the line goes on.
func sendSafely[R request](ctx context.Context, group []R, send func(ctx context.Context, group []R)) {
	defer func() {
		if p := recover(); p != nil {
			err := fmt.Errorf("tasks: panic while sending: %v", p)
			for _, r := range group {
				select {
				case <-r.answered():
				default:
					r.fail(err)
				}
			}
		}
	}()
	send(ctx, group)
}
