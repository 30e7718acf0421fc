// Package users keeps claimdesk's people and machines: users with a role and
// the queues granted to them, bcrypt password hashes, whether a user is
// disabled, API tokens (stored only as SHA-256 hashes, known by an id), and
// the login throttle. Its keys are named in internal/keys; no dispatch
// script touches them.
//
// Every change of people data (a user, their role, queues, password,
// disabling, away, a token made or revoked, a login delay ended) is one
// MULTI/EXEC: the people keys share the hash tag {people}, so one
// transaction holds every write of a change, the index of users
// included, on a Redis Cluster too. Each is answered as done only once
// the replicas the Store waits for have confirmed it (WithMinReplicas),
// as the engine's changes are. What the login throttle counts, when a
// token was last used, and the tidying of a user's list of tokens (ids of
// tokens revoked or moved since) are written without waiting.
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

	"claimdesk/internal/durable"
	"claimdesk/internal/keys"
	"claimdesk/internal/skills"
	"claimdesk/internal/storeerr"

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
	// Away is set while an operator says they are away: they get no
	// new-job notices, and the Team page shows them away.
	Away bool
	// Skills are what the person can do: they may claim the jobs that ask
	// for these (or fewer, or lower). Reviewers have ReviewSkill.
	Skills skills.Set
	// Training is set while the person is in training: every completion
	// of theirs waits for a reviewer's approval.
	Training bool
}

// ReviewSkill is the skill of reviewers: an operator who has it may review
// the completions that wait for review in the queues they work.
const ReviewSkill = "review"

// Reviews reports whether the user may review the queue's completions.
func (u User) Reviews(queue string) bool { return u.CanWork(queue) && u.Skills[ReviewSkill] > 0 }

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
	// ErrExists means a user of that name exists already (Create).
	ErrExists = errors.New("a user of that name exists")
	// ErrThrottled means too many failed logins; try again later.
	ErrThrottled = errors.New("too many failed logins")
)

var (
	nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)
)

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
// for one name in a throttleWindow (counted before the password is
// checked, so concurrent guesses cannot slip past the count; a success
// gives its attempts back), and maxClientFailures failures for any names
// (counted once the password was found wrong, so that any number of people
// behind one NAT address may log in at once; guesses made together slip
// past it only as far as the per-name count and the rate limits of the
// login let them: docs/security.md). Per account, from
// any address: after accountFreeFailures failures in a row, the account
// takes one try per delay, the delay doubling with each further failure
// from one second up to maxAccountDelay; a success, Unlock, or
// accountWindow without attempts ends it. The delay is for strangers: an
// address the account logged in from within knownFor skips it, so that an
// attacker's guesses cannot keep the person out.
const (
	maxFailures         = 10
	maxClientFailures   = 500
	throttleWindow      = 5 * time.Minute
	accountFreeFailures = 5
	maxAccountDelay     = 5 * time.Minute
	accountWindow       = time.Hour
	knownFor            = 30 * 24 * time.Hour
	// maxKnown is how many addresses an account knows: the latest.
	maxKnown = 20
)

// The longest name and password a login considers. Anything longer is a
// failed login, counted against the client address alone, that reaches
// neither Redis nor bcrypt.
const (
	MaxNameLen     = 64
	MaxPasswordLen = 1024
)

// CacheTTL is how long a Store trusts what it looked up for an API token
// or a user's name, so that a request with a token or session known a
// moment ago costs no Redis round trip. It is the longest a change to a
// user (role, queues, disabling, enabling, removal) or a revoked token
// takes to apply to requests in other processes, should the notice that
// makes them Forget the user be lost; in the process that made the change
// (Put, Disable, Enable, PutToken, RevokeToken) it applies at once. A token
// in use is looked up again in the background once three quarters of that
// have passed, so its requests never wait for the lookup; each lookup
// records when the token was used (Token.LastUsed).
const CacheTTL = 2 * time.Second

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

// maxCached bounds each cache, of tokens and of names. Only tokens and
// users that exist are cached, so each fills only with as many as were
// used within CacheTTL.
const maxCached = 10000

// Store keeps users in Redis.
type Store struct {
	rdb redis.UniversalClient

	mu sync.Mutex
	// tokens caches ByToken's answers by the token's hash (hex SHA-256),
	// and names Get's by the user's name.
	tokens map[string]cachedUser
	names  map[string]cachedUser
	// changes counts the changes to users and tokens made here: a lookup
	// that a change overtook is not cached.
	changes uint64
	now     func() time.Time

	observers []Observer

	// writes says how many replicas confirm a change (WithMinReplicas).
	writes durable.Policy
}

// Option configures a Store.
type Option func(*Store)

// WithMinReplicas makes every change to people data that the Store answers
// as done one that n replicas have confirmed (Redis WAIT, after the
// change, on the same connection) within timeout, as tasks.WithMinReplicas
// does for the engine's changes: a disabling or a revoked token that only
// the master holds is undone if the master fails before replicating it.
// When fewer confirm in time, the call fails with
// storeerr.ErrNotReplicated; the change stands on the master (made again,
// a Create finds the name taken, a revoke finds no token, and NewToken
// makes a second token). 0 waits for none.
func WithMinReplicas(n int, timeout time.Duration) Option {
	return func(s *Store) { s.writes = durable.Policy{Replicas: n, Timeout: timeout} }
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
func New(rdb redis.UniversalClient, opts ...Option) *Store {
	s := &Store{rdb: rdb, tokens: map[string]cachedUser{}, names: map[string]cachedUser{}, now: time.Now}
	for _, o := range opts {
		o(s)
	}
	return s
}

// maxTries bounds how often a change whose watched keys changed under it
// is made again.
const maxTries = 5

// change makes one change of people data: fn reads with tx what the change
// depends on, then sends the change as one MULTI/EXEC (tx.TxPipelined), on
// the master of slot's slot, where every key it touches is; the replicas
// the Store waits for confirm it (durable.Policy.Tx). With watch given,
// the change is made only if those keys did not change since fn read
// them, and fn runs again, up to maxTries times, when they did.
func (s *Store) change(ctx context.Context, slot string, fn func(tx *redis.Tx) error, watch ...string) error {
	for try := 1; ; try++ {
		err := s.writes.Tx(ctx, s.rdb, slot, fn, watch...)
		if errors.Is(err, redis.TxFailedErr) && try < maxTries {
			continue
		}
		return err
	}
}

// apply makes the change that queue sends, on slot's slot, as one
// MULTI/EXEC that depends on nothing read (change).
func (s *Store) apply(ctx context.Context, slot string, queue func(p redis.Pipeliner)) error {
	return s.change(ctx, slot, func(tx *redis.Tx) error {
		_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			queue(p)
			return nil
		})
		return err
	})
}

// settled runs after, which tells what a change did, if the change was
// made: err is nil, or says only that replicas did not confirm it (it
// stands on the master). It returns err as the caller's answer.
func settled(err error, after func()) error {
	if err == nil || errors.Is(err, storeerr.ErrNotReplicated) {
		after()
	}
	if err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	return nil
}

// userChanged forgets what the Store trusted of the named user and tells
// the observers, after a change of the user.
func (s *Store) userChanged(ctx context.Context, name string) {
	s.Forget(name)
	s.changed(ctx, name)
}

// Put creates or updates a user's role and queues; whether the user is
// disabled stays as it was. A non-empty password replaces the password and
// ends the user's sessions (the same password again changes nothing); a new
// operator or supervisor needs one.
func (s *Store) Put(ctx context.Context, u User, password string) error {
	return s.put(ctx, u, password, false)
}

// Create adds a new user as Put does, but fails with ErrExists, changing
// nothing, if the name is taken.
func (s *Store) Create(ctx context.Context, u User, password string) error {
	return s.put(ctx, u, password, true)
}

func (s *Store) put(ctx context.Context, u User, password string, create bool) error {
	if !nameRE.MatchString(u.Name) {
		return fmt.Errorf("%w: name must be 1 to 64 lower-case letters, digits, '.', '-' or '_', starting with a letter or digit", ErrInvalid)
	}
	if !u.Role.Valid() {
		return fmt.Errorf("%w: role must be operator, supervisor or producer", ErrInvalid)
	}
	for i, q := range u.Queues {
		if !keys.ValidQueue(q) || slices.Contains(u.Queues[:i], q) {
			return fmt.Errorf("%w: queues must be queue names, each once (%q is not)", ErrInvalid, q)
		}
	}
	if len(u.Skills) > skills.Most {
		return fmt.Errorf("%w: at most %d skills", ErrInvalid, skills.Most)
	}
	key := keys.User(u.Name)
	training := ""
	if u.Training {
		training = "1"
	}
	fields := map[string]any{"role": string(u.Role), "queues": strings.Join(u.Queues, ","), "skills": u.Skills.String(), "training": training}
	if password != "" {
		if len(password) < 8 || len(password) > 72 {
			return fmt.Errorf("%w: password must be 8 to 72 characters (72 bytes at most: fewer characters when they are not plain letters, digits or signs)", ErrInvalid)
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
	var watch []string
	if create {
		// Only if nobody made the user meanwhile (optimistic: WATCH).
		watch = []string{key}
	}
	err := s.change(ctx, key, func(tx *redis.Tx) error {
		if create {
			n, err := tx.Exists(ctx, key).Result()
			if err != nil {
				return err
			}
			if n > 0 {
				return ErrExists
			}
		}
		_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.HSet(ctx, key, fields)
			if _, newPassword := fields["password"]; newPassword {
				p.HIncrBy(ctx, key, "epoch", 1)
			}
			p.SAdd(ctx, keys.Users, u.Name)
			return nil
		})
		return err
	}, watch...)
	if errors.Is(err, ErrExists) {
		return fmt.Errorf("%w: %s", ErrExists, u.Name)
	}
	return settled(err, func() { s.userChanged(ctx, u.Name) })
}

// List returns every user, sorted by name.
func (s *Store) List(ctx context.Context) ([]User, error) {
	names, err := s.rdb.SMembers(ctx, keys.Users).Result()
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	slices.Sort(names)
	cmds := make([]*redis.MapStringStringCmd, len(names))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, name := range names {
			cmds[i] = p.HGetAll(ctx, keys.User(name))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	out := make([]User, 0, len(names))
	for i, name := range names {
		if u, err := parseUser(name, cmds[i].Val()); err == nil {
			out = append(out, u)
		}
	}
	return out, nil
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
	err := s.apply(ctx, key, func(p redis.Pipeliner) {
		if disabled {
			p.HSet(ctx, key, "disabled", "1")
			p.HIncrBy(ctx, key, "epoch", 1)
		} else {
			p.HDel(ctx, key, "disabled")
		}
	})
	return settled(err, func() { s.userChanged(ctx, name) })
}

// SetAway says whether the named user is away (User.Away).
func (s *Store) SetAway(ctx context.Context, name string, away bool) error {
	if _, err := s.Get(ctx, name); err != nil {
		return err
	}
	key := keys.User(name)
	err := s.apply(ctx, key, func(p redis.Pipeliner) {
		if away {
			p.HSet(ctx, key, "away", "1")
		} else {
			p.HDel(ctx, key, "away")
		}
	})
	return settled(err, func() { s.userChanged(ctx, name) })
}

// Get returns the named user. What it found is trusted for CacheTTL, or
// until the user is changed here or Forgotten.
func (s *Store) Get(ctx context.Context, name string) (User, error) {
	s.mu.Lock()
	c, ok := s.names[name]
	s.mu.Unlock()
	if ok && s.now().Before(c.until) {
		u := c.user
		u.Queues = slices.Clone(u.Queues) // the caller's to keep
		return u, nil
	}
	return s.Reload(ctx, name)
}

// Reload returns the named user as stored now, and trusts that for Get.
func (s *Store) Reload(ctx context.Context, name string) (User, error) {
	now := s.now()
	s.mu.Lock()
	changes := s.changes
	s.mu.Unlock()
	u, _, err := s.get(ctx, name)
	if err != nil {
		return User{}, err
	}
	kept := u
	kept.Queues = slices.Clone(u.Queues)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changes == changes {
		if len(s.names) >= maxCached {
			clear(s.names)
		}
		s.names[name] = cachedUser{user: kept, until: now.Add(CacheTTL)}
	}
	return u, nil
}

// Forget drops what the Store trusted of the named user and their tokens:
// another process changed the user.
func (s *Store) Forget(name string) {
	s.forget(func(_ string, c cachedUser) bool { return c.user.Name == name })
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
	u := User{Name: name, Role: Role(h["role"]), Disabled: h["disabled"] == "1", Away: h["away"] == "1", Training: h["training"] == "1"}
	if h["queues"] != "" {
		u.Queues = strings.Split(h["queues"], ",")
	}
	u.Epoch, _ = strconv.ParseInt(cmp.Or(h["epoch"], "0"), 10, 64)
	// Stored as Put checks them; a user stored before skills has none.
	u.Skills, _ = skills.Parse(h["skills"])
	return u, nil
}

// dummyHash is compared against when the user does not exist, so a wrong
// name costs as much time as a wrong password.
var dummyHash, _ = bcrypt.GenerateFromPassword([]byte("claimdesk-no-such-user"), bcrypt.DefaultCost)

// Login checks a person's name and password. client identifies where the
// attempt comes from (the client address). Too many attempts for one name
// or failures from one client, or too many failures for one account,
// refuse logins with a *ThrottledError (ErrThrottled) before the password
// is checked.
// Producers cannot log in; a disabled user with the right password gets
// ErrDisabled.
func (s *Store) Login(ctx context.Context, name, password, client string) (User, error) {
	account, ok := NameKey(name)
	if !ok || len(password) > MaxPasswordLen {
		if err := s.countAttempts(ctx, attempt{keys.LoginThrottle(client), maxClientFailures}); err != nil {
			return User{}, err
		}
		return User{}, ErrBadCredentials
	}
	name = strings.ToLower(strings.TrimSpace(name))
	if err := s.countAttempts(ctx, attempt{keys.LoginThrottleName(client, account), maxFailures}); err != nil {
		return User{}, err
	}
	if err := s.clientFailures(ctx, client); err != nil {
		return User{}, err
	}
	u, err := s.checkLogin(ctx, name, password, account, client)
	if errors.Is(err, ErrBadCredentials) {
		// A failure counts for the client; the next attempt meets the cap.
		if cerr := s.countAttempts(ctx, attempt{keys.LoginThrottle(client), maxClientFailures}); cerr != nil && !errors.Is(cerr, ErrThrottled) {
			return User{}, cerr
		}
	}
	return u, err
}

// NameKey is how the login throttles know a name typed at the login: the
// hash of the name as a login reads it (trimmed, in lower case), so that
// no name typed is kept. ok is false for a name longer than any user's
// may be.
func NameKey(name string) (key string, ok bool) {
	name = strings.TrimSpace(name)
	if len(name) > MaxNameLen {
		return "", false
	}
	return nameHash(strings.ToLower(name)), true
}

// clientFailures refuses a login from a client that failed too often
// within the throttle window, for any names.
func (s *Store) clientFailures(ctx context.Context, client string) error {
	pipe := s.rdb.Pipeline()
	count := pipe.Get(ctx, keys.LoginThrottle(client))
	ttl := pipe.PTTL(ctx, keys.LoginThrottle(client))
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return fmt.Errorf("redis: %w", err)
	}
	if n, _ := count.Int64(); n >= maxClientFailures {
		return throttled(ttl.Val())
	}
	return nil
}

// checkLogin checks the password of the account (the hash of name) from
// client, past the throttles that count before.
func (s *Store) checkLogin(ctx context.Context, name, password, account, client string) (User, error) {
	known, err := s.knownClient(ctx, account, client)
	if err != nil {
		return User{}, err
	}
	if !known {
		if err := s.takeAccountTurn(ctx, account); err != nil {
			return User{}, err
		}
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
	// The right password is no failure: the name's attempts from the
	// client are given back and the account's delay ends.
	pipe := s.rdb.Pipeline()
	pipe.Del(ctx, keys.LoginThrottleName(client, account))
	pipe.Del(ctx, keys.LoginFailures(account))
	pipe.Del(ctx, keys.LoginGate(account))
	knownKey := keys.LoginKnown(account)
	pipe.ZAdd(ctx, knownKey, redis.Z{Score: float64(time.Now().UnixMilli()), Member: client})
	pipe.ZRemRangeByRank(ctx, knownKey, 0, -maxKnown-1)
	pipe.PExpire(ctx, knownKey, knownFor)
	if _, err := pipe.Exec(ctx); err != nil {
		return User{}, fmt.Errorf("redis: %w", err)
	}
	if u.Disabled {
		return User{}, ErrDisabled
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

// knownClient reports whether the account logged in from client within
// knownFor.
func (s *Store) knownClient(ctx context.Context, account, client string) (bool, error) {
	at, err := s.rdb.ZScore(ctx, keys.LoginKnown(account), client).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("redis: %w", err)
	}
	return time.Since(time.UnixMilli(int64(at))) < knownFor, nil
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
	failures := keys.LoginFailures(account)
	err := s.apply(ctx, failures, func(p redis.Pipeliner) {
		p.Del(ctx, failures, keys.LoginGate(account))
	})
	if err != nil {
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
	// CacheTTL (a server looks a token up again only that often); zero
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
	err := s.change(ctx, key, func(tx *redis.Tx) error {
		prev, err := tx.HGet(ctx, key, "user").Result()
		if err != nil && err != redis.Nil {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
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
		return err
	}, key)
	return settled(err, func() { s.forget(func(k string, _ cachedUser) bool { return k == hash }) })
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
// at once, and in other processes within CacheTTL.
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
	err = s.change(ctx, key, func(tx *redis.Tx) error {
		// Read again, watched: the token may have moved to another user,
		// or been revoked, since.
		rec, err := tx.HMGet(ctx, key, "user", "revoked").Result()
		if err != nil {
			return err
		}
		user, _ := rec[0].(string)
		if revoked, _ := rec[1].(string); user == "" || revoked != "" {
			return ErrTokenNotFound
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.HSet(ctx, key, "revoked", s.now().UnixMilli())
			p.PExpire(ctx, key, revokedKeep)
			p.SRem(ctx, keys.UserTokens(user), id)
			return nil
		})
		return err
	}, key)
	if errors.Is(err, ErrTokenNotFound) {
		return fmt.Errorf("%w: no token has the id %q", ErrTokenNotFound, id)
	}
	return settled(err, func() { s.forget(func(k string, _ cachedUser) bool { return k[:tokenIDLen] == id }) })
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
// is disabled. What it found is trusted for CacheTTL; unknown tokens
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
	renew := fresh && !c.refreshing && c.until.Sub(now) <= CacheTTL/4
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
	// The old key, in another slot, goes after it; should that fail, the
	// token is adopted again, to the same record, when next seen.
	err := s.apply(ctx, keys.Token(id), func(p redis.Pipeliner) {
		p.HSet(ctx, keys.Token(id), "user", name, "hash", hash)
		p.SAdd(ctx, keys.UserTokens(name), id)
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

// Migrate moves the people data that versions before the {people} hash
// tag kept (keys.OldUser, keys.OldToken, keys.OldUserTokens, keys.OldUsers)
// to the people keys, where this version reads it, and returns how many
// users and tokens it moved. Call it when an instance starts, before it
// serves: it walks the whole store (SCAN). It may run again, and in
// several instances at once: a user or token already in place is kept as
// it is, and an old key goes only once what it held is in place. The
// users' index and each user's list of tokens are made anew from the
// users and tokens found, so a user whose earlier version missed the
// index is listed again.
func (s *Store) Migrate(ctx context.Context) (users, tokens int, err error) {
	var mu sync.Mutex
	moved := func(n *int) {
		mu.Lock()
		defer mu.Unlock()
		*n++
	}
	// Tokens first: a user who is listed already has their tokens.
	err = s.migrate(ctx, keys.OldToken(""), tokenIDRE, keys.Token, func(p redis.Pipeliner, id string, rec map[string]string) {
		if rec["user"] != "" && rec["revoked"] == "" {
			p.SAdd(ctx, keys.UserTokens(rec["user"]), id)
		}
	}, func() { moved(&tokens) })
	if err == nil {
		err = s.migrate(ctx, keys.OldUser(""), nameRE, keys.User, func(p redis.Pipeliner, name string, _ map[string]string) {
			p.SAdd(ctx, keys.Users, name)
		}, func() { moved(&users) })
	}
	if err == nil {
		err = keys.Scan(ctx, s.rdb, keys.OldUserTokens("*"), func(key string) error {
			return s.rdb.Del(ctx, key).Err()
		})
	}
	if err == nil {
		err = s.rdb.Del(ctx, keys.OldUsers).Err()
	}
	if err != nil {
		return users, tokens, fmt.Errorf("move people data to its keys of today: %w", err)
	}
	if users+tokens > 0 {
		s.forget(func(string, cachedUser) bool { return true })
	}
	return users, tokens, nil
}

// migrate moves every hash whose key is oldPrefix and a name that nameRE
// matches to newKey(name), with its expiry, unless newKey(name) exists
// already; index adds to the change what lists the name. Then it deletes
// the old key, and calls moved if it made the hash anew.
func (s *Store) migrate(ctx context.Context, oldPrefix string, nameRE *regexp.Regexp, newKey func(string) string,
	index func(p redis.Pipeliner, name string, rec map[string]string), moved func()) error {
	return keys.Scan(ctx, s.rdb, oldPrefix+"*", func(old string) error {
		name := strings.TrimPrefix(old, oldPrefix)
		if !nameRE.MatchString(name) {
			return nil
		}
		var rec *redis.MapStringStringCmd
		var ttl *redis.DurationCmd
		if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			rec, ttl = p.HGetAll(ctx, old), p.PTTL(ctx, old)
			return nil
		}); err != nil {
			return err
		}
		if len(rec.Val()) == 0 {
			return nil // moved or gone meanwhile
		}
		key := newKey(name)
		made := false
		err := s.change(ctx, key, func(tx *redis.Tx) error {
			n, err := tx.Exists(ctx, key).Result()
			if err != nil {
				return err
			}
			if made = n == 0; !made {
				return nil
			}
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.HSet(ctx, key, rec.Val())
				if ttl.Val() > 0 {
					p.PExpire(ctx, key, ttl.Val())
				}
				index(p, name, rec.Val())
				return nil
			})
			return err
		}, key)
		if err != nil {
			return err
		}
		if made {
			moved()
		}
		return s.rdb.Del(ctx, old).Err()
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

// remember caches the user of a token for CacheTTL from when the
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
	if len(s.tokens) >= maxCached {
		for k, c := range s.tokens {
			if !now.Before(c.until) {
				delete(s.tokens, k)
			}
		}
		if len(s.tokens) >= maxCached {
			clear(s.tokens)
		}
	}
	s.tokens[hash] = cachedUser{user: u, until: began.Add(CacheTTL)}
	return true
}

// forget drops the cached tokens that match, after a change.
func (s *Store) forget(match func(hash string, c cachedUser) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.changes++
	maps.DeleteFunc(s.tokens, match)
	// Users change seldom: forget every name, rather than ask match.
	clear(s.names)
}

// tokenHash is a token's hex SHA-256: all that is stored of it.
func tokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// TokenID is the id of a token, as Tokens lists it.
func TokenID(token string) string { return tokenHash(token)[:tokenIDLen] }

// msTime reads a time stored as Unix ms; zero if there is none.
func msTime(ms string) time.Time {
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(n).UTC()
}
