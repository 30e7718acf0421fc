// Package users keeps claimdesk's people and machines: users with a role and
// the queues granted to them, bcrypt password hashes, whether a user is
// disabled, API tokens (stored only as SHA-256 hashes, known by an id), and
// the login throttle. Its keys, named in internal/keys, are global (no
// queue hash tag) and no dispatch script touches them.
package users

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
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
	// Disabled is set while the user may not work: they cannot log in, and
	// their tokens are refused.
	Disabled bool
	// Epoch moves on when the user's password changes or the user is
	// disabled: a session begun in an earlier epoch is over.
	Epoch int64
}

// SessionValid reports whether a browser session begun in epoch may go on:
// the user is not disabled, may log in (is no producer), and neither a new
// password nor disabling has moved the epoch on since.
func (u User) SessionValid(epoch int64) bool {
	return !u.Disabled && u.Role != Producer && u.Epoch == epoch
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
	// ErrTokenNotFound means no token has the id given.
	ErrTokenNotFound = errors.New("token not found")
	// ErrDisabled means the user is disabled (Disable).
	ErrDisabled = errors.New("user disabled")
	// ErrBadCredentials means the name or password is wrong; which one is
	// not told.
	ErrBadCredentials = errors.New("wrong name or password")
	// ErrInvalid means a user's fields are not valid.
	ErrInvalid = errors.New("invalid user")
	// ErrThrottled means too many failed logins; try again later.
	ErrThrottled = errors.New("too many failed logins")
)

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// Login throttle: at most maxFailures failed logins per name and client,
// and maxClientFailures per client, in a window.
const (
	maxFailures       = 10
	maxClientFailures = 50
	throttleWindow    = 5 * time.Minute
)

// TokenCacheTTL is how long a Store trusts what it looked up for an API
// token, so that a request with a token known a moment ago costs no Redis
// round trip. It is how long a change to a user (role, queues, disabling,
// enabling, removal) or a revoked token takes to apply to requests with the
// user's tokens in other processes; in the process that made the change
// (Put, Disable, Enable, PutToken, RevokeToken) it applies at once. A token
// in use is looked up again in the background once three quarters of that
// have passed, so its requests never wait for the lookup; each lookup
// records when the token was used (Token.LastUsed).
const TokenCacheTTL = 2 * time.Second

// tokenIDLen is how many hex digits of a token's SHA-256 make its id: 64
// bits. Two tokens sharing an id is too unlikely to plan for; should it
// happen, the later one replaces the earlier (which stops working): a
// lookup compares the whole hash, so one never acts as the other.
const tokenIDLen = 16

// revokedKeep is how long a revoked token's record stays, marked revoked,
// before it expires: a lookup that read the record just before the revoke
// and records the token's use just after updates a record that goes
// anyway, rather than making a new one.
const revokedKeep = time.Hour

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
	// tokens caches ByToken's answers by the token's hash (hex SHA-256).
	tokens map[string]cachedUser
	// changes counts the changes to users and tokens made here: a lookup
	// that a change overtook is not cached.
	changes uint64
	now     func() time.Time

	observers []Observer
}

// Observer is told the name of a user after the Store changed the user
// (Put, Disable, Enable), so that every instance can look again at what
// the user has open.
type Observer func(ctx context.Context, name string)

// Observe adds fn to the observers of every change the Store makes to a
// user. Call it before the Store is used.
func (s *Store) Observe(fn Observer) { s.observers = append(s.observers, fn) }

// changed tells the observers that the named user changed.
func (s *Store) changed(ctx context.Context, name string) {
	for _, o := range s.observers {
		o(ctx, name)
	}
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

// Put creates or updates a user's role and queues; whether the user is
// disabled stays as it was. A non-empty password replaces the password and
// ends the user's sessions (the same password again changes nothing); a new
// operator or supervisor needs one.
func (s *Store) Put(ctx context.Context, u User, password string) error {
	if !nameRE.MatchString(u.Name) {
		return fmt.Errorf("%w: name must match %s", ErrInvalid, nameRE)
	}
	if !u.Role.Valid() {
		return fmt.Errorf("%w: role must be operator, supervisor or producer", ErrInvalid)
	}
	key := keys.User(u.Name)
	fields := map[string]any{"role": string(u.Role), "queues": strings.Join(u.Queues, ",")}
	if password != "" {
		if len(password) < 8 || len(password) > 72 {
			return fmt.Errorf("%w: password must be 8 to 72 bytes", ErrInvalid)
		}
		old, err := s.rdb.HGet(ctx, key, "password").Result()
		if err != nil && err != redis.Nil {
			return fmt.Errorf("redis: %w", err)
		}
		if old == "" || bcrypt.CompareHashAndPassword([]byte(old), []byte(password)) != nil {
			hash, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
			if err != nil {
				return fmt.Errorf("hash password: %w", err)
			}
			fields["password"] = string(hash)
		}
	} else if u.Role != Producer {
		exists, err := s.rdb.HExists(ctx, key, "password").Result()
		if err != nil {
			return fmt.Errorf("redis: %w", err)
		}
		if !exists {
			return fmt.Errorf("%w: a new %s needs a password", ErrInvalid, u.Role)
		}
	}
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, key, fields)
		if _, newPassword := fields["password"]; newPassword {
			p.HIncrBy(ctx, key, "epoch", 1)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	s.forget(func(_ string, c cachedUser) bool { return c.user.Name == u.Name })
	if err := s.rdb.SAdd(ctx, keys.Users, u.Name).Err(); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	s.changed(ctx, u.Name)
	return nil
}

// Disable stops the named user: their sessions end (at their next request,
// and their websockets at once), their tokens are refused, and they cannot
// log in, until Enable.
func (s *Store) Disable(ctx context.Context, name string) error {
	return s.setDisabled(ctx, name, true)
}

// Enable lets a disabled user work again: their tokens work again; the
// sessions that Disable ended stay ended, so people log in anew.
func (s *Store) Enable(ctx context.Context, name string) error {
	return s.setDisabled(ctx, name, false)
}

func (s *Store) setDisabled(ctx context.Context, name string, disabled bool) error {
	if _, err := s.Get(ctx, name); err != nil {
		return err
	}
	key := keys.User(name)
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		if disabled {
			p.HSet(ctx, key, "disabled", "1")
			p.HIncrBy(ctx, key, "epoch", 1)
		} else {
			p.HDel(ctx, key, "disabled")
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	s.forget(func(_ string, c cachedUser) bool { return c.user.Name == name })
	s.changed(ctx, name)
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
	u, err := parseUser(name, h)
	return u, h["password"], err
}

// parseUser reads the user out of the fields of its hash (keys.User). A
// user stored before disabling and epochs lacks those fields: enabled, in
// epoch 0, as are the sessions begun then.
func parseUser(name string, h map[string]string) (User, error) {
	if len(h) == 0 {
		return User{}, ErrNotFound
	}
	u := User{Name: name, Role: Role(h["role"]), Disabled: h["disabled"] == "1"}
	if h["queues"] != "" {
		u.Queues = strings.Split(h["queues"], ",")
	}
	u.Epoch, _ = strconv.ParseInt(cmp.Or(h["epoch"], "0"), 10, 64)
	return u, nil
}

// dummyHash is compared against when the user does not exist, so a wrong
// name costs as much time as a wrong password.
var dummyHash, _ = bcrypt.GenerateFromPassword([]byte("claimdesk-no-such-user"), bcrypt.DefaultCost)

// Login checks a person's name and password. client identifies where the
// attempt comes from (the remote address). Too many failures for one name
// from one client, or for any names from one client, refuse logins from it
// for a while with ErrThrottled. Producers cannot log in; a disabled user
// with the right password gets ErrDisabled.
func (s *Store) Login(ctx context.Context, name, password, client string) (User, error) {
	name = strings.ToLower(strings.TrimSpace(name))
	limits := []struct {
		key string
		max int
	}{
		{keys.LoginThrottleName(client, name), maxFailures},
		{keys.LoginThrottle(client), maxClientFailures},
	}
	for _, l := range limits {
		n, err := s.rdb.Get(ctx, l.key).Int()
		if err != nil && err != redis.Nil {
			return User{}, fmt.Errorf("redis: %w", err)
		}
		if n >= l.max {
			return User{}, ErrThrottled
		}
	}
	u, hash, err := s.get(ctx, name)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return User{}, err
	}
	if hash == "" {
		hash = string(dummyHash)
	}
	if bcrypt.CompareHashAndPassword([]byte(hash), []byte(password)) == nil && err == nil && u.Role != Producer {
		if u.Disabled {
			return User{}, ErrDisabled
		}
		return u, nil
	}
	for _, l := range limits {
		// Each key is its own slot on a cluster: no transaction across them.
		pipe := s.rdb.TxPipeline()
		pipe.Incr(ctx, l.key)
		pipe.Expire(ctx, l.key, throttleWindow)
		if _, err := pipe.Exec(ctx); err != nil {
			return User{}, fmt.Errorf("redis: %w", err)
		}
	}
	return User{}, ErrBadCredentials
}

// Token is what is known of an API token; never the token itself.
type Token struct {
	// ID names the token (claimdesk token revoke ID): the first 16 hex
	// digits of the token's SHA-256.
	ID   string
	User string
	// Created is when the token was made; zero for a token made by a
	// version before token ids.
	Created time.Time
	// LastUsed is when the token was last presented, to within
	// TokenCacheTTL (a server looks a token up again only that often); zero
	// if never since it was made.
	LastUsed time.Time
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

// PutToken registers a token chosen elsewhere (demo data) for the user. A
// token registered again moves to the user, keeps its creation time, and
// works again if it was revoked.
func (s *Store) PutToken(ctx context.Context, name, token string) error {
	if !strings.HasPrefix(token, "cdt_") || len(token) < 24 || len(token) > 100 {
		return fmt.Errorf("%w: a token starts with cdt_ and has 24 to 100 characters", ErrInvalid)
	}
	hash := tokenHash(token)
	id := hash[:tokenIDLen]
	key := keys.Token(id)
	prev, err := s.rdb.HGet(ctx, key, "user").Result()
	if err != nil && err != redis.Nil {
		return fmt.Errorf("redis: %w", err)
	}
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, key, "user", name, "hash", hash)
		p.HSetNX(ctx, key, "created", s.now().UnixMilli())
		p.HDel(ctx, key, "revoked")
		p.Persist(ctx, key)
		p.SAdd(ctx, keys.UserTokens(name), id)
		if prev != "" && prev != name {
			p.SRem(ctx, keys.UserTokens(prev), id)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	s.forget(func(k string, _ cachedUser) bool { return k == hash })
	return nil
}

// Tokens lists the named user's API tokens, oldest first.
func (s *Store) Tokens(ctx context.Context, name string) ([]Token, error) {
	if _, err := s.Get(ctx, name); err != nil {
		return nil, err
	}
	if err := s.adoptAll(ctx); err != nil {
		return nil, err
	}
	index := keys.UserTokens(name)
	ids, err := s.rdb.SMembers(ctx, index).Result()
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	recs := make([]*redis.MapStringStringCmd, len(ids))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			recs[i] = p.HGetAll(ctx, keys.Token(id))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	out := []Token{}
	var stale []any
	for i, id := range ids {
		rec := recs[i].Val()
		if rec["user"] != name || rec["revoked"] != "" {
			stale = append(stale, id) // revoked, or moved to another user
			continue
		}
		out = append(out, Token{ID: id, User: name, Created: msTime(rec["created"]), LastUsed: msTime(rec["used"])})
	}
	if len(stale) > 0 {
		if err := s.rdb.SRem(ctx, index, stale...).Err(); err != nil {
			return nil, fmt.Errorf("redis: %w", err)
		}
	}
	slices.SortFunc(out, func(a, b Token) int { return cmp.Or(a.Created.Compare(b.Created), strings.Compare(a.ID, b.ID)) })
	return out, nil
}

// RevokeToken ends the API token with the id given: it stops working here
// at once, and in other processes within TokenCacheTTL.
func (s *Store) RevokeToken(ctx context.Context, id string) error {
	rec, err := s.tokenRecord(ctx, id)
	if err == nil && rec["user"] == "" {
		// A token made by a version before token ids is found by its
		// hash alone: adopt them all, and look again.
		if err = s.adoptAll(ctx); err == nil {
			rec, err = s.tokenRecord(ctx, id)
		}
	}
	if err != nil {
		return err
	}
	if rec["user"] == "" {
		return fmt.Errorf("%w: no token has the id %q", ErrTokenNotFound, id)
	}
	key := keys.Token(id)
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, key, "revoked", s.now().UnixMilli())
		p.PExpire(ctx, key, revokedKeep)
		p.SRem(ctx, keys.UserTokens(rec["user"]), id)
		return nil
	})
	if err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	s.forget(func(k string, _ cachedUser) bool { return k[:tokenIDLen] == id })
	return nil
}

var tokenIDRE = regexp.MustCompile(`^[0-9a-f]{16}$`)

// tokenRecord returns the record of the token with the id given, without
// its user if there is none or it was revoked.
func (s *Store) tokenRecord(ctx context.Context, id string) (map[string]string, error) {
	if !tokenIDRE.MatchString(id) {
		return nil, fmt.Errorf("%w: a token id is 16 hex digits, as claimdesk token list shows", ErrTokenNotFound)
	}
	rec, err := s.rdb.HGetAll(ctx, keys.Token(id)).Result()
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	if rec["revoked"] != "" {
		delete(rec, "user")
	}
	return rec, nil
}

// ByToken returns the user an API token belongs to; ErrNotFound for a
// token that does not exist or was revoked, ErrDisabled for one whose user
// is disabled. What it found is trusted for TokenCacheTTL; unknown tokens
// are looked up every time.
func (s *Store) ByToken(ctx context.Context, token string) (User, error) {
	if !strings.HasPrefix(token, "cdt_") || len(token) > 100 {
		return User{}, ErrNotFound
	}
	hash := tokenHash(token)
	now := s.now()
	s.mu.Lock()
	c, ok := s.tokens[hash]
	fresh := ok && now.Before(c.until)
	// In the last quarter of its life, a token in use is renewed in the
	// background: requests keep being served from the cache meanwhile, and
	// the tokens of a busy client never expire under it.
	renew := fresh && !c.refreshing && c.until.Sub(now) <= TokenCacheTTL/4
	if renew {
		c.refreshing = true
		s.tokens[hash] = c
	}
	changes := s.changes
	s.mu.Unlock()
	if fresh {
		if renew {
			go s.refresh(hash, changes)
		}
		u := c.user
		u.Queues = slices.Clone(u.Queues) // the caller's to keep
		return enabled(u)
	}
	u, err := s.lookup(ctx, hash)
	if err != nil {
		return User{}, err
	}
	s.remember(hash, u, now, changes)
	return enabled(u)
}

// enabled returns u, unless u is disabled.
func enabled(u User) (User, error) {
	if u.Disabled {
		return User{}, ErrDisabled
	}
	return u, nil
}

// lookup finds the user of a token, given the token's hash, in Redis, and
// records that the token was used.
func (s *Store) lookup(ctx context.Context, hash string) (User, error) {
	key := keys.Token(hash[:tokenIDLen])
	var rec *redis.MapStringStringCmd
	var legacy *redis.StringCmd
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		rec = p.HGetAll(ctx, key)
		legacy = p.Get(ctx, keys.APIToken(hash))
		return nil
	})
	if err != nil && err != redis.Nil {
		return User{}, fmt.Errorf("redis: %w", err)
	}
	fields := rec.Val()
	switch {
	case len(fields) > 0:
	case legacy.Err() == nil:
		if fields, err = s.adopt(ctx, hash, legacy.Val()); err != nil {
			return User{}, err
		}
	default:
		// Adopted by another process between the two reads?
		if fields, err = s.rdb.HGetAll(ctx, key).Result(); err != nil {
			return User{}, fmt.Errorf("redis: %w", err)
		}
	}
	if fields["revoked"] != "" || subtle.ConstantTimeCompare([]byte(fields["hash"]), []byte(hash)) != 1 {
		return User{}, ErrNotFound
	}
	var user *redis.MapStringStringCmd
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		user = p.HGetAll(ctx, keys.User(fields["user"]))
		p.HSet(ctx, key, "used", s.now().UnixMilli())
		return nil
	})
	if err != nil {
		return User{}, fmt.Errorf("redis: %w", err)
	}
	return parseUser(fields["user"], user.Val())
}

// adopt gives a token that a version before token ids stored (keys.APIToken,
// the user's name under the token's hash) its record and a place in its
// user's list, drops the old key, and returns the record.
func (s *Store) adopt(ctx context.Context, hash, name string) (map[string]string, error) {
	id := hash[:tokenIDLen]
	// The record first: a lookup that misses the old key finds the record.
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, keys.Token(id), "user", name, "hash", hash)
		p.SAdd(ctx, keys.UserTokens(name), id)
		return nil
	})
	if err == nil {
		err = s.rdb.Del(ctx, keys.APIToken(hash)).Err()
	}
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	return map[string]string{"user": name, "hash": hash}, nil
}

// hashRE matches a token's hash, hex SHA-256.
var hashRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// adoptAll adopts every token still kept as versions before token ids kept
// them. It walks the whole store (SCAN), so only the command line's token
// list and revoke call it; requests adopt a token when it is used.
func (s *Store) adoptAll(ctx context.Context) error {
	prefix := keys.APIToken("")
	return keys.Scan(ctx, s.rdb, prefix+"*", func(key string) error {
		hash := strings.TrimPrefix(key, prefix)
		if !hashRE.MatchString(hash) {
			return nil
		}
		name, err := s.rdb.Get(ctx, key).Result()
		switch {
		case err == redis.Nil:
			return nil // adopted meanwhile
		case err != nil:
			return fmt.Errorf("redis: %w", err)
		}
		_, err = s.adopt(ctx, hash, name)
		return err
	})
}

// refresh looks a cached token up again. A token that is gone is
// forgotten at once; after an error the cached answer stands until it
// expires, and the next request in its last quarter tries again.
func (s *Store) refresh(hash string, changes uint64) {
	ctx, cancel := context.WithTimeout(context.Background(), refreshTimeout)
	defer cancel()
	start := s.now()
	u, err := s.lookup(ctx, hash)
	if err == nil && s.remember(hash, u, start, changes) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if errors.Is(err, ErrNotFound) {
		delete(s.tokens, hash)
		return
	}
	if c, ok := s.tokens[hash]; ok {
		c.refreshing = false
		s.tokens[hash] = c
	}
}

// remember caches the user of a token for TokenCacheTTL from when the
// lookup began, unless users or tokens changed here since then (changes is
// the count then). It reports whether it did.
func (s *Store) remember(hash string, u User, began time.Time, changes uint64) bool {
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
	s.tokens[hash] = cachedUser{user: u, until: began.Add(TokenCacheTTL)}
	return true
}

// forget drops the cached tokens that match, after a change.
func (s *Store) forget(match func(hash string, c cachedUser) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.changes++
	maps.DeleteFunc(s.tokens, match)
}

// tokenHash is a token's hex SHA-256: all that is stored of it.
func tokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// msTime reads a time stored as Unix ms; zero if there is none.
func msTime(ms string) time.Time {
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(n).UTC()
}
