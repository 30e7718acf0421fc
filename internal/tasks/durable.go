package tasks

import (
	"context"
	"errors"
	"time"

	"claimdesk/internal/durable"

	"github.com/redis/go-redis/v9"
)

// WithMinReplicas makes every change the Store answers as done one that n
// replicas have confirmed (Redis WAIT, after the script, on the same
// connection) within timeout: a change that only the master holds is lost
// if the master fails before replicating it. When fewer confirm in time,
// the call fails with storeerr.ErrNotReplicated; the change stands on the
// master, and retrying is safe by the retry contracts (idempotency keys
// for enqueues and claims, the token for holder actions). 0 waits for none.
func WithMinReplicas(n int, timeout time.Duration) Option {
	return func(s *Store) { s.minReplicas, s.replicaTimeout = n, timeout }
}

// durably sends the commands queue adds, all on key's slot, to the master
// of that slot on one connection, followed by WAIT when the Store waits for
// replicas (durable.Policy.Send).
func (s *Store) durably(ctx context.Context, key string, queue func(p redis.Pipeliner)) error {
	return durable.Policy{Replicas: s.minReplicas, Timeout: s.replicaTimeout}.Send(ctx, s.rdb, key, queue)
}

// isReply reports whether err is an error reply of a Redis server, as
// opposed to trouble reaching it.
func isReply(err error) bool {
	var reply redis.Error
	return errors.As(err, &reply)
}
