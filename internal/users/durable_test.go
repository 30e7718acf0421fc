package users

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"claimdesk/internal/keys"
	"claimdesk/internal/storeerr"
	"claimdesk/internal/tasks/taskstest"

	"github.com/redis/go-redis/v9"
)

// trips is a go-redis hook that records the names of the commands of
// every round trip a client makes, and, once crash is set, fails every
// round trip after the first that ran an EXEC, as a process that died
// there would never send them.
type trips struct {
	mu      sync.Mutex
	crash   bool
	crashed bool
	sent    [][]string
}

var errCrashed = errors.New("the process died here")

func (r *trips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *trips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := r.trip(cmd); err != nil {
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}

func (r *trips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if err := r.trip(cmds...); err != nil {
			for _, c := range cmds {
				c.SetErr(err)
			}
			return err
		}
		return next(ctx, cmds)
	}
}

// trip records one round trip, or refuses it after the crash.
func (r *trips) trip(cmds ...redis.Cmder) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.crashed {
		return errCrashed
	}
	names := make([]string, len(cmds))
	for i, c := range cmds {
		names[i] = c.Name()
	}
	r.sent = append(r.sent, names)
	r.crashed = r.crash && slices.Contains(names, "exec")
	return nil
}

// take returns the round trips recorded since the last take.
func (r *trips) take() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	sent := r.sent
	r.sent = nil
	return sent
}

// writes are the commands of this package that change data.
var writes = []string{"hset", "hsetnx", "hdel", "hincrby", "sadd", "srem", "del", "pexpire", "persist", "set", "incr", "decr", "expire"}

// TestEveryChangeIsOneTransaction: each change of people data sends all of
// its writes in one MULTI/EXEC, which WAIT follows, so that no crash or
// lost connection can apply part of it, and replicas confirm all of it.
func TestEveryChangeIsOneTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := taskstest.Redis(t).Client()
	rec := &trips{}
	rdb.AddHook(rec)
	// No replica: every change waits its 10 ms for none, and says so.
	s := New(rdb, WithMinReplicas(1, 10*time.Millisecond))
	const token = "cdt_a-token-for-the-transaction-test"
	for _, c := range []struct {
		name   string
		change func() error
	}{
		{"create", func() error {
			return s.Create(ctx, User{Name: "ann", Role: Operator, Queues: []string{"mail"}}, "password-ann")
		}},
		{"put grants", func() error {
			return s.Put(ctx, User{Name: "ann", Role: Operator, Queues: []string{"mail", "post"}}, "")
		}},
		{"put role", func() error { return s.Put(ctx, User{Name: "ann", Role: Supervisor}, "") }},
		{"put password", func() error { return s.Put(ctx, User{Name: "ann", Role: Supervisor}, "password-new") }},
		{"put a new user", func() error { return s.Put(ctx, User{Name: "bots", Role: Producer}, "") }},
		{"disable", func() error { return s.Disable(ctx, "ann") }},
		{"enable", func() error { return s.Enable(ctx, "ann") }},
		{"away", func() error { return s.SetAway(ctx, "ann", true) }},
		{"back", func() error { return s.SetAway(ctx, "ann", false) }},
		{"unlock", func() error { return s.Unlock(ctx, "ann") }},
		{"token", func() error { return s.PutToken(ctx, "ann", token) }},
		{"token moved", func() error { return s.PutToken(ctx, "bots", token) }},
		{"new token", func() error { _, err := s.NewToken(ctx, "ann"); return err }},
		{"revoke", func() error { return s.RevokeToken(ctx, TokenID(token)) }},
	} {
		rec.take()
		err := c.change()
		var writing [][]string
		sent := rec.take()
		for i, trip := range sent {
			if slices.ContainsFunc(trip, func(cmd string) bool { return slices.Contains(writes, cmd) }) {
				writing = append(writing, trip)
				if trip[0] != "multi" || trip[len(trip)-1] != "exec" || i+1 == len(sent) || !slices.Equal(sent[i+1], []string{"wait"}) {
					t.Errorf("%s wrote %v outside of a MULTI/EXEC followed by WAIT (round trips %v)", c.name, trip, sent)
				}
			}
		}
		if len(writing) != 1 {
			t.Errorf("%s wrote in %d round trips, want 1: %v", c.name, len(writing), sent)
		}
		if !errors.Is(err, storeerr.ErrNotReplicated) {
			t.Errorf("%s without the replica it waits for: %v, want ErrNotReplicated", c.name, err)
		}
	}
	// The transactions held every write: the index lists both users, and
	// the token moved from one user's list to the other's.
	list, err := s.List(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "ann" || list[1].Name != "bots" {
		t.Fatalf("List = %+v, %v; want ann and bots", list, err)
	}
	if ids := rdb.SMembers(ctx, keys.UserTokens("ann")).Val(); len(ids) != 1 || ids[0] == TokenID(token) {
		t.Errorf("ann's tokens are %v, want only the new one", ids)
	}
	if ids := rdb.SMembers(ctx, keys.UserTokens("bots")).Val(); len(ids) != 0 {
		t.Errorf("bots's tokens are %v, want none: the token was revoked", ids)
	}
}

// TestACrashAfterACreateLeavesNoUserUnlisted: a process that dies right
// after the transaction of a Create leaves either no user or one that
// List shows.
func TestACrashAfterACreateLeavesNoUserUnlisted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	server := taskstest.Redis(t)
	rdb := server.Client()
	rdb.AddHook(&trips{crash: true})
	err := New(rdb).Create(ctx, User{Name: "ann", Role: Operator, Queues: []string{"mail"}}, "password-ann")
	if err != nil && !errors.Is(err, errCrashed) {
		t.Fatal(err)
	}
	after := New(server.Client())
	if _, err := after.Reload(ctx, "ann"); err != nil {
		t.Fatalf("the user whose transaction ran is missing: %v", err)
	}
	list, err := after.List(ctx)
	if err != nil || len(list) != 1 || list[0].Name != "ann" {
		t.Fatalf("List = %+v, %v; want ann, made before the crash", list, err)
	}
}

// TestChangesWaitForReplicas: with a replica required, every change of
// people data is on the replica when it is answered; one the replica did
// not confirm is answered ErrNotReplicated, as the engine's are; and a
// disabling and a revoked token answered as done survive the master's
// death, on the replica that takes its place.
func TestChangesWaitForReplicas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A replica that follows again syncs at once, not after 5 s.
	master, err := taskstest.NewServer("--repl-diskless-sync-delay", "0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { master.Close() })
	replica := taskstest.Replica(t, master)
	const timeout = time.Second
	s := New(master.Client(), WithMinReplicas(1, timeout))
	onReplica := New(replica.Client())
	onMaster := New(master.Client())

	// Confirmed: each answer is on the replica already.
	if err := s.Create(ctx, User{Name: "ann", Role: Operator, Queues: []string{"mail"}}, "password-ann"); err != nil {
		t.Fatal(err)
	}
	if list, err := onReplica.List(ctx); err != nil || len(list) != 1 || list[0].Name != "ann" {
		t.Fatalf("the replica lists %+v, %v; want ann", list, err)
	}
	if err := s.Put(ctx, User{Name: "ann", Role: Operator, Queues: []string{"mail", "post"}}, "password-new"); err != nil {
		t.Fatal(err)
	}
	if u, err := onReplica.Reload(ctx, "ann"); err != nil || !slices.Equal(u.Queues, []string{"mail", "post"}) || u.Epoch != 2 {
		t.Fatalf("the replica has %+v, %v; want ann granted mail and post, in epoch 2", u, err)
	}
	revoked, err := s.NewToken(ctx, "ann")
	if err != nil {
		t.Fatal(err)
	}
	kept, err := s.NewToken(ctx, "ann")
	if err != nil {
		t.Fatal(err)
	}
	if ids := replica.Client().SMembers(ctx, keys.UserTokens("ann")).Val(); len(ids) != 2 {
		t.Fatalf("the replica lists ann's tokens %v, want both", ids)
	}
	if err := s.RevokeToken(ctx, TokenID(revoked)); err != nil {
		t.Fatal(err)
	}
	if rec := replica.Client().HGetAll(ctx, keys.Token(TokenID(revoked))).Val(); rec["revoked"] == "" {
		t.Fatalf("the replica has the revoked token as %v, not revoked", rec)
	}
	if err := s.Disable(ctx, "ann"); err != nil {
		t.Fatal(err)
	}
	if u, err := onReplica.Reload(ctx, "ann"); err != nil || !u.Disabled {
		t.Fatalf("the replica has %+v, %v; want ann disabled", u, err)
	}

	// Unconfirmed: each change says so, after the timeout; it stands on
	// the master, and the replica, promoted now, lacks it.
	unconfirmed := []struct {
		name    string
		change  func() error
		applied func(s *Store) bool
	}{
		{"create", func() error { return s.Create(ctx, User{Name: "bo", Role: Producer}, "") },
			func(s *Store) bool { _, err := s.Reload(ctx, "bo"); return err == nil }},
		{"grants", func() error { return s.Put(ctx, User{Name: "ann", Role: Operator, Queues: []string{"mail"}}, "") },
			func(s *Store) bool { u, _ := s.Reload(ctx, "ann"); return slices.Equal(u.Queues, []string{"mail"}) }},
		{"enable", func() error { return s.Enable(ctx, "ann") },
			func(s *Store) bool { u, _ := s.Reload(ctx, "ann"); return !u.Disabled }},
		{"revoke", func() error { return s.RevokeToken(ctx, TokenID(kept)) },
			func(s *Store) bool { ts, _ := s.Tokens(ctx, "ann"); return len(ts) == 0 }},
	}
	for _, c := range unconfirmed {
		taskstest.Detach(t, replica)
		start := time.Now()
		err := c.change()
		if !errors.Is(err, storeerr.ErrNotReplicated) {
			t.Fatalf("%s without a replica: %v, want ErrNotReplicated", c.name, err)
		}
		if took := time.Since(start); took < timeout {
			t.Errorf("%s gave up after %v, before the %v timeout", c.name, took, timeout)
		}
		if !c.applied(onMaster) {
			t.Errorf("the master lacks the unconfirmed %s", c.name)
		}
		if c.applied(onReplica) {
			t.Errorf("the replica has the unconfirmed %s: the test proves nothing", c.name)
		}
		taskstest.Follow(t, master, replica)
	}
	if err := s.Disable(ctx, "ann"); err != nil {
		t.Fatal(err)
	}

	// The master dies; its replica takes over, with what was answered.
	master.Kill()
	taskstest.Detach(t, replica)
	after := New(replica.Client())
	if _, err := after.Login(ctx, "ann", "password-new", "10.0.0.1"); !errors.Is(err, ErrDisabled) {
		t.Errorf("Login after the failover: %v, want ErrDisabled", err)
	}
	for _, token := range []string{revoked, kept} {
		if _, err := after.ByToken(ctx, token); !errors.Is(err, ErrNotFound) {
			t.Errorf("ByToken of a revoked token after the failover: %v, want ErrNotFound", err)
		}
	}
	if err := after.Enable(ctx, "ann"); err != nil {
		t.Fatal(err)
	}
	if _, err := after.ByToken(ctx, revoked); !errors.Is(err, ErrNotFound) {
		t.Errorf("ByToken of a revoked token of a user enabled again: %v, want ErrNotFound", err)
	}
}

// TestMigrateMovesPeopleData: users and tokens kept as versions before the
// {people} hash tag kept them, one user outside the index as a crash of
// those versions could leave, are moved, readable as before, and the old
// keys go; a second Migrate moves nothing and keeps what changed since.
func TestMigrateMovesPeopleData(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := taskstest.Redis(t).Client()
	here := New(rdb)
	if err := here.Create(ctx, User{Name: "ann", Role: Operator, Queues: []string{"mail"}}, "password-ann"); err != nil {
		t.Fatal(err)
	}
	token, err := here.NewToken(ctx, "ann")
	if err != nil {
		t.Fatal(err)
	}
	revoked, err := here.NewToken(ctx, "ann")
	if err != nil {
		t.Fatal(err)
	}
	if err := here.RevokeToken(ctx, TokenID(revoked)); err != nil {
		t.Fatal(err)
	}
	// Move every people key back to where earlier versions kept it, and
	// make a user those versions failed to index.
	old := func(key string) string {
		for _, m := range []struct{ now, then string }{
			{keys.User(""), keys.OldUser("")}, {keys.Token(""), keys.OldToken("")},
			{keys.UserTokens(""), keys.OldUserTokens("")}, {keys.Users, keys.OldUsers},
		} {
			if rest, ok := strings.CutPrefix(key, m.now); ok {
				return m.then + rest
			}
		}
		t.Fatalf("%s is no people key", key)
		return ""
	}
	for _, key := range rdb.Keys(ctx, "cd:{people}:*").Val() {
		if err := rdb.Rename(ctx, key, old(key)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := rdb.HSet(ctx, keys.OldUser("cy"), "role", "producer").Err(); err != nil {
		t.Fatal(err)
	}

	s := New(rdb)
	if users, tokens, err := s.Migrate(ctx); err != nil || users != 2 || tokens != 2 {
		t.Fatalf("Migrate moved %d users and %d tokens, %v; want 2 and 2", users, tokens, err)
	}
	if left := rdb.Keys(ctx, "cd:*").Val(); slices.ContainsFunc(left, func(k string) bool { return !strings.HasPrefix(k, "cd:{people}:") && !strings.HasPrefix(k, "cd:login") }) {
		t.Errorf("keys left after Migrate: %v", left)
	}
	list, err := s.List(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "ann" || list[1].Name != "cy" {
		t.Fatalf("List = %+v, %v; want ann and cy", list, err)
	}
	if _, err := s.Login(ctx, "ann", "password-ann", "10.0.0.1"); err != nil {
		t.Errorf("Login after Migrate: %v", err)
	}
	if u, err := s.ByToken(ctx, token); err != nil || u.Name != "ann" {
		t.Errorf("ByToken after Migrate: %+v, %v", u, err)
	}
	if _, err := s.ByToken(ctx, revoked); !errors.Is(err, ErrNotFound) {
		t.Errorf("ByToken of a revoked token after Migrate: %v, want ErrNotFound", err)
	}
	if ttl := rdb.PTTL(ctx, keys.Token(TokenID(revoked))).Val(); ttl <= 0 || ttl > revokedKeep {
		t.Errorf("a revoked token's record expires in %v after Migrate, want within %v", ttl, revokedKeep)
	}
	if ts, err := s.Tokens(ctx, "ann"); err != nil || len(ts) != 1 || ts[0].ID != TokenID(token) {
		t.Errorf("Tokens after Migrate = %+v, %v; want only %s", ts, err, TokenID(token))
	}

	// Again, after a change: nothing to move, and the change stays.
	if err := s.Disable(ctx, "ann"); err != nil {
		t.Fatal(err)
	}
	if users, tokens, err := s.Migrate(ctx); err != nil || users != 0 || tokens != 0 {
		t.Fatalf("Migrate again moved %d users and %d tokens, %v; want none", users, tokens, err)
	}
	if u, err := New(rdb).Reload(ctx, "ann"); err != nil || !u.Disabled {
		t.Fatalf("after Migrate again: %+v, %v; want ann disabled", u, err)
	}
}

// TestChangesOnACluster: every change's keys share one slot, so each
// change is one transaction on a Redis Cluster too (no CROSSSLOT).
func TestChangesOnACluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := New(taskstest.RedisCluster(t, 3).Client())
	if err := s.Create(ctx, User{Name: "ann", Role: Operator, Queues: []string{"mail"}}, "password-ann"); err != nil {
		t.Fatal(err)
	}
	token, err := s.NewToken(ctx, "ann")
	if err != nil {
		t.Fatal(err)
	}
	for name, change := range map[string]func() error{
		"disable": func() error { return s.Disable(ctx, "ann") },
		"away":    func() error { return s.SetAway(ctx, "ann", true) },
		"unlock":  func() error { return s.Unlock(ctx, "ann") },
		"revoke":  func() error { return s.RevokeToken(ctx, TokenID(token)) },
	} {
		if err := change(); err != nil {
			t.Errorf("%s on a cluster: %v", name, err)
		}
	}
	if u, err := s.Reload(ctx, "ann"); err != nil || !u.Disabled || !u.Away {
		t.Errorf("ann on a cluster: %+v, %v; want disabled and away", u, err)
	}
	if _, err := s.ByToken(ctx, token); !errors.Is(err, ErrNotFound) {
		t.Errorf("ByToken of a revoked token on a cluster: %v, want ErrNotFound", err)
	}
	if users, tokens, err := s.Migrate(ctx); err != nil || users+tokens != 0 {
		t.Errorf("Migrate on a cluster moved %d users and %d tokens, %v; want none", users, tokens, err)
	}
}
