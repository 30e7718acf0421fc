package users

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"claimdesk/internal/keys"
	"claimdesk/internal/tasks/taskstest"

	"github.com/redis/go-redis/v9"
	"golang.org/x/crypto/bcrypt"
)

// loginOutcomes tries n logins at once and counts the wrong-credential
// answers (the guesses that reached bcrypt) and the throttled ones.
func loginOutcomes(t *testing.T, s *Store, n int, name func(i int) string, client string) (wrong, throttledN int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { _, errs[i] = s.Login(context.Background(), name(i), "not-the-password", client) })
	}
	wg.Wait()
	for _, err := range errs {
		switch {
		case errors.Is(err, ErrBadCredentials):
			wrong++
		case errors.Is(err, ErrThrottled):
			throttledN++
		default:
			t.Fatalf("a guess answered %v", err)
		}
	}
	return wrong, throttledN
}

// Concurrent guesses at one name from one address are counted before any
// is checked: no more reach bcrypt than the limit allows.
func TestLoginCountsConcurrentGuesses(t *testing.T) {
	t.Parallel()
	s := New(taskstest.Redis(t).Client())
	if err := s.Put(context.Background(), User{Name: "ann", Role: Operator}, "password-ann"); err != nil {
		t.Fatal(err)
	}
	// At most maxFailures per address (and fewer still, as the account's
	// own limit closes in).
	wrong, refused := loginOutcomes(t, s, 30, func(int) string { return "ann" }, "198.51.100.1")
	if wrong > maxFailures || wrong+refused != 30 {
		t.Errorf("30 concurrent guesses at one name: %d checked, %d throttled; want at most %d checked", wrong, refused, maxFailures)
	}
}

// A floor of 2,000 people behind one NAT address logs in at once, each
// with their own name: none is throttled, and neither are the people who
// mistype once. Then the address's failures meet their cap.
func TestLoginLetsAFloorInFromOneAddress(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := taskstest.Redis(t).Client()
	s := New(r)
	// The people are stored with the cheapest bcrypt cost, so that the
	// test times the throttle, not bcrypt.
	hash, err := bcrypt.GenerateFromPassword([]byte("password-floor"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	const floor = 2000
	pipe := r.Pipeline()
	for i := range floor {
		pipe.HSet(ctx, keys.User(fmt.Sprint("person-", i)), "role", "operator", "password", string(hash))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	const client = "203.0.113.9"
	errs := make([]error, floor)
	var wg sync.WaitGroup
	for i := range floor {
		wg.Go(func() {
			name := fmt.Sprint("person-", i)
			if i%10 == 0 { // one in ten mistypes first
				if _, err := s.Login(ctx, name, "password-typo", client); !errors.Is(err, ErrBadCredentials) {
					errs[i] = fmt.Errorf("the typo: %w", err)
					return
				}
			}
			_, errs[i] = s.Login(ctx, name, "password-floor", client)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("person-%d of %d logging in at once from one address: %v", i, floor, err)
		}
	}
	// The address has failed floor/10 times; the rest of its cap of
	// failures in the window, then it is throttled, even with a right
	// password.
	for i := floor / 10; i < maxClientFailures; i++ {
		if _, err := s.Login(ctx, "person-0", strings.Repeat("p", MaxPasswordLen+1), client); !errors.Is(err, ErrBadCredentials) {
			t.Fatalf("failure %d from the address: %v", i+1, err)
		}
	}
	if _, err := s.Login(ctx, "person-1", "password-floor", client); !errors.Is(err, ErrThrottled) {
		t.Fatalf("a login after %d failures from one address: %v, want ErrThrottled", maxClientFailures, err)
	}
}

// An account that keeps failing, from whatever addresses, takes ever fewer
// tries; a supervisor's Unlock or a success ends that. Standalone and on a
// cluster, where the throttle's keys live in different slots.
func TestLoginDelaysAnAccountAcrossAddresses(t *testing.T) {
	t.Parallel()
	for name, rdb := range map[string]func(t *testing.T) redis.UniversalClient{
		"standalone": func(t *testing.T) redis.UniversalClient { return taskstest.Redis(t).Client() },
		"cluster":    func(t *testing.T) redis.UniversalClient { return taskstest.RedisCluster(t, 3).Client() },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := rdb(t)
			s := New(r)
			ctx := context.Background()
			if err := s.Put(ctx, User{Name: "ann", Role: Operator}, "password-ann"); err != nil {
				t.Fatal(err)
			}
			client := 0
			login := func(password string) error {
				client++ // each try from another address
				_, err := s.Login(ctx, "Ann ", password, fmt.Sprint("203.0.113.", client))
				return err
			}
			for i := range accountFreeFailures + 1 {
				if err := login("wrong-guess"); !errors.Is(err, ErrBadCredentials) {
					t.Fatalf("failure %d: %v, want ErrBadCredentials", i+1, err)
				}
			}
			// Now the account waits a second between tries: even the right
			// password is refused, and the answer says for how long.
			err := login("password-ann")
			var te *ThrottledError
			if !errors.As(err, &te) || te.RetryAfter < time.Second || te.RetryAfter > accountDelay(accountFreeFailures) {
				t.Fatalf("login during the account's delay: %v, want ErrThrottled for at most %v", err, accountDelay(accountFreeFailures))
			}
			// The failures are counted under a hash of the name, and each
			// further failure doubles the wait.
			account := nameHash("ann")
			if n, err := r.Get(ctx, keys.LoginFailures(account)).Int(); err != nil || n != accountFreeFailures+1 {
				t.Fatalf("failures counted: %d, %v; want %d (the throttled try is none)", n, err, accountFreeFailures+1)
			}
			r.Del(ctx, keys.LoginGate(account))
			if err := login("wrong-guess"); !errors.Is(err, ErrBadCredentials) {
				t.Fatalf("a try once the delay passed: %v", err)
			}
			if wait := r.PTTL(ctx, keys.LoginGate(account)).Val(); wait <= time.Second || wait > 2*time.Second {
				t.Fatalf("the delay after %d failures is %v, want 2s", accountFreeFailures+1, wait)
			}

			// A supervisor lifts it.
			if err := s.Unlock(ctx, "ann"); err != nil {
				t.Fatal(err)
			}
			if err := s.Unlock(ctx, "nobody"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Unlock of an unknown user: %v", err)
			}
			if _, err := s.Login(ctx, "ann", "password-ann", "203.0.113.200"); err != nil {
				t.Fatalf("login after Unlock: %v", err)
			}
			// A success starts the count afresh.
			for range accountFreeFailures {
				if err := login("wrong-guess"); !errors.Is(err, ErrBadCredentials) {
					t.Fatalf("a failure after a success: %v", err)
				}
			}
			if _, err := s.Login(ctx, "ann", "password-ann", "203.0.113.201"); err != nil {
				t.Fatalf("login within the free failures: %v", err)
			}
			for _, k := range []string{keys.LoginFailures(account), keys.LoginGate(account)} {
				if n, err := r.Exists(ctx, k).Result(); err != nil || n != 0 {
					t.Fatalf("%s after a success: %d, %v; want it gone", k, n, err)
				}
			}
		})
	}
}

func TestAccountDelayGrowsToItsCap(t *testing.T) {
	for failures, want := range map[int64]time.Duration{
		accountFreeFailures: time.Second, accountFreeFailures + 1: 2 * time.Second,
		accountFreeFailures + 8: 256 * time.Second, accountFreeFailures + 9: maxAccountDelay,
		accountFreeFailures + 70: maxAccountDelay, 1 << 40: maxAccountDelay,
	} {
		if got := accountDelay(failures); got != want {
			t.Errorf("accountDelay(%d) = %v, want %v", failures, got, want)
		}
	}
}

// What a stranger types as a name never becomes a key: an over-long name
// or password is a failed login counted against the address alone, and
// other names appear only hashed.
func TestLoginStoresNoNames(t *testing.T) {
	t.Parallel()
	r := taskstest.Redis(t).Client()
	s := New(r)
	ctx := context.Background()
	const client = "192.0.2.1"
	huge := strings.Repeat("n", 1<<20)
	if _, err := s.Login(ctx, huge, "password", client); !errors.Is(err, ErrBadCredentials) {
		t.Fatalf("over-long name: %v", err)
	}
	for i := 1; i < maxClientFailures; i++ {
		if _, err := s.Login(ctx, "ann", strings.Repeat("p", MaxPasswordLen+1), client); !errors.Is(err, ErrBadCredentials) {
			t.Fatalf("over-long password %d: %v", i, err)
		}
	}
	if ks := r.Keys(ctx, "*").Val(); !slices.Equal(ks, []string{keys.LoginThrottle(client)}) {
		t.Fatalf("over-long logins left the keys %.200q, want only the address's counter", ks)
	}
	if _, err := s.Login(ctx, "ann", "password", client); !errors.Is(err, ErrThrottled) {
		t.Fatalf("login after %d failures from one address: %v, want ErrThrottled", maxClientFailures, err)
	}
	typed := "mallory-typed-this"
	if _, err := s.Login(ctx, typed, "password", "192.0.2.2"); !errors.Is(err, ErrBadCredentials) {
		t.Fatal(err)
	}
	for _, k := range r.Keys(ctx, "*").Val() {
		if strings.Contains(k, typed) {
			t.Errorf("key %q holds what was typed as a name", k)
		}
	}
}

// The account's delay holds back strangers only: an address the person
// logged in from lately keeps its turn, whatever the guesses elsewhere.
func TestKnownAddressSkipsTheAccountDelay(t *testing.T) {
	t.Parallel()
	s := New(taskstest.Redis(t).Client())
	ctx := context.Background()
	if err := s.Put(ctx, User{Name: "ann", Role: Operator}, "password-ann"); err != nil {
		t.Fatal(err)
	}
	const home = "198.51.100.7"
	if _, err := s.Login(ctx, "ann", "password-ann", home); err != nil {
		t.Fatal(err)
	}
	for i := range accountFreeFailures + 3 {
		if _, err := s.Login(ctx, "ann", "wrong-guess", fmt.Sprint("203.0.113.", i)); !errors.Is(err, ErrBadCredentials) && !errors.As(err, new(*ThrottledError)) {
			t.Fatalf("guess %d: %v", i+1, err)
		}
	}
	if _, err := s.Login(ctx, "ann", "password-ann", "203.0.113.200"); !errors.As(err, new(*ThrottledError)) {
		t.Fatalf("the right password from a stranger's address during the delay: %v, want throttled", err)
	}
	if u, err := s.Login(ctx, "ann", "password-ann", home); err != nil || u.Name != "ann" {
		t.Fatalf("ann from her own address during the delay: %+v, %v; want logged in", u, err)
	}
}
