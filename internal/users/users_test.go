package users

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"claimdesk/internal/tasks/taskstest"
)

// clock is a Store's clock that moves only when told.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// waitTimeout bounds every wait for a background lookup.
const waitTimeout = 10 * time.Second

// eventually polls cond until it holds, failing the test after waitTimeout.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", waitTimeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// annWithToken makes operator ann of queue mail with an API token, and
// returns this process's store, with its own clock, and another process's
// store over the same Redis, which changes users behind its back.
func annWithToken(t *testing.T) (here, there *Store, clk *clock, token string) {
	t.Helper()
	server := taskstest.Redis(t)
	here, there = New(server.Client()), New(server.Client())
	clk = &clock{t: time.Now()}
	here.now = clk.now
	ctx := context.Background()
	if err := here.Put(ctx, User{Name: "ann", Role: Operator, Queues: []string{"mail"}}, "password-ann"); err != nil {
		t.Fatal(err)
	}
	token, err := here.NewToken(ctx, "ann")
	if err != nil {
		t.Fatal(err)
	}
	return here, there, clk, token
}

func TestByTokenCachesBriefly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	here, there, clk, token := annWithToken(t)
	byToken := func(want ...string) {
		t.Helper()
		u, err := here.ByToken(ctx, token)
		if err != nil || u.Name != "ann" || !slices.Equal(u.Queues, want) {
			t.Fatalf("ByToken = %+v, %v; want ann with queues %v", u, err, want)
		}
	}
	byToken("mail")

	// The caller may keep and change what it got.
	u, _ := here.ByToken(ctx, token)
	u.Queues[0] = "changed"
	byToken("mail")

	// A change made elsewhere applies once the cached answer is older than
	// TokenCacheTTL, and not before.
	if err := there.Put(ctx, User{Name: "ann", Role: Operator, Queues: []string{"scans"}}, ""); err != nil {
		t.Fatal(err)
	}
	clk.advance(TokenCacheTTL - time.Millisecond)
	byToken("mail")
	clk.advance(time.Millisecond)
	byToken("scans")

	// A change made here applies at once.
	if err := here.Put(ctx, User{Name: "ann", Role: Operator, Queues: []string{"mail", "scans"}}, ""); err != nil {
		t.Fatal(err)
	}
	byToken("mail", "scans")

	// A token given to someone else here acts for them at once.
	if err := here.Put(ctx, User{Name: "bob", Role: Producer}, ""); err != nil {
		t.Fatal(err)
	}
	if err := here.PutToken(ctx, "bob", token); err != nil {
		t.Fatal(err)
	}
	if u, err := here.ByToken(ctx, token); err != nil || u.Name != "bob" {
		t.Fatalf("ByToken after the token moved to bob = %+v, %v", u, err)
	}

	// A removed token works until the cached answer is too old.
	if err := there.rdb.Del(ctx, tokenKey(token)).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := here.ByToken(ctx, token); err != nil {
		t.Fatalf("ByToken right after the token was removed elsewhere: %v, want the cached bob", err)
	}
	clk.advance(TokenCacheTTL)
	if _, err := here.ByToken(ctx, token); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ByToken of a removed token after %v: %v, want ErrNotFound", TokenCacheTTL, err)
	}
}

func TestByTokenRenewsInTheBackground(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	here, there, clk, token := annWithToken(t)
	queues := func() []string {
		u, err := here.ByToken(ctx, token)
		if err != nil {
			return []string{err.Error()}
		}
		return u.Queues
	}
	if got := queues(); !slices.Equal(got, []string{"mail"}) {
		t.Fatalf("ByToken gave queues %v, want [mail]", got)
	}
	if err := there.Put(ctx, User{Name: "ann", Role: Operator, Queues: []string{"scans"}}, ""); err != nil {
		t.Fatal(err)
	}
	// Three quarters of its life on, the cached answer still serves, and
	// is renewed meanwhile: the change applies before the old answer
	// expires.
	clk.advance(TokenCacheTTL * 3 / 4)
	if got := queues(); !slices.Equal(got, []string{"mail"}) {
		t.Fatalf("ByToken 3/4 of a TTL on gave queues %v, want the cached [mail]", got)
	}
	eventually(t, "the renewed answer", func() bool { return slices.Equal(queues(), []string{"scans"}) })

	// A renewal that finds the token gone forgets it at once.
	if err := there.rdb.Del(ctx, tokenKey(token)).Err(); err != nil {
		t.Fatal(err)
	}
	clk.advance(TokenCacheTTL * 3 / 4)
	queues()
	eventually(t, "the removed token to be refused", func() bool {
		_, err := here.ByToken(ctx, token)
		return errors.Is(err, ErrNotFound)
	})
}

func TestByTokenDoesNotCacheUnknownTokens(t *testing.T) {
	t.Parallel()
	server := taskstest.Redis(t)
	ctx := context.Background()
	here, there := New(server.Client()), New(server.Client())
	const token = "cdt_made-elsewhere-a-moment-later"
	if _, err := here.ByToken(ctx, token); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ByToken of an unknown token: %v, want ErrNotFound", err)
	}
	if err := there.Put(ctx, User{Name: "bot", Role: Producer}, ""); err != nil {
		t.Fatal(err)
	}
	if err := there.PutToken(ctx, "bot", token); err != nil {
		t.Fatal(err)
	}
	if u, err := here.ByToken(ctx, token); err != nil || u.Name != "bot" {
		t.Fatalf("ByToken of a token made elsewhere = %+v, %v; want bot at once", u, err)
	}
}

func TestTokenCacheIsBounded(t *testing.T) {
	t.Parallel()
	s := &Store{tokens: map[string]cachedUser{}, now: time.Now}
	for i := range maxCachedTokens + 10 {
		s.remember(tokenKey("cdt_token-number-"+strconv.Itoa(i)), User{Name: "x"}, time.Now(), 0)
	}
	if n := len(s.tokens); n > maxCachedTokens {
		t.Fatalf("the cache holds %d tokens, want at most %d", n, maxCachedTokens)
	}
}
