// Package users keeps claimdesk's people and machines: users with a role and
// the queues granted to them, bcrypt password hashes, API tokens (stored
// only as SHA-256 hashes), and the login throttle. Its keys, named in
// internal/keys, are global (no queue hash tag) and no dispatch script
// touches them.
package users

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"claimdesk/internal/keys"

	"github.com/redis/go-redis/v9"
	"golang.org/x/crypto/bcrypt"
)

// Role is what a user may do.
type Role string

// The roles.
const (
	// Operator claims and works jobs in the queues granted to them.
	Operator Role = "operator"
	// Supervisor sees and manages everything.
	Supervisor Role = "supervisor"
	// Producer enqueues, reads and cancels jobs, with API tokens only.
	Producer Role = "producer"
)

// Valid reports whether r is one of the roles.
func (r Role) Valid() bool { return r == Operator || r == Supervisor || r == Producer }

// User is a person or a producing system.
type User struct {
	Name string
	Role Role
	// Queues are the queues an operator may work (and a producer may fill);
	// empty for a producer means every queue. Supervisors reach every queue.
	Queues []string
}

// CanWork reports whether the user may claim from the queue.
func (u User) CanWork(queue string) bool {
	return u.Role == Operator && slices.Contains(u.Queues, queue)
}

// CanSee reports whether the user may read the queue's jobs and counts.
func (u User) CanSee(queue string) bool {
	switch u.Role {
	case Supervisor:
		return true
	case Producer:
		return len(u.Queues) == 0 || slices.Contains(u.Queues, queue)
	}
	return slices.Contains(u.Queues, queue)
}

// Errors of the package.
var (
	// ErrNotFound means no such user or token.
	ErrNotFound = errors.New("user not found")
	// ErrBadCredentials means the name or password is wrong; which one is
	// not told.
	ErrBadCredentials = errors.New("wrong name or password")
	// ErrInvalid means a user's fields are not valid.
	ErrInvalid = errors.New("invalid user")
	// ErrThrottled means too many failed logins; try again later.
	ErrThrottled = errors.New("too many failed logins")
)

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// ThrottledError is the error of a login that the throttle refused; it
// matches ErrThrottled and says when a try may be made again.
type ThrottledError struct {
	// RetryAfter is how long until the next try may pass (at least 1s).
	RetryAfter time.Duration
}

func (e *ThrottledError) Error() string {
	return fmt.Sprintf("%v: try again in %s", ErrThrottled, e.RetryAfter)
}

// Is makes errors.Is(err, ErrThrottled) hold.
func (e *ThrottledError) Is(target error) bool { return target == ErrThrottled }

func throttled(retry time.Duration) error {
	return &ThrottledError{RetryAfter: max(retry, time.Second)}
}

// Login throttle. Per client address: at most maxFailures login attempts
// for one name and maxClientFailures for any names in a throttleWindow
// (counted before the password is checked, so concurrent guesses cannot
// slip past the count; a success gives its attempt back). Per account, from
// any address: after accountFreeFailures failures in a row, the account
// takes one try per delay, the delay doubling with each further failure
// from one second up to maxAccountDelay; a success, Unlock, or
// accountWindow without attempts ends it.
const (
	maxFailures         = 10
	maxClientFailures   = 50
	throttleWindow      = 5 * time.Minute
	accountFreeFailures = 5
	maxAccountDelay     = 5 * time.Minute
	accountWindow       = time.Hour
)

// The longest name and password a login considers. Anything longer is a
// failed login, counted against the client address alone, that reaches
// neither Redis nor bcrypt.
const (
	MaxNameLen     = 64
	MaxPasswordLen = 1024
)

// TokenCacheTTL is how long a Store trusts what it looked up for an API
// token, so that a request with a token known a moment ago costs no Redis
// round trip. It is how long a change to a user (role, queues, removal)
// takes to apply to requests with the user's tokens in other processes; in
// the process that made the change (Put, PutToken) it applies at once.
// A token in use is looked up again in the background once three quarters
// of that have passed, so its requests never wait for the lookup.
const TokenCacheTTL = 2 * time.Second

// refreshTimeout bounds a background lookup of a token.
const refreshTimeout = 5 * time.Second

// maxCachedTokens bounds the token cache. Only tokens that exist are
// cached, so it fills only with as many tokens as were used within
// TokenCacheTTL.
const maxCachedTokens = 10000

// Store keeps users in Redis.
type Store struct {
	rdb redis.UniversalClient

	mu sync.Mutex
	// tokens caches ByToken's answers by the token's key.
	tokens map[string]cachedUser
	// changes counts the changes to users and tokens made here: a lookup
	// that a change overtook is not cached.
	changes uint64
	now     func() time.Time
}

// cachedUser is a user as ByToken found it, good until the time given.
type cachedUser struct {
	user  User
	until time.Time
	// refreshing is set while a background lookup renews it.
	refreshing bool
}

// New returns a Store over rdb.
func New(rdb redis.UniversalClient) *Store {
	return &Store{rdb: rdb, tokens: map[string]cachedUser{}, now: time.Now}
}

// Put creates or updates a user. A non-empty password replaces the
// password; a new operator or supervisor needs one.
func (s *Store) Put(ctx context.Context, u User, password string) error {
	if !nameRE.MatchString(u.Name) {
		return fmt.Errorf("%w: name must match %s", ErrInvalid, nameRE)
	}
	if !u.Role.Valid() {
		return fmt.Errorf("%w: role must be operator, supervisor or producer", ErrInvalid)
	}
	fields := map[string]any{"role": string(u.Role), "queues": strings.Join(u.Queues, ",")}
	if password != "" {
		if len(password) < 8 || len(password) > 72 {
			return fmt.Errorf("%w: password must be 8 to 72 bytes", ErrInvalid)
		}
		hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
		if err != nil {
			return fmt.Errorf("hash password: %w", err)
		}
		fields["password"] = string(hash)
	} else if u.Role != Producer {
		exists, err := s.rdb.HExists(ctx, keys.User(u.Name), "password").Result()
		if err != nil {
			return fmt.Errorf("redis: %w", err)
		}
		if !exists {
			return fmt.Errorf("%w: a new %s needs a password", ErrInvalid, u.Role)
		}
	}
	if err := s.rdb.HSet(ctx, keys.User(u.Name), fields).Err(); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	s.forget(func(_ string, c cachedUser) bool { return c.user.Name == u.Name })
	if err := s.rdb.SAdd(ctx, keys.Users, u.Name).Err(); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	return nil
}

// Get returns the named user.
func (s *Store) Get(ctx context.Context, name string) (User, error) {
	u, _, err := s.get(ctx, name)
	return u, err
}

func (s *Store) get(ctx context.Context, name string) (User, string, error) {
	if !nameRE.MatchString(name) {
		return User{}, "", ErrNotFound
	}
	h, err := s.rdb.HGetAll(ctx, keys.User(name)).Result()
	if err != nil {
		return User{}, "", fmt.Errorf("redis: %w", err)
	}
	if len(h) == 0 {
		return User{}, "", ErrNotFound
	}
	u := User{Name: name, Role: Role(h["role"])}
	if h["queues"] != "" {
		u.Queues = strings.Split(h["queues"], ",")
	}
	return u, h["password"], nil
}

// dummyHash is compared against when the user does not exist, so a wrong
// name costs as much time as a wrong password.
var dummyHash, _ = bcrypt.GenerateFromPassword([]byte("claimdesk-no-such-user"), bcrypt.DefaultCost)

// Login checks a person's name and password. client identifies where the
// attempt comes from (the client address). Too many attempts from one
// client, or too many failures for one account, refuse logins with a
// *ThrottledError (ErrThrottled) before the password is checked.
// Producers cannot log in.
func (s *Store) Login(ctx context.Context, name, password, client string) (User, error) {
	name = strings.TrimSpace(name)
	if len(name) > MaxNameLen || len(password) > MaxPasswordLen {
		if err := s.countAttempts(ctx, attempt{keys.LoginThrottle(client), maxClientFailures}); err != nil {
			return User{}, err
		}
		return User{}, ErrBadCredentials
	}
	name = strings.ToLower(name)
	account := nameHash(name)
	if err := s.countAttempts(ctx,
		attempt{keys.LoginThrottleName(client, account), maxFailures},
		attempt{keys.LoginThrottle(client), maxClientFailures}); err != nil {
		return User{}, err
	}
	if err := s.takeAccountTurn(ctx, account); err != nil {
		return User{}, err
	}
	u, hash, err := s.get(ctx, name)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return User{}, err
	}
	if hash == "" {
		hash = string(dummyHash)
	}
	if bcrypt.CompareHashAndPassword([]byte(hash), []byte(password)) != nil || err != nil || u.Role == Producer {
		return User{}, ErrBadCredentials
	}
	// A success is no failure: the client's attempt is given back and the
	// account's delay ends.
	pipe := s.rdb.Pipeline()
	pipe.Del(ctx, keys.LoginThrottleName(client, account))
	pipe.Decr(ctx, keys.LoginThrottle(client))
	pipe.ExpireNX(ctx, keys.LoginThrottle(client), throttleWindow)
	pipe.Del(ctx, keys.LoginFailures(account))
	pipe.Del(ctx, keys.LoginGate(account))
	if _, err := pipe.Exec(ctx); err != nil {
		return User{}, fmt.Errorf("redis: %w", err)
	}
	return u, nil
}

// attempt is a counter of login attempts and its limit.
type attempt struct {
	key string
	max int64
}

// countAttempts counts one login attempt on each counter, in one round
// trip, and refuses it if any counter went past its limit. A counter's
// window starts with its first attempt; each key is its own slot on a
// cluster, so each is counted on its own (and a counter left without
// expiry by a lost connection gets one on its next attempt).
func (s *Store) countAttempts(ctx context.Context, counters ...attempt) error {
	pipe := s.rdb.Pipeline()
	counts := make([]*redis.IntCmd, len(counters))
	ttls := make([]*redis.DurationCmd, len(counters))
	for i, c := range counters {
		counts[i] = pipe.Incr(ctx, c.key)
		pipe.ExpireNX(ctx, c.key, throttleWindow)
		ttls[i] = pipe.PTTL(ctx, c.key)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	for i, c := range counters {
		if counts[i].Val() > c.max {
			return throttled(ttls[i].Val())
		}
	}
	return nil
}

// takeAccountTurn counts an attempt at the account as a failure until it
// succeeds, and, once the account has failed accountFreeFailures times in
// a row, lets it through only if the account's delay since its last try
// has passed, starting the next delay.
func (s *Store) takeAccountTurn(ctx context.Context, account string) error {
	failures, gate := keys.LoginFailures(account), keys.LoginGate(account)
	pipe := s.rdb.Pipeline()
	n := pipe.Incr(ctx, failures)
	pipe.Expire(ctx, failures, accountWindow)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	before := n.Val() - 1 // this attempt's and concurrent ones' failures count too
	if before < accountFreeFailures {
		return nil
	}
	pipe = s.rdb.Pipeline()
	turn := pipe.SetNX(ctx, gate, 1, accountDelay(before))
	wait := pipe.PTTL(ctx, gate)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	if turn.Val() {
		return nil
	}
	// Refused before the password was checked: not a failure.
	pipe = s.rdb.Pipeline()
	pipe.Decr(ctx, failures)
	pipe.Expire(ctx, failures, accountWindow)
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	return throttled(wait.Val())
}

// accountDelay is how long an account that failed failures times in a row
// waits between tries: one second after accountFreeFailures, doubling with
// each further failure, at most maxAccountDelay.
func accountDelay(failures int64) time.Duration {
	d := time.Second
	for k := failures - accountFreeFailures; k > 0 && d < maxAccountDelay; k-- {
		d *= 2
	}
	return min(d, maxAccountDelay)
}

// Unlock ends the named user's login delay at once (the per-account limit
// of Login); the per-address limits run out by themselves.
func (s *Store) Unlock(ctx context.Context, name string) error {
	if _, err := s.Get(ctx, name); err != nil {
		return err
	}
	account := nameHash(name)
	// Each key is its own slot on a cluster: one DEL each.
	pipe := s.rdb.Pipeline()
	pipe.Del(ctx, keys.LoginFailures(account))
	pipe.Del(ctx, keys.LoginGate(account))
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	return nil
}

// nameHash is how the login throttle's keys name an account: the first 128
// bits of the SHA-256 of the name, in hex, so that what a stranger types
// as a name is never stored.
func nameHash(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:16])
}

// NewToken makes a new API token for the named user and returns it. Only
// its hash is stored; the token itself cannot be shown again.
func (s *Store) NewToken(ctx context.Context, name string) (string, error) {
	if _, err := s.Get(ctx, name); err != nil {
		return "", err
	}
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
	token := "cdt_" + base64.RawURLEncoding.EncodeToString(b[:])
	return token, s.PutToken(ctx, name, token)
}

// PutToken registers a token chosen elsewhere (demo data) for the user.
func (s *Store) PutToken(ctx context.Context, name, token string) error {
	if !strings.HasPrefix(token, "cdt_") || len(token) < 24 || len(token) > 100 {
		return fmt.Errorf("%w: a token starts with cdt_ and has 24 to 100 characters", ErrInvalid)
	}
	key := tokenKey(token)
	if err := s.rdb.Set(ctx, key, name, 0).Err(); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	s.forget(func(k string, _ cachedUser) bool { return k == key })
	return nil
}

// ByToken returns the user an API token belongs to. What it found is
// trusted for TokenCacheTTL; unknown tokens are looked up every time.
func (s *Store) ByToken(ctx context.Context, token string) (User, error) {
	if !strings.HasPrefix(token, "cdt_") || len(token) > 100 {
		return User{}, ErrNotFound
	}
	key := tokenKey(token)
	now := s.now()
	s.mu.Lock()
	c, ok := s.tokens[key]
	fresh := ok && now.Before(c.until)
	// In the last quarter of its life, a token in use is renewed in the
	// background: requests keep being served from the cache meanwhile, and
	// the tokens of a busy client never expire under it.
	renew := fresh && !c.refreshing && c.until.Sub(now) <= TokenCacheTTL/4
	if renew {
		c.refreshing = true
		s.tokens[key] = c
	}
	changes := s.changes
	s.mu.Unlock()
	if fresh {
		if renew {
			go s.refresh(key, changes)
		}
		u := c.user
		u.Queues = slices.Clone(u.Queues) // the caller's to keep
		return u, nil
	}
	u, err := s.lookup(ctx, key)
	if err != nil {
		return User{}, err
	}
	s.remember(key, u, now, changes)
	return u, nil
}

// lookup finds the user of a token's key in Redis.
func (s *Store) lookup(ctx context.Context, key string) (User, error) {
	name, err := s.rdb.Get(ctx, key).Result()
	if err == redis.Nil {
		return User{}, ErrNotFound
	}
	if err != nil {
		return User{}, fmt.Errorf("redis: %w", err)
	}
	return s.Get(ctx, name)
}

// refresh looks a cached token up again. A token that is gone is
// forgotten at once; after an error the cached answer stands until it
// expires, and the next request in its last quarter tries again.
func (s *Store) refresh(key string, changes uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), refreshTimeout)
	defer cancel()
	start := s.now()
	u, err := s.lookup(ctx, key)
	if err == nil && s.remember(key, u, start, changes) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if errors.Is(err, ErrNotFound) {
		delete(s.tokens, key)
		return
	}
	if c, ok := s.tokens[key]; ok {
		c.refreshing = false
		s.tokens[key] = c
	}
}

// remember caches the user of a token for TokenCacheTTL from when the
// lookup began, unless users or tokens changed here since then (changes is
// the count then). It reports whether it did.
func (s *Store) remember(key string, u User, began time.Time, changes uint64) bool {
	now := s.now()
	u.Queues = slices.Clone(u.Queues)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changes != changes {
		return false
	}
	if len(s.tokens) >= maxCachedTokens {
		for k, c := range s.tokens {
			if !now.Before(c.until) {
				delete(s.tokens, k)
			}
		}
		if len(s.tokens) >= maxCachedTokens {
			clear(s.tokens)
		}
	}
	s.tokens[key] = cachedUser{user: u, until: began.Add(TokenCacheTTL)}
	return true
}

// forget drops the cached tokens that match, after a change.
func (s *Store) forget(match func(key string, c cachedUser) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.changes++
	maps.DeleteFunc(s.tokens, match)
}

func tokenKey(token string) string {
	sum := sha256.Sum256([]byte(token))
	return keys.APIToken(hex.EncodeToString(sum[:]))
}
