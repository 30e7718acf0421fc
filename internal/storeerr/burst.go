package storeerr

import (
	"log/slog"
	"sync"
	"time"
)

// quiet is how long without a transient error ends a burst.
const quiet = 5 * time.Second

// Burst logs transient store errors as warnings, once per burst: the first
// one after a quiet spell is logged with its error; those that follow
// within quiet of each other are only counted, and one line tells how many
// there were and how long the burst lasted once it has ended. A restart or
// failover of Redis, which fails every request for a few seconds, so
// writes two lines, not thousands. It is safe for concurrent use.
type Burst struct {
	log  *slog.Logger
	what string // what was answered, e.g. "requests answered 503"
	now  func() time.Time

	mu          sync.Mutex
	first, last time.Time
	count       int
	timer       *time.Timer
}

// NewBurst returns a Burst that logs to log; what names what each error
// cost, for the closing line ("requests answered 503").
func NewBurst(log *slog.Logger, what string) *Burst {
	return &Burst{log: log, what: what, now: time.Now}
}

// Add counts one transient error, logging it if it begins a burst; args
// are logged with it (say the request's method and path).
func (b *Burst) Add(msg string, err error, args ...any) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	if b.count > 0 && now.Sub(b.last) >= quiet {
		b.endLocked()
	}
	b.last = now
	b.count++
	if b.count > 1 {
		return
	}
	b.first = now
	b.log.Warn(msg, append([]any{"err", err}, args...)...)
	b.timer = time.AfterFunc(quiet, b.check)
}

// check ends the burst if it has been quiet long enough, else looks again
// when it would have been.
func (b *Burst) check() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.count == 0 {
		return
	}
	if wait := quiet - b.now().Sub(b.last); wait > 0 {
		b.timer.Reset(wait)
		return
	}
	b.endLocked()
}

// endLocked logs the end of the burst, if more than its first error were
// counted, and starts afresh.
func (b *Burst) endLocked() {
	if b.count > 1 {
		b.log.Warn("store trouble over", "count", b.count, "what", b.what,
			"lasted", b.last.Sub(b.first).Round(time.Millisecond))
	}
	b.count = 0
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
}
