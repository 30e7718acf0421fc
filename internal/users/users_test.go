package users

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"claimdesk/internal/keys"
	"claimdesk/internal/tasks/taskstest"

	"golang.org/x/crypto/bcrypt"
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
	// CacheTTL, and not before.
	if err := there.Put(ctx, User{Name: "ann", Role: Operator, Queues: []string{"scans"}}, ""); err != nil {
		t.Fatal(err)
	}
	clk.advance(CacheTTL - time.Millisecond)
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

	// A token revoked elsewhere works until the cached answer is too old.
	if err := there.RevokeToken(ctx, tokenHash(token)[:tokenIDLen]); err != nil {
		t.Fatal(err)
	}
	if _, err := here.ByToken(ctx, token); err != nil {
		t.Fatalf("ByToken right after the token was revoked elsewhere: %v, want the cached bob", err)
	}
	clk.advance(CacheTTL)
	if _, err := here.ByToken(ctx, token); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ByToken of a revoked token after %v: %v, want ErrNotFound", CacheTTL, err)
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
	clk.advance(CacheTTL * 3 / 4)
	if got := queues(); !slices.Equal(got, []string{"mail"}) {
		t.Fatalf("ByToken 3/4 of a TTL on gave queues %v, want the cached [mail]", got)
	}
	eventually(t, "the renewed answer", func() bool { return slices.Equal(queues(), []string{"scans"}) })

	// A renewal that finds the token revoked forgets it at once.
	if err := there.RevokeToken(ctx, tokenHash(token)[:tokenIDLen]); err != nil {
		t.Fatal(err)
	}
	clk.advance(CacheTTL * 3 / 4)
	queues()
	eventually(t, "the revoked token to be refused", func() bool {
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
	for i := range maxCached + 10 {
		s.remember(tokenHash("cdt_token-number-"+strconv.Itoa(i)), User{Name: "x"}, time.Now(), 0)
	}
	if n := len(s.tokens); n > maxCached {
		t.Fatalf("the cache holds %d tokens, want at most %d", n, maxCached)
	}
}

func TestDisableAndEnable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	here, there, clk, token := annWithToken(t)
	var told []string
	there.Observe(func(_ context.Context, name string) { told = append(told, name) })
	ann, err := here.Get(ctx, "ann")
	if err != nil || ann.Disabled || !ann.SessionValid(ann.Epoch) {
		t.Fatalf("a new user: %+v, %v; want enabled, with a valid session", ann, err)
	}
	if _, err := here.ByToken(ctx, token); err != nil {
		t.Fatal(err)
	}

	if err := there.Disable(ctx, "ann"); err != nil {
		t.Fatal(err)
	}
	// The notice of the change makes every other process forget ann.
	here.Forget("ann")
	got, err := here.Get(ctx, "ann")
	if err != nil || !got.Disabled || got.SessionValid(ann.Epoch) || got.SessionValid(got.Epoch) {
		t.Fatalf("after Disable: %+v, %v; want disabled, no session valid", got, err)
	}
	if _, err := here.Login(ctx, "ann", "password-ann", "10.0.0.1"); !errors.Is(err, ErrDisabled) {
		t.Fatalf("Login of a disabled user: %v, want ErrDisabled", err)
	}
	if _, err := here.Login(ctx, "ann", "wrong-password", "10.0.0.1"); !errors.Is(err, ErrBadCredentials) {
		t.Fatalf("Login of a disabled user with a wrong password: %v, want ErrBadCredentials", err)
	}
	// The process that disabled refuses the token at once; another one
	// once its cached answer is too old.
	if _, err := there.ByToken(ctx, token); !errors.Is(err, ErrDisabled) {
		t.Fatalf("ByToken of a disabled user's token where it was disabled: %v, want ErrDisabled", err)
	}
	clk.advance(CacheTTL)
	if _, err := here.ByToken(ctx, token); !errors.Is(err, ErrDisabled) {
		t.Fatalf("ByToken of a disabled user's token after %v: %v, want ErrDisabled", CacheTTL, err)
	}

	if err := there.Enable(ctx, "ann"); err != nil {
		t.Fatal(err)
	}
	if _, err := there.ByToken(ctx, token); err != nil {
		t.Fatalf("ByToken after Enable: %v, want the token to work again", err)
	}
	got, err = here.Get(ctx, "ann")
	if err != nil || got.Disabled || got.SessionValid(ann.Epoch) {
		t.Fatalf("after Enable: %+v, %v; want enabled, and the session begun before Disable still over", got, err)
	}
	if u, err := here.Login(ctx, "ann", "password-ann", "10.0.0.1"); err != nil || !u.SessionValid(u.Epoch) {
		t.Fatalf("Login after Enable: %+v, %v", u, err)
	}
	if !slices.Equal(told, []string{"ann", "ann"}) {
		t.Errorf("observers were told %q, want ann twice", told)
	}
	if err := there.Disable(ctx, "nobody"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Disable of an unknown user: %v, want ErrNotFound", err)
	}
}

func TestNewPasswordEndsSessions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := New(taskstest.Redis(t).Client())
	var told []string
	s.Observe(func(_ context.Context, name string) { told = append(told, name) })
	put := func(queues []string, password string) User {
		t.Helper()
		if err := s.Put(ctx, User{Name: "ann", Role: Operator, Queues: queues}, password); err != nil {
			t.Fatal(err)
		}
		u, err := s.Get(ctx, "ann")
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	first := put([]string{"mail"}, "password-one")
	for _, tc := range []struct {
		name     string
		queues   []string
		password string
		ends     bool
	}{
		{"other queues", []string{"mail", "scans"}, "", false},
		{"the same password again", []string{"mail"}, "password-one", false},
		{"a new password", []string{"mail"}, "password-two", true},
	} {
		u := put(tc.queues, tc.password)
		if valid := u.SessionValid(first.Epoch); valid == tc.ends {
			t.Errorf("%s: a session begun before is valid: %v, want %v", tc.name, valid, !tc.ends)
		}
		if !slices.Equal(u.Queues, tc.queues) {
			t.Errorf("%s: queues %v, want %v", tc.name, u.Queues, tc.queues)
		}
	}
	if len(told) != 4 {
		t.Errorf("observers were told %q, want ann 4 times", told)
	}
}

func TestTokensListAndRevoke(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	here, there, clk, first := annWithToken(t)
	clk.advance(time.Minute)
	second, err := here.NewToken(ctx, "ann")
	if err != nil {
		t.Fatal(err)
	}
	made := clk.now()
	clk.advance(time.Minute)
	if _, err := here.ByToken(ctx, second); err != nil {
		t.Fatal(err)
	}
	used := clk.now()

	list, err := there.Tokens(ctx, "ann")
	if err != nil {
		t.Fatal(err)
	}
	id := func(token string) string { return tokenHash(token)[:tokenIDLen] }
	if len(list) != 2 || list[0].ID != id(first) || list[1].ID != id(second) {
		t.Fatalf("Tokens = %+v, want %s then %s", list, id(first), id(second))
	}
	if !list[0].LastUsed.IsZero() || list[1].Created.UnixMilli() != made.UnixMilli() || list[1].LastUsed.UnixMilli() != used.UnixMilli() {
		t.Errorf("Tokens = %+v, want the first never used, the second made at %v and used at %v", list, made, used)
	}

	if err := there.RevokeToken(ctx, id(second)); err != nil {
		t.Fatal(err)
	}
	if _, err := there.ByToken(ctx, second); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ByToken of a revoked token: %v, want ErrNotFound", err)
	}
	if _, err := there.ByToken(ctx, first); err != nil {
		t.Fatalf("ByToken of the token not revoked: %v", err)
	}
	if list, err := there.Tokens(ctx, "ann"); err != nil || len(list) != 1 || list[0].ID != id(first) {
		t.Fatalf("Tokens after a revoke = %+v, %v; want only %s", list, err, id(first))
	}
	// The revoked record goes by itself.
	if ttl := there.rdb.PTTL(ctx, keys.Token(id(second))).Val(); ttl <= 0 || ttl > revokedKeep {
		t.Errorf("a revoked token's record expires in %v, want within %v", ttl, revokedKeep)
	}
	for _, bad := range []string{id(second), "0123456789abcdef", "not-an-id", ""} {
		if err := there.RevokeToken(ctx, bad); !errors.Is(err, ErrTokenNotFound) {
			t.Errorf("RevokeToken(%q): %v, want ErrTokenNotFound", bad, err)
		}
	}
	if _, err := there.Tokens(ctx, "nobody"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Tokens of an unknown user: %v, want ErrNotFound", err)
	}
}

// TestTokensOfEarlierVersionsKeepWorking stores users and tokens as the
// version before disabling, token ids and the {people} hash tag did.
func TestTokensOfEarlierVersionsKeepWorking(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := taskstest.Redis(t).Client()
	hash, err := bcrypt.GenerateFromPassword([]byte("password-old"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.HSet(ctx, keys.OldUser("old"), "role", "operator", "queues", "mail", "password", string(hash)).Err(); err != nil {
		t.Fatal(err)
	}
	legacy := func(token string) {
		t.Helper()
		if err := rdb.Set(ctx, keys.APIToken(tokenHash(token)), "old", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	tokens := []string{"cdt_used-after-the-upgrade-0001", "cdt_listed-after-the-upgrade-02", "cdt_revoked-after-the-upgrade-3"}
	legacy(tokens[0])
	legacy(tokens[1])
	s := New(rdb)
	if users, tokens, err := s.Migrate(ctx); err != nil || users != 1 || tokens != 0 {
		t.Fatalf("Migrate moved %d users and %d tokens, %v; want 1 user", users, tokens, err)
	}
	u, err := s.Login(ctx, "old", "password-old", "10.0.0.1")
	if err != nil || u.Disabled || !u.SessionValid(0) {
		t.Fatalf("Login of a user of the earlier version: %+v, %v; want it to work, a session of epoch 0 valid", u, err)
	}

	// Used: it works, and moves to its record.
	if u, err := s.ByToken(ctx, tokens[0]); err != nil || u.Name != "old" {
		t.Fatalf("ByToken of a token of the earlier version: %+v, %v", u, err)
	}
	if n := rdb.Exists(ctx, keys.APIToken(tokenHash(tokens[0]))).Val(); n != 0 {
		t.Error("a used token of the earlier version is still kept the old way")
	}
	// Listed: the unused one too; when they were made is not known.
	list, err := s.Tokens(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	id := func(token string) string { return tokenHash(token)[:tokenIDLen] }
	var ids []string
	for _, tok := range list {
		ids = append(ids, tok.ID)
		if !tok.Created.IsZero() {
			t.Errorf("token %s of the earlier version has a creation time %v", tok.ID, tok.Created)
		}
	}
	want := []string{id(tokens[0]), id(tokens[1])}
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Fatalf("Tokens = %v, want %v", ids, want)
	}
	if n := rdb.Exists(ctx, keys.APIToken(tokenHash(tokens[1]))).Val(); n != 0 {
		t.Error("a listed token of the earlier version is still kept the old way")
	}
	// Revoked by an id that no list showed yet.
	legacy(tokens[2])
	if err := New(rdb).RevokeToken(ctx, id(tokens[2])); err != nil {
		t.Fatalf("RevokeToken of a token of the earlier version: %v", err)
	}
	if _, err := New(rdb).ByToken(ctx, tokens[2]); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ByToken of a revoked token of the earlier version: %v, want ErrNotFound", err)
	}
	if u, err := New(rdb).ByToken(ctx, tokens[1]); err != nil || u.Name != "old" {
		t.Fatalf("ByToken of a listed token of the earlier version: %+v, %v", u, err)
	}
}

// Get trusts what it found for CacheTTL, unless the user changed here, was
// Forgotten (another process said it changed it), or is Reloaded.
func TestGetCachesBriefly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	here, there, clk, _ := annWithToken(t)
	get := func(want ...string) {
		t.Helper()
		u, err := here.Get(ctx, "ann")
		if err != nil || u.Name != "ann" || !slices.Equal(u.Queues, want) {
			t.Fatalf("Get = %+v, %v; want ann with queues %v", u, err, want)
		}
	}
	get("mail")
	u, _ := here.Get(ctx, "ann")
	u.Queues[0] = "changed" // the caller's to keep
	get("mail")

	put := func(s *Store, queues ...string) {
		t.Helper()
		if err := s.Put(ctx, User{Name: "ann", Role: Operator, Queues: queues}, ""); err != nil {
			t.Fatal(err)
		}
	}
	put(there, "scans")
	clk.advance(CacheTTL - time.Millisecond)
	get("mail")
	clk.advance(time.Millisecond)
	get("scans")

	put(there, "mail")
	get("scans")
	here.Forget("ann")
	get("mail")

	put(there, "scans")
	if u, err := here.Reload(ctx, "ann"); err != nil || !slices.Equal(u.Queues, []string{"scans"}) {
		t.Fatalf("Reload = %+v, %v", u, err)
	}
	get("scans")

	put(here, "mail", "scans")
	get("mail", "scans")
	if err := there.Disable(ctx, "ann"); err != nil {
		t.Fatal(err)
	}
	here.Forget("ann")
	if u, err := here.Get(ctx, "ann"); err != nil || !u.Disabled {
		t.Fatalf("after Disable elsewhere and Forget: %+v, %v", u, err)
	}
	if _, err := here.Get(ctx, "nobody"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of nobody: %v", err)
	}
}

// Create refuses a taken name and changes nothing; List shows everyone.
func TestCreateAndList(t *testing.T) {
	server := taskstest.Redis(t)
	s := New(server.Client())
	ctx := context.Background()
	if err := s.Create(ctx, User{Name: "dora", Role: Operator, Queues: []string{"mail"}}, "first-password"); err != nil {
		t.Fatal(err)
	}
	err := s.Create(ctx, User{Name: "dora", Role: Supervisor}, "second-password")
	if !errors.Is(err, ErrExists) {
		t.Fatalf("Create of a taken name: %v, want ErrExists", err)
	}
	u, err := s.Reload(ctx, "dora")
	if err != nil || u.Role != Operator || !slices.Equal(u.Queues, []string{"mail"}) {
		t.Fatalf("after a refused create: %+v, %v", u, err)
	}
	if _, err := s.Login(ctx, "dora", "first-password", "127.0.0.1"); err != nil {
		t.Fatalf("the first password no longer works: %v", err)
	}
	if err := s.Create(ctx, User{Name: "eve", Role: Operator}, ""); !errors.Is(err, ErrInvalid) {
		t.Fatalf("Create of an operator without a password: %v, want ErrInvalid", err)
	}
	if err := s.Create(ctx, User{Name: "bots", Role: Producer}, ""); err != nil {
		t.Fatal(err)
	}
	if err := s.Disable(ctx, "bots"); err != nil {
		t.Fatal(err)
	}
	list, err := s.List(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "bots" || !list[0].Disabled || list[1].Name != "dora" || list[1].Disabled {
		t.Fatalf("List = %+v, %v", list, err)
	}
}
