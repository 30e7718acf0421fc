// Package durable makes the changes claimdesk answers as done ones that
// replicas hold: it sends a change to the Redis master of its keys' slot
// and follows it, on the same connection, with WAIT for as many replicas
// as the Policy asks. A change that only the master holds is lost if the
// master fails before replicating it; one that a replica confirmed
// survives the replica's promotion. The engine (internal/tasks) and the
// people data (internal/users) write through it.
package durable

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"claimdesk/internal/storeerr"

	"github.com/redis/go-redis/v9"
)

// Policy says how many replicas must confirm a change, and how long to
// wait for them. The zero Policy waits for none.
type Policy struct {
	// Replicas is how many replicas must confirm a change (Redis WAIT);
	// 0 waits for none.
	Replicas int
	// Timeout bounds the wait: when fewer replicas confirm within it, the
	// change is answered with storeerr.ErrNotReplicated.
	Timeout time.Duration
}

// redirects bounds how often one change follows the cluster to a slot's
// new master (MOVED after a failover or a resharding), or waits out a
// cluster that is down or a master that cannot be reached for a moment:
// 0.5 s in all.
const redirects = 5

// Send sends the commands queue adds, all on key's slot, to the master of
// that slot on one connection, followed by WAIT when the Policy waits for
// replicas, in one round trip. It returns what kept them from running,
// else an error wrapping storeerr.ErrNotReplicated when replicas did not
// confirm them, else the first command's error reply: each command holds
// its own answer. An error reply of a command that ran does not spare the
// others their WAIT. The commands are sent again only when the master
// refused every one of them unrun: one that may have run is never sent
// twice, and one refused beside others that ran keeps its refusal.
func (p Policy) Send(ctx context.Context, rdb redis.UniversalClient, key string, queue func(pipe redis.Pipeliner)) error {
	var ran error // the first command's error reply, once it ran
	err := p.onMaster(ctx, rdb, key, func(node *redis.Client) (*redis.Cmd, error) {
		pipe := node.Pipeline()
		queue(pipe)
		queued := pipe.Len()
		var wait *redis.Cmd
		if p.Replicas > 0 {
			wait = pipe.Do(ctx, "wait", p.Replicas, p.Timeout.Milliseconds())
		}
		cmds, _ := pipe.Exec(ctx)
		first := cmds[0].Err()
		if refusedUnrun(first) {
			for _, c := range cmds[1:queued] {
				if !refusedUnrun(c.Err()) {
					first = nil // some ran: no command goes twice
					break
				}
			}
		}
		if isReply(first) && !refusedUnrun(first) {
			ran, first = first, nil
		}
		return wait, first
	})
	if err != nil {
		return err
	}
	return ran
}

// Tx runs fn on one connection to the master of key's slot, with the keys
// of watch WATCHed first (none: no optimistic check), and then, when fn
// succeeds and the Policy waits for replicas, WAIT on that connection. fn
// reads with tx what its change depends on and makes the change with
// tx.TxPipelined (MULTI/EXEC), as the last thing it sends; every key it
// touches is in key's slot. Tx returns fn's error (redis.TxFailedErr when
// a watched key changed meanwhile), else an error wrapping
// storeerr.ErrNotReplicated when replicas did not confirm the change.
func (p Policy) Tx(ctx context.Context, rdb redis.UniversalClient, key string, fn func(tx *redis.Tx) error, watch ...string) error {
	return p.onMaster(ctx, rdb, key, func(node *redis.Client) (*redis.Cmd, error) {
		var wait *redis.Cmd
		err := node.Watch(ctx, func(tx *redis.Tx) error {
			if err := fn(tx); err != nil {
				return err
			}
			if p.Replicas > 0 {
				wait = tx.Do(ctx, "wait", p.Replicas, p.Timeout.Milliseconds())
			}
			return nil
		}, watch...)
		return wait, err
	})
}

// onMaster calls try with the master of key's slot until it is not
// refused (see Send), and checks the answer of the WAIT it sent, if any.
//
// The cluster client would route the commands itself, but a keyless WAIT
// could land on another node or connection, and would then confirm nothing.
// So changes pick the master themselves. A command the master refused
// without running it (MOVED, ASK, TRYAGAIN, CLUSTERDOWN, READONLY from a
// demoted master) or that never left (no connection) is sent again to the
// slot's master after the slot map is read anew; a command that may have
// reached the master (a connection lost later) is never sent twice.
func (p Policy) onMaster(ctx context.Context, rdb redis.UniversalClient, key string, try func(node *redis.Client) (wait *redis.Cmd, err error)) error {
	cluster, _ := rdb.(*redis.ClusterClient)
	for attempt := 0; ; attempt++ {
		node, ok := rdb.(*redis.Client)
		if cluster != nil {
			var err error
			if node, err = cluster.MasterForKey(ctx, key); err != nil {
				return err
			}
		} else if !ok {
			return fmt.Errorf("durable changes through a %T", rdb)
		}
		wait, first := try(node)
		if cluster != nil && storeerr.Transient(first) && !isReply(first) {
			// The node may be gone: the slot map is read anew (in the
			// background, at most every 200 ms), so that changes find the
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
		if n < int64(p.Replicas) {
			return fmt.Errorf("%w: %d of %d replicas within %v", storeerr.ErrNotReplicated, n, p.Replicas, p.Timeout)
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
