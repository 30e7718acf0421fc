package tasks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"claimdesk/internal/storeerr"

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

// redirects bounds how often one durable call follows the cluster to a
// slot's new master (MOVED after a failover or a resharding), or waits out
// a cluster that is down or a master that cannot be reached for a moment:
// 0.5 s in all.
const redirects = 5

// durably sends the commands queue adds, all on key's slot, to the master
// of that slot on one connection, followed by WAIT when the Store waits for
// replicas. It returns the first command's error, else what kept them from
// running, else an error wrapping storeerr.ErrNotReplicated when replicas
// did not confirm them (each command then holds its answer).
//
// The cluster client would route the commands itself, but a keyless WAIT
// could land on another node or connection, and would then confirm nothing.
// So durable calls pick the master themselves. A command the master refused
// without running it (MOVED, ASK, TRYAGAIN, CLUSTERDOWN, READONLY from a
// demoted master) or that never left (no connection) is sent again to the
// slot's master after the slot map is read anew; a command that may have
// reached the master (a connection lost later) is never sent twice.
func (s *Store) durably(ctx context.Context, key string, queue func(p redis.Pipeliner)) error {
	cluster, _ := s.rdb.(*redis.ClusterClient)
	for attempt := 0; ; attempt++ {
		node, ok := s.rdb.(*redis.Client)
		if cluster != nil {
			var err error
			if node, err = cluster.MasterForKey(ctx, key); err != nil {
				return err
			}
		} else if !ok {
			return fmt.Errorf("durable calls through a %T", s.rdb)
		}
		pipe := node.Pipeline()
		queue(pipe)
		var wait *redis.Cmd
		if s.minReplicas > 0 {
			wait = pipe.Do(ctx, "wait", s.minReplicas, s.replicaTimeout.Milliseconds())
		}
		cmds, _ := pipe.Exec(ctx)
		first := cmds[0].Err()
		if cluster != nil && first != nil && !isReply(first) {
			// The node may be gone: the slot map is read anew (in the
			// background, at most every 200 ms), so that calls find the
			// replica that takes its place.
			cluster.ReloadState(ctx)
		}
		if cluster != nil && (refusedUnrun(first) || unsent(first)) && attempt < redirects {
			cluster.ReloadState(ctx)
			if err := sleep(ctx, time.Duration(attempt)*50*time.Millisecond); err != nil {
				return err
			}
			continue
		}
		if first != nil || wait == nil {
			return first
		}
		n, err := wait.Int64()
		if err != nil {
			return fmt.Errorf("%w: %w", storeerr.ErrNotReplicated, err)
		}
		if n < int64(s.minReplicas) {
			return fmt.Errorf("%w: %d of %d replicas within %v", storeerr.ErrNotReplicated, n, s.minReplicas, s.replicaTimeout)
		}
		return nil
	}
}

// refusedUnrun reports whether a cluster node refused a command without
// running it, so sending it again cannot apply it twice.
func refusedUnrun(err error) bool {
	if err == nil {
		return false
	}
	_, moved := redis.IsMovedError(err)
	_, ask := redis.IsAskError(err)
	return moved || ask || redis.IsTryAgainError(err) || redis.IsClusterDownError(err) ||
		redis.IsReadOnlyError(err) || redis.IsMasterDownError(err)
}

// isReply reports whether err is an error reply of a Redis server, as
// opposed to trouble reaching it.
func isReply(err error) bool {
	var reply redis.Error
	return errors.As(err, &reply)
}

// unsent reports whether err means the connection for a command could not
// even be opened, so the command never left.
func unsent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
