package notify

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"claimdesk/internal/keys"

	"github.com/redis/go-redis/v9"
)

// Presence keeps who has a page open, across instances: each instance
// marks the users whose websockets it holds (keys.Online), at once when a
// socket opens and then every PresenceBeat. A user no instance marked for
// PresenceTimeout has no page open.
type Presence struct {
	rdb redis.UniversalClient
	log *slog.Logger
	now func() time.Time
}

// Presence's timing.
const (
	PresenceBeat    = 10 * time.Second
	PresenceTimeout = 3*PresenceBeat + 5*time.Second
	// presenceKeep is how long a mark stays at all: then it is trimmed.
	presenceKeep = 24 * time.Hour
)

// NewPresence returns the presence kept in rdb.
func NewPresence(rdb redis.UniversalClient, log *slog.Logger) *Presence {
	return &Presence{rdb: rdb, log: log, now: time.Now}
}

// Mark says that the users have a page open now.
func (p *Presence) Mark(ctx context.Context, names ...string) error {
	if len(names) == 0 {
		return nil
	}
	now := p.now()
	zs := make([]redis.Z, len(names))
	for i, n := range names {
		zs[i] = redis.Z{Score: float64(now.UnixMilli()), Member: n}
	}
	_, err := p.rdb.Pipelined(ctx, func(pl redis.Pipeliner) error {
		pl.ZAdd(ctx, keys.Online, zs...)
		pl.ZRemRangeByScore(ctx, keys.Online, "-inf", strconv.FormatInt(now.Add(-presenceKeep).UnixMilli(), 10))
		return nil
	})
	return err
}

// Run marks the users of the hub's websockets every PresenceBeat, until
// ctx ends.
func (p *Presence) Run(ctx context.Context, hub *Hub) {
	t := time.NewTicker(PresenceBeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := p.Mark(ctx, hub.Viewers()...); err != nil && ctx.Err() == nil {
				p.log.Warn("presence not marked: the Team page may show people offline for a moment", "err", err)
			}
		}
	}
}

// Seen tells, per user, when a page of theirs was last marked open and
// when they last changed a job; zero times for never (or long ago).
type Seen struct {
	Online     time.Time
	LastAction time.Time
}

// Open reports whether the user has a page open at now.
func (s Seen) Open(now time.Time) bool {
	return !s.Online.IsZero() && now.Sub(s.Online) < PresenceTimeout
}

// Everyone returns what is known of everyone's presence, in one round trip.
func (p *Presence) Everyone(ctx context.Context) (map[string]Seen, error) {
	var online *redis.ZSliceCmd
	var acted *redis.MapStringStringCmd
	_, err := p.rdb.Pipelined(ctx, func(pl redis.Pipeliner) error {
		online = pl.ZRangeWithScores(ctx, keys.Online, 0, -1)
		acted = pl.HGetAll(ctx, keys.LastAction)
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := map[string]Seen{}
	for _, z := range online.Val() {
		name, _ := z.Member.(string)
		s := out[name]
		s.Online = time.UnixMilli(int64(z.Score))
		out[name] = s
	}
	for name, ms := range acted.Val() {
		n, _ := strconv.ParseInt(ms, 10, 64)
		s := out[name]
		s.LastAction = time.UnixMilli(n)
		out[name] = s
	}
	return out, nil
}
