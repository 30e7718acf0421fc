package notify

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"claimdesk/internal/keys"

	"github.com/redis/go-redis/v9"
)

// Timing of the bus.
const (
	// heartbeat is how often an instance renews its registration.
	heartbeat = 3 * time.Second
	// staleAfter is when an instance that has not renewed counts as gone:
	// publishers skip it, and Prune removes it.
	staleAfter = 15 * time.Second
	// blockFor is the BLMPOP timeout: how often the listener looks up from
	// its list to renew its registration and notice shutdown.
	blockFor = time.Second
	// maxBacklog caps an instance's list: a stuck instance cannot make
	// Redis grow without bound.
	maxBacklog = 1000
	// refreshEvery is how long a publisher trusts its list of instances.
	refreshEvery = time.Second
	// popMax is how many notices the listener takes off its list in one
	// round trip: a publisher pushes many at once when it is busy.
	popMax = 100
)

// Bus connects the instances of claimdesk through Redis.
type Bus struct {
	rdb redis.UniversalClient
	id  string
	log *slog.Logger

	mu        sync.Mutex
	instances []string
	fetched   time.Time
	// popOne is set when Redis lacks BLMPOP.
	popOne atomic.Bool
	// listening is set while Listen runs: the instance's own notices then
	// go to its own list even before its registration is seen, so a change
	// made here always wakes the requests waiting here.
	listening atomic.Bool
}

// NewBus returns a bus for one instance, with a fresh random id.
func NewBus(rdb redis.UniversalClient, log *slog.Logger) *Bus {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
	return &Bus{rdb: rdb, id: hex.EncodeToString(b[:]), log: log}
}

// ID is the instance's id.
func (b *Bus) ID() string { return b.id }

func (b *Bus) list(id string) string { return keys.Notices(id) }

// register records the instance as alive now, and reports whether it had
// to be added anew: the registry lost it (a Redis restart, or Prune after a
// long pause), so notices may have been missed.
func (b *Bus) register(ctx context.Context) (added bool, err error) {
	n, err := b.rdb.ZAdd(ctx, keys.Instances, redis.Z{Score: float64(time.Now().UnixMilli()), Member: b.id}).Result()
	return n == 1, err
}

// live returns the ids of the instances that renewed recently, cached for
// refreshEvery.
func (b *Bus) live(ctx context.Context) ([]string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if time.Since(b.fetched) < refreshEvery && b.instances != nil {
		return b.instances, nil
	}
	since := time.Now().Add(-staleAfter).UnixMilli()
	ids, err := b.rdb.ZRangeByScore(ctx, keys.Instances, &redis.ZRangeBy{Min: strconv.FormatInt(since, 10), Max: "+inf"}).Result()
	if err != nil {
		return nil, err
	}
	b.instances, b.fetched = ids, time.Now()
	return ids, nil
}

// Publish pushes notices to every live instance's list, in one pipeline.
func (b *Bus) Publish(ctx context.Context, notices ...Notice) error {
	if len(notices) == 0 {
		return nil
	}
	ids, err := b.live(ctx)
	if err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	if b.listening.Load() && !slices.Contains(ids, b.id) {
		// Registered after the list was read (or Redis lost it): the
		// listener pops its list all the same.
		ids = append(slices.Clip(ids), b.id)
	}
	msgs := make([]any, len(notices))
	for i, n := range notices {
		raw, err := json.Marshal(n)
		if err != nil {
			return err
		}
		msgs[i] = raw
	}
	pushes := make([]*redis.IntCmd, len(ids))
	_, err = b.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			pushes[i] = p.RPush(ctx, b.list(id), msgs...)
			p.LTrim(ctx, b.list(id), -maxBacklog, -1)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	// A list the trim cut lost its oldest notices: its instance hears a
	// resync after the rest, unless the list still holds one of an
	// earlier cut (it stays behind), so that a lagging instance is not
	// told to resync again and again.
	var cut []string
	for i, push := range pushes {
		if push.Val() > maxBacklog {
			cut = append(cut, ids[i])
		}
	}
	if len(cut) == 0 {
		return nil
	}
	resync, _ := json.Marshal(Notice{Type: Resync})
	held := make([]*redis.IntCmd, len(cut))
	_, err = b.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range cut {
			held[i] = p.LPos(ctx, b.list(id), string(resync), redis.LPosArgs{Rank: -1})
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("notify: %w", err)
	}
	_, err = b.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range cut {
			if errors.Is(held[i].Err(), redis.Nil) {
				p.RPush(ctx, b.list(id), resync)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	return nil
}

// TellUserChanged tells every live instance that the named user changed,
// so that each looks again at the websockets it has open for the user (a
// users.Observer). A failure is logged: the change is made all the same,
// and sessions and tokens follow it (they look the user up); only the
// user's websockets go on as they were until they reconnect.
func (b *Bus) TellUserChanged(ctx context.Context, name string) {
	if err := b.Publish(ctx, Notice{Type: UserChanged, User: name}); err != nil {
		b.log.Warn("user change not told to the running instances: the user's websockets go on as they were until they reconnect",
			"user", name, "err", err)
	}
}

// TellQueueSettings tells every live instance, and the pages showing the
// queue, that its settings changed (paused says whether it is now paused).
// A failure is logged: the change is made all the same, and pages show it
// at their next fetch (every 15 s at the latest).
func (b *Bus) TellQueueSettings(ctx context.Context, queue string, paused bool) {
	if err := b.Publish(ctx, Notice{Type: QueueSettings, Queue: queue, Paused: &paused}); err != nil {
		b.log.Warn("queue settings change not told to the running instances: pages show it at their next fetch",
			"queue", queue, "err", err)
	}
}

// Listen registers the instance and hands every notice pushed to it to
// deliver, until ctx ends. It survives Redis going away: it logs, backs off,
// and on reconnecting delivers a Resync notice, since notices may have been
// lost meanwhile. On return it unregisters.
func (b *Bus) Listen(ctx context.Context, deliver func(Notice)) {
	b.listening.Store(true)
	defer func() {
		b.listening.Store(false)
		// Best effort: a stale registration is pruned anyway.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		b.rdb.ZRem(ctx, keys.Instances, b.id)
		b.rdb.Del(ctx, b.list(b.id))
	}()
	backoff := 100 * time.Millisecond
	var lastBeat time.Time
	broken := false
	lost := func(err error) {
		if !broken {
			b.log.Warn("notice listener lost Redis; retrying", "err", err)
		}
		broken = true
	}
	for ctx.Err() == nil {
		if time.Since(lastBeat) >= heartbeat || broken {
			added, err := b.register(ctx)
			if err != nil {
				lost(err)
				sleep(ctx, backoff)
				backoff = min(2*backoff, 5*time.Second)
				continue
			}
			// A registration that had to be made anew (other than the
			// first) means Redis lost it: notices may be gone too, even if
			// the client's retries hid the outage.
			if broken || (added && !lastBeat.IsZero()) {
				b.log.Info("notice listener is back")
				deliver(Notice{Type: Resync})
			}
			lastBeat, broken, backoff = time.Now(), false, 100*time.Millisecond
		}
		msgs, err := b.pop(ctx)
		switch {
		case errors.Is(err, redis.Nil):
		case err != nil:
			if ctx.Err() == nil {
				lost(err)
			}
		default:
			for _, msg := range msgs {
				var n Notice
				if err := json.Unmarshal([]byte(msg), &n); err != nil {
					b.log.Warn("bad notice", "err", err)
					continue
				}
				deliver(n)
			}
		}
	}
}

// pop waits up to blockFor for notices on the instance's list and takes
// up to popMax of them, oldest first (redis.Nil when none came). It uses
// BLMPOP (Redis 7), and BLPOP, one notice at a time, on an older server.
func (b *Bus) pop(ctx context.Context) ([]string, error) {
	if !b.popOne.Load() {
		_, msgs, err := b.rdb.BLMPop(ctx, blockFor, "left", popMax, b.list(b.id)).Result()
		if err == nil || !strings.HasPrefix(err.Error(), "ERR unknown command") {
			return msgs, err
		}
		b.popOne.Store(true)
	}
	res, err := b.rdb.BLPop(ctx, blockFor, b.list(b.id)).Result()
	if err != nil {
		return nil, err
	}
	return res[1:], nil
}

// Prune removes instances that stopped renewing, and their lists.
func (b *Bus) Prune(ctx context.Context) (int, error) {
	before := "(" + strconv.FormatInt(time.Now().Add(-staleAfter).UnixMilli(), 10)
	stale, err := b.rdb.ZRangeByScore(ctx, keys.Instances, &redis.ZRangeBy{Min: "-inf", Max: before}).Result()
	if err != nil || len(stale) == 0 {
		return 0, err
	}
	// Removing by score takes only those still stale, even if one renewed
	// since the read above; its list stays.
	if err := b.rdb.ZRemRangeByScore(ctx, keys.Instances, "-inf", before).Err(); err != nil {
		return 0, err
	}
	pruned := 0
	for _, id := range stale {
		switch err := b.rdb.ZScore(ctx, keys.Instances, id).Err(); {
		case err == nil:
			continue // renewed in between
		case err != redis.Nil:
			return pruned, err
		}
		if err := b.rdb.Del(ctx, b.list(id)).Err(); err != nil {
			return pruned, err
		}
		pruned++
	}
	return pruned, nil
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
