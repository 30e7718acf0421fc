package durable_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"claimdesk/internal/durable"
	"claimdesk/internal/storeerr"
	"claimdesk/internal/tasks/taskstest"

	"github.com/redis/go-redis/v9"
)

// sent records the commands a client sends, by name, in order.
type sent struct {
	mu    sync.Mutex
	names []string
}

func (s *sent) add(c redis.Cmder) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.names = append(s.names, c.Name())
}

// waits counts the WAITs sent.
func (s *sent) waits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, name := range s.names {
		if name == "wait" {
			n++
		}
	}
	return n
}

// masterWithReplica starts a master and a replica that follows it, and a
// client of the master that records what it sends.
func masterWithReplica(t *testing.T) (master, replica *taskstest.Server, rdb *redis.Client, log *sent) {
	t.Helper()
	// A replica that follows again syncs at once, not after 5 s.
	master = taskstest.Redis(t)
	if err := master.Client().ConfigSet(context.Background(), "repl-diskless-sync-delay", "0").Err(); err != nil {
		t.Fatal(err)
	}
	replica = taskstest.Replica(t, master)
	rdb, log = master.Client(), &sent{}
	rdb.AddHook(taskstest.Hook(log.add))
	return master, replica, rdb, log
}

func TestSendWaitsForTheReplicasThePolicyAsks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, replica, rdb, log := masterWithReplica(t)
	onReplica := replica.Client()

	// No replicas asked: the commands run, and no WAIT is sent.
	var set *redis.StatusCmd
	var incr *redis.IntCmd
	err := durable.Policy{}.Send(ctx, rdb, "a", func(p redis.Pipeliner) {
		set = p.Set(ctx, "a", "1", 0)
		incr = p.Incr(ctx, "n")
	})
	if err != nil || set.Val() != "OK" || incr.Val() != 1 || log.waits() != 0 {
		t.Fatalf("without replicas: %v, answers %q and %d, %d WAITs; want OK, 1 and none", err, set.Val(), incr.Val(), log.waits())
	}

	// One asked: when Send answers, the replica has the change.
	one := durable.Policy{Replicas: 1, Timeout: 5 * time.Second}
	if err := one.Send(ctx, rdb, "b", func(p redis.Pipeliner) { p.Set(ctx, "b", "2", 0) }); err != nil {
		t.Fatalf("with the replica confirming: %v", err)
	}
	if got, err := onReplica.Get(ctx, "b").Result(); err != nil || got != "2" || log.waits() != 1 {
		t.Fatalf("the replica has b = %q (%v), %d WAITs sent; want 2 and one", got, err, log.waits())
	}

	// Two asked of one replica: the change stands on the master, and the
	// caller hears that it was not confirmed, once the timeout is over.
	two := durable.Policy{Replicas: 2, Timeout: 200 * time.Millisecond}
	start := time.Now()
	err = two.Send(ctx, rdb, "c", func(p redis.Pipeliner) { set = p.Set(ctx, "c", "3", 0) })
	if !errors.Is(err, storeerr.ErrNotReplicated) || !strings.Contains(err.Error(), "1 of 2 replicas") || set.Val() != "OK" {
		t.Fatalf("with one replica of two: %v, answer %q; want ErrNotReplicated, 1 of 2, and OK", err, set.Val())
	}
	if took := time.Since(start); took < two.Timeout {
		t.Errorf("gave up after %v, before the %v timeout", took, two.Timeout)
	}
	if got, err := rdb.Get(ctx, "c").Result(); err != nil || got != "3" {
		t.Errorf("the master has c = %q (%v), want 3", got, err)
	}
}

func TestSendAnswersTheFirstCommandsError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := taskstest.Redis(t).Client()
	if err := rdb.Set(ctx, "word", "not a number", 0).Err(); err != nil {
		t.Fatal(err)
	}
	var after *redis.StatusCmd
	err := durable.Policy{}.Send(ctx, rdb, "word", func(p redis.Pipeliner) {
		p.Incr(ctx, "word")
		after = p.Set(ctx, "after", "ran", 0)
	})
	if err == nil || !strings.Contains(err.Error(), "not an integer") {
		t.Fatalf("the first command failing: %v, want its error", err)
	}
	// Send is one round trip, not a transaction: the command after it ran,
	// and holds its answer.
	if after.Val() != "OK" {
		t.Errorf("the command after the failed one: %q, %v", after.Val(), after.Err())
	}
	// A later command's error is in its own answer, not Send's.
	var incr *redis.IntCmd
	err = durable.Policy{}.Send(ctx, rdb, "word", func(p redis.Pipeliner) {
		p.Set(ctx, "first", "ok", 0)
		incr = p.Incr(ctx, "word")
	})
	if err != nil || incr.Err() == nil {
		t.Errorf("a later command failing: Send %v, the command %v; want nil and its error", err, incr.Err())
	}
}

func TestTxIsAllOrNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := taskstest.Redis(t)
	rdb, other := srv.Client(), srv.Client()

	// A watched key that another client changes between the read and
	// EXEC: nothing of the change is made.
	err := durable.Policy{}.Tx(ctx, rdb, "k", func(tx *redis.Tx) error {
		if err := tx.Get(ctx, "k").Err(); !errors.Is(err, redis.Nil) {
			return err
		}
		if err := other.Set(ctx, "k", "theirs", 0).Err(); err != nil {
			return err
		}
		_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, "k", "mine", 0)
			p.Set(ctx, "k2", "mine", 0)
			return nil
		})
		return err
	}, "k")
	if !errors.Is(err, redis.TxFailedErr) {
		t.Fatalf("a watched key changed meanwhile: %v, want redis.TxFailedErr", err)
	}
	if got := rdb.Get(ctx, "k").Val(); got != "theirs" || rdb.Exists(ctx, "k2").Val() != 0 {
		t.Errorf("after the failed change k = %q and k2 exists %d times, want theirs and none", got, rdb.Exists(ctx, "k2").Val())
	}

	// fn's own error: nothing is sent after it.
	refused := errors.New("refused")
	if err := (durable.Policy{}).Tx(ctx, rdb, "k", func(*redis.Tx) error { return refused }, "k"); !errors.Is(err, refused) {
		t.Errorf("fn refusing: %v, want its error", err)
	}

	// Many read-and-add changes of one counter at once: each that is
	// answered is counted exactly once, none overwrites another.
	const workers, each = 8, 25
	var done sync.WaitGroup
	var mu sync.Mutex
	applied := 0
	for range workers {
		done.Add(1)
		go func() {
			defer done.Done()
			for range each {
				err := durable.Policy{}.Tx(ctx, rdb, "count", func(tx *redis.Tx) error {
					n, err := tx.Get(ctx, "count").Int()
					if err != nil && !errors.Is(err, redis.Nil) {
						return err
					}
					_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
						p.Set(ctx, "count", n+1, 0)
						return nil
					})
					return err
				}, "count")
				switch {
				case err == nil:
					mu.Lock()
					applied++
					mu.Unlock()
				case !errors.Is(err, redis.TxFailedErr):
					t.Error(err)
					return
				}
			}
		}()
	}
	done.Wait()
	if got, _ := rdb.Get(ctx, "count").Int(); got != applied || applied == 0 {
		t.Errorf("the counter is %d after %d changes answered", got, applied)
	}
}

func TestTxWaitsForTheReplicasThePolicyAsks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, replica, rdb, log := masterWithReplica(t)
	set := func(p durable.Policy, key string) error {
		return p.Tx(ctx, rdb, key, func(tx *redis.Tx) error {
			_, err := tx.TxPipelined(ctx, func(pl redis.Pipeliner) error {
				pl.Set(ctx, key, "v", 0)
				return nil
			})
			return err
		}, key)
	}
	if err := set(durable.Policy{}, "none"); err != nil || log.waits() != 0 {
		t.Fatalf("without replicas: %v, %d WAITs; want none", err, log.waits())
	}
	if err := set(durable.Policy{Replicas: 1, Timeout: 5 * time.Second}, "one"); err != nil {
		t.Fatalf("with the replica confirming: %v", err)
	}
	if got, err := replica.Client().Get(ctx, "one").Result(); err != nil || got != "v" || log.waits() != 1 {
		t.Fatalf("the replica has one = %q (%v), %d WAITs; want v and one WAIT", got, err, log.waits())
	}
	// The replica gone its own way: nothing confirms.
	taskstest.Detach(t, replica)
	err := set(durable.Policy{Replicas: 1, Timeout: 100 * time.Millisecond}, "lost")
	if !errors.Is(err, storeerr.ErrNotReplicated) || !strings.Contains(err.Error(), "0 of 1 replicas") {
		t.Errorf("with no replica following: %v, want ErrNotReplicated, 0 of 1", err)
	}
	if got := rdb.Get(ctx, "lost").Val(); got != "v" {
		t.Errorf("the master has lost = %q, want v: the change stands", got)
	}
}

func TestChangesThatCannotBeSent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// Nothing listens there.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	down := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer down.Close()
	err = durable.Policy{}.Send(ctx, down, "k", func(p redis.Pipeliner) { p.Set(ctx, "k", "v", 0) })
	var op *net.OpError
	if !errors.As(err, &op) || !storeerr.Transient(err) {
		t.Errorf("Redis not there: %v, want the dial's error, a passing trouble", err)
	}

	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"one": addr}})
	defer ring.Close()
	err = durable.Policy{}.Send(ctx, ring, "k", func(p redis.Pipeliner) { p.Set(ctx, "k", "v", 0) })
	if err == nil || !strings.Contains(err.Error(), "durable changes through a *redis.Ring") {
		t.Errorf("through a ring: %v, want a refusal", err)
	}
}

// TestOnACluster: each change goes to the master of its key's slot and
// waits there for that master's replica; a change sent with a slot map
// that a resharding made stale follows the slot to its new master.
func TestOnACluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cl, err := taskstest.StartCluster(taskstest.ClusterConfig{Masters: 2, Replicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	rdb := cl.Client()
	one := durable.Policy{Replicas: 1, Timeout: 5 * time.Second}

	// A key on each master: each is confirmed by that master's replica.
	keys := map[string]string{}
	for i := 0; len(keys) < 2; i++ {
		key := "k" + string(rune('a'+i))
		master, err := cl.MasterOf(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		keys[master.Addr()] = key
	}
	for _, key := range keys {
		if err := one.Send(ctx, rdb, key, func(p redis.Pipeliner) { p.Set(ctx, key, "v", 0) }); err != nil {
			t.Errorf("%s with its master's replica confirming: %v", key, err)
		}
		err := one.Tx(ctx, rdb, key, func(tx *redis.Tx) error {
			_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error { p.Append(ctx, key, "w"); return nil })
			return err
		}, key)
		if err != nil || rdb.Get(ctx, key).Val() != "vw" {
			t.Errorf("%s changed in a transaction: %v, now %q; want vw", key, err, rdb.Get(ctx, key).Val())
		}
	}
	two := durable.Policy{Replicas: 2, Timeout: 100 * time.Millisecond}
	for _, key := range keys {
		err := two.Send(ctx, rdb, key, func(p redis.Pipeliner) { p.Set(ctx, key, "x", 0) })
		if !errors.Is(err, storeerr.ErrNotReplicated) || !strings.Contains(err.Error(), "1 of 2 replicas") {
			t.Errorf("%s with one replica of two: %v, want ErrNotReplicated, 1 of 2", key, err)
		}
	}

	// The slot of an empty key moves to the other master behind the
	// client's back.
	const key = "moving"
	from, err := cl.MasterOf(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	var to *taskstest.Server
	for _, n := range cl.Nodes() {
		if n.Addr() != from.Addr() && n.Client().Do(ctx, "role").Val().([]any)[0] == "master" {
			to = n
		}
	}
	slot := rdb.ClusterKeySlot(ctx, key).Val()
	fromID, toID := from.Client().ClusterMyID(ctx).Val(), to.Client().ClusterMyID(ctx).Val()
	for _, step := range []struct {
		node *taskstest.Server
		args []any
	}{
		{to, []any{"cluster", "setslot", slot, "importing", fromID}},
		{from, []any{"cluster", "setslot", slot, "migrating", toID}},
		{to, []any{"cluster", "setslot", slot, "node", toID}},
		{from, []any{"cluster", "setslot", slot, "node", toID}},
	} {
		if err := step.node.Client().Do(ctx, step.args...).Err(); err != nil {
			t.Fatalf("%v: %v", step.args, err)
		}
	}
	var set *redis.StatusCmd
	err = durable.Policy{}.Send(ctx, rdb, key, func(p redis.Pipeliner) { set = p.Set(ctx, key, "moved", 0) })
	if err != nil || set.Val() != "OK" {
		t.Fatalf("a change after the slot moved: %v, %q", err, set.Val())
	}
	if got, err := to.Client().Get(ctx, key).Result(); err != nil || got != "moved" {
		t.Errorf("the slot's new master has %s = %q (%v), want moved", key, got, err)
	}
}

// While a slot moves, the master runs a command on a key it still has and
// refuses one on a key it lacks (ASK). Sent together, the one that ran is
// never sent again, and the refused one keeps its refusal.
func TestSendNeverRepeatsACommandThatRan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cl, err := taskstest.StartCluster(taskstest.ClusterConfig{Masters: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	rdb := cl.Client()
	const present, missing = "{moving}present", "{moving}missing"
	if err := rdb.Set(ctx, present, 0, 0).Err(); err != nil {
		t.Fatal(err)
	}
	from, err := cl.MasterOf(ctx, present)
	if err != nil {
		t.Fatal(err)
	}
	var to *taskstest.Server
	for _, n := range cl.Nodes() {
		if n.Addr() != from.Addr() {
			to = n
		}
	}
	slot := rdb.ClusterKeySlot(ctx, present).Val()
	fromID, toID := from.Client().ClusterMyID(ctx).Val(), to.Client().ClusterMyID(ctx).Val()
	if err := to.Client().Do(ctx, "cluster", "setslot", slot, "importing", fromID).Err(); err != nil {
		t.Fatal(err)
	}
	if err := from.Client().Do(ctx, "cluster", "setslot", slot, "migrating", toID).Err(); err != nil {
		t.Fatal(err)
	}
	for _, order := range [][]string{{missing, present}, {present, missing}} {
		cmds := map[string]*redis.IntCmd{}
		err := durable.Policy{}.Send(ctx, rdb, present, func(p redis.Pipeliner) {
			for _, k := range order {
				cmds[k] = p.Incr(ctx, k)
			}
		})
		if _, ask := redis.IsAskError(cmds[missing].Err()); !ask {
			t.Errorf("%v: the key the master lacks answered %v, want ASK", order, cmds[missing].Err())
		}
		if cmds[present].Err() != nil {
			t.Errorf("%v: the key the master has answered %v", order, cmds[present].Err())
		}
		if order[0] == present && err != nil {
			t.Errorf("%v: Send %v, want nil (the first command ran)", order, err)
		}
	}
	if got, err := from.Client().Get(ctx, present).Int(); err != nil || got != 2 {
		t.Errorf("%s = %d (%v) after two sends, want 2: a command that ran went again", present, got, err)
	}
}
