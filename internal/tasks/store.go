// Package tasks is claimdesk's dispatch engine: named queues of jobs for
// people, kept in Redis. Every change of state is one atomic Lua script over
// the queue's sorted sets (lua/), so a job is never lost and never held by
// two operators, with any number of web instances, on a standalone Redis or a
// Redis Cluster. Claims are reservations with a deadline judged by the Redis
// clock and a fencing token: only the live token may finish a job.
package tasks

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"claimdesk/internal/skills"

	"github.com/redis/go-redis/v9"
)

// Store is the dispatch engine over one Redis (standalone, Sentinel or
// Cluster). It is safe for concurrent use.
type Store struct {
	rdb   redis.UniversalClient
	clock func() time.Time
	// observers are told of every change (Observe); copied on write,
	// under observeMu.
	observers atomic.Pointer[[]Observer]
	observeMu sync.Mutex
	// forms are the outcome forms of the queues the Store completed
	// jobs of, by queue name (completeHeld).
	forms sync.Map
	// minReplicas must confirm a change within replicaTimeout before it is
	// answered as done (WithMinReplicas).
	minReplicas    int
	replicaTimeout time.Duration
	// enqueues and changes are the calls waiting to go together (lines).
	enqueues lines[*enqueueRequest]
	changes  lines[*scriptCall]
	// routes are the queues' skills lines as last read, by queue name
	// (*routesSeen, routing.go).
	routes sync.Map
}

// Option configures a Store.
type Option func(*Store)

// WithClock makes the scripts judge time by clock instead of Redis TIME.
// Tests use it to move time explicitly; production leaves Redis the one clock.
func WithClock(clock func() time.Time) Option {
	return func(s *Store) { s.clock = clock }
}

// New returns a Store over rdb.
func New(rdb redis.UniversalClient, opts ...Option) *Store {
	s := &Store{rdb: rdb}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Limits of the engine.
const (
	// MaxBatch is the most jobs one Enqueue call takes.
	MaxBatch = 1000
	// MaxPayloadBytes is the largest payload or result, JSON-encoded.
	MaxPayloadBytes = 64 << 10
	// DefaultPriority is the priority of a job that sets none.
	DefaultPriority = 50
	// promoteOnClaim bounds the expired reservations one claim reclaims and
	// the scheduled jobs it promotes.
	promoteOnClaim = 100
	// MaxSkips bounds how many unfinished jobs of a queue one operator may
	// have skipped, and so how many ready jobs one claim looks past.
	MaxSkips = 1000
	// maxBatchBytes bounds the payloads of one Enqueue call together, so
	// one script never carries more than a few megabytes.
	maxBatchBytes = 8 << 20
	// MaxMaintainBatch bounds the limit of one reclaim, promote or purge call.
	MaxMaintainBatch = 1000
)

// nowArg is the scripts' "now" argument: empty, so they read Redis TIME,
// unless the Store has a clock.
func (s *Store) nowArg() string {
	if s.clock == nil {
		return ""
	}
	return strconv.FormatInt(ms(s.clock()), 10)
}

// now is the Store's idea of the current time, for values computed in Go
// (ids). Scripts judge deadlines by Redis TIME, never by this.
func (s *Store) now() time.Time {
	if s.clock == nil {
		return time.Now()
	}
	return s.clock()
}

// Reservation is a claimed job and the token that proves the claim.
type Reservation struct {
	Job *Job
	// Token must accompany every action on the job while it is reserved.
	Token string
	// Deadline is when the reservation ends unless extended.
	Deadline time.Time
}

// Hold is what a holder's action carries: who acts, and the token of the
// reservation they act on. Only the holder's own token works. Training
// says the holder is in training: each of their completions waits for
// review (lua/lib.lua, Review).
type Hold struct {
	Holder   string
	Token    string
	Training bool
}

// Hold returns the proof that the reservation's holder acts on it.
func (r *Reservation) Hold() Hold { return Hold{Holder: r.Job.ReservedBy, Token: r.Token} }

// ClaimOption refines a claim.
type ClaimOption func(*claimArgs)

type claimArgs struct {
	key, job string
	// skills are the operator's.
	skills skills.Set
	// own says that key is the engine's own ("next <id>": CompleteNext),
	// not a client's.
	own bool
	// again answers only a live reservation made with key, and claims
	// nothing new.
	again bool
	// review claims a job waiting for review (ForReview).
	review bool
}

// WithClaimKey makes the claim idempotent: while the reservation it made
// lasts, a claim by the same operator with the same key answers that
// reservation again instead of taking another job. key is 1 to 200
// printable ASCII characters.
func WithClaimKey(key string) ClaimOption { return func(a *claimArgs) { a.key = key } }

// WithSkills claims as someone with these skills: jobs routed to skills
// are claimable by those whose skills cover them. Without it the operator
// has none.
func WithSkills(have skills.Set) ClaimOption {
	return func(a *claimArgs) { a.skills = have }
}

// OnlyJob claims the job with this id, if it is in line for the operator,
// and nothing else: ErrNotReady when it is not.
func OnlyJob(id string) ClaimOption { return func(a *claimArgs) { a.job = id } }

// Claim reserves the best-ranked ready job of the queue that the operator
// has not skipped. It first promotes due scheduled jobs. When nothing is
// ready it returns nil and no error.
func (s *Store) Claim(ctx context.Context, queue, operator string, opts ...ClaimOption) (*Reservation, error) {
	if !validQueueName(queue) {
		return nil, ErrQueueNotFound
	}
	if err := validName("operator", operator); err != nil {
		return nil, err
	}
	var a claimArgs
	for _, o := range opts {
		o(&a)
	}
	if err := ValidIdempotencyKey(a.key); err != nil && !a.own {
		return nil, err
	}
	if a.job != "" {
		q, ok := queueOf(a.job)
		if !ok || q != queue {
			return nil, ErrNotReady
		}
		a.job = localID(a.job)
	}
	again := ""
	if a.again {
		again = "1"
	}
	r, err := s.routed(ctx, queue, a.skills, func(version, lines string) (*reply, error) {
		if a.review {
			version, lines = reviewLine, ""
		}
		return s.run(ctx, claimScript, queue, s.nowArg(), operator, newToken(), promoteOnClaim, MaxSkips, a.key, a.job, again, version, lines)
	})
	if err != nil || !r.more() { // nothing ready
		return nil, err
	}
	job := r.job()
	if err := r.done(); err != nil {
		return nil, err
	}
	return reservationOf(job, operator), nil
}

// reservationOf is holder's live reservation of a reserved job: of one
// several hold at once, theirs (Job.HeldBy).
func reservationOf(job *Job, holder string) *Reservation {
	if v := job.HeldBy(holder); v != nil {
		job = v
	}
	return &Reservation{Job: job, Token: job.token, Deadline: *job.Deadline}
}

// Complete finishes the reserved job with a result (a JSON object, or
// empty) that fits the queue's outcome form, if it has one: else it fails
// with an *OutcomeError (ErrInvalid) and changes nothing. It fails with
// ErrReservationLost unless h is the live reservation's, ErrForbidden when
// someone else sends the holder's token; only the holder is told whether
// the result fits. A retry after it took effect answers the job again (the
// result sent first stays).
func (s *Store) Complete(ctx context.Context, id string, h Hold, result json.RawMessage) (*Job, error) {
	return s.complete(ctx, id, h, result, "")
}

// complete runs complete.lua in mode ("": a completion; "approve": a
// reviewer's approval).
func (s *Store) complete(ctx context.Context, id string, h Hold, result json.RawMessage, mode string) (*Job, error) {
	body, err := jsonObject("result", result)
	if err != nil {
		return nil, err
	}
	queue, ok := queueOf(id)
	if !ok {
		return nil, ErrNotFound
	}
	r, err := s.completeHeld(ctx, completeScript, queue, id, h, body, mode)
	if err != nil {
		return nil, err
	}
	c := r.completion(false, h.Holder)
	if err := r.done(); err != nil {
		return nil, err
	}
	if err := s.withAnswers(ctx, c.job); err != nil {
		return nil, err
	}
	return c.job.seenBy(h.Holder), nil
}

// withAnswers reads into a job of a queue with overlap its answers and
// their agreement, and into one waiting for review the result that waits.
func (s *Store) withAnswers(ctx context.Context, j *Job) error {
	if j == nil || j.Overlap == 0 && j.Review == nil {
		return nil
	}
	queue, _ := queueOf(j.ID)
	values, err := s.rdb.HMGet(ctx, keysFor(queue).Result(), answerFields(localID(j.ID))...).Result()
	if err != nil {
		return redisErr(err)
	}
	return j.readResult(values)
}

// CompleteNext completes the reserved job as Complete does (its result
// must fit the queue's outcome form) and, in the same atomic call, claims
// the next job of its queue for the holder as Claim does: the loop of a
// person working a queue, in one call. The next reservation is nil when
// none was claimed, and why is then ErrQueuePaused or ErrHoldLimit if that
// is why, nil if nothing is ready. A retry after it took effect answers
// the same completed job and, while it lasts, the same next reservation;
// it never claims another.
func (s *Store) CompleteNext(ctx context.Context, id string, h Hold, result json.RawMessage, opts ...ClaimOption) (done *Job, next *Reservation, why, err error) {
	var a claimArgs
	for _, o := range opts {
		o(&a)
	}
	body, err := jsonObject("result", result)
	if err != nil {
		return nil, nil, nil, err
	}
	queue, ok := queueOf(id)
	if !ok {
		return nil, nil, nil, ErrNotFound
	}
	version, lines := s.givenLines(queue, a.skills)
	r, err := s.completeHeld(ctx, completeNextScript, queue, id, h, body, "", newToken(), promoteOnClaim, MaxSkips, version, lines)
	if err != nil {
		return nil, nil, nil, err
	}
	c := r.completion(true, h.Holder)
	if err := r.done(); err != nil {
		return nil, nil, nil, err
	}
	if errors.Is(c.why, errRoutesChanged) {
		// The queue's skills lines changed meanwhile: the job is
		// complete; the next claim, with the same key, is made again.
		c.next, c.why = s.Claim(ctx, queue, h.Holder, WithSkills(a.skills), func(x *claimArgs) { x.key, x.own = "next "+localID(id), true })
		if c.why != nil && !errors.Is(c.why, ErrQueuePaused) && !errors.Is(c.why, ErrHoldLimit) {
			return c.job, nil, nil, c.why
		}
	}
	if err := s.withAnswers(ctx, c.job); err != nil {
		return nil, nil, nil, err
	}
	return c.job.seenBy(h.Holder), c.next, c.why, nil
}

// completion is the answer of complete.lua and complete_next.lua.
type completion struct {
	// job is the completed job, with the result kept.
	job *Job
	// next is the reservation complete_next.lua made, if any; why is why
	// it made none, when not for want of a ready job.
	next *Reservation
	why  error
}

// completion reads a completion's answer: the job, the result kept, and
// with next the next job holder claimed (id, metadata, payload: all empty
// for none) and the status of why none was claimed.
func (r *reply) completion(next bool, holder string) completion {
	var c completion
	c.job = r.job()
	if kept := r.str("result kept"); c.job != nil && kept != "" {
		c.job.Result = json.RawMessage(kept)
	}
	if !next {
		return c
	}
	if len(r.values) > 0 && r.values[0] == "" {
		r.str("next id")
		r.str("next metadata")
		r.str("next payload")
		c.why = statusErrors[r.str("why no next")] // none for "empty"
		return c
	}
	if claimed := r.job(); claimed != nil {
		c.next = reservationOf(claimed, holder)
	}
	r.str("why no next")
	return c
}

// formSeen is a queue's outcome form as the Store last read it: the form,
// and the SHA-1 of its stored text, by which the completion scripts know
// it (complete_held, lua/lib.lua).
type formSeen struct {
	form *Outcome
	sum  string
}

// formTries bounds how often one completion meets a form changed since
// the Store last read it.
const formTries = 10

// completeHeld runs a completion script (complete or complete_next) with
// the result body and the script's further args, judged by the queue's
// outcome form. The result is checked here, in Go, against the form the
// Store last saw of the queue; the script completes the job only if that
// is still the queue's form, read in the same atomic call, and otherwise
// answers the form as it is now, to check the result again. So a
// completion is judged by the form of the instant it takes effect,
// whatever settings change meanwhile. The script tells the form apart
// from others only for the job's holder, after the hold is checked.
func (s *Store) completeHeld(ctx context.Context, sc script, queue, id string, h Hold, body, mode string, args ...any) (*reply, error) {
	// The last answer to a job with overlap completes it with what the
	// answers agree on: the script hands them here to agree once.
	var agreed agreeing
	training := ""
	if h.Training {
		training = "1"
	}
	// A share of the completions goes to review (Queue.ReviewFraction).
	roll := strconv.FormatFloat(rand.Float64(), 'f', -1, 64)
	for range formTries {
		var seen formSeen // none seen: a sum no form has
		if v, ok := s.forms.Load(queue); ok {
			seen = v.(formSeen)
		}
		problem := seen.form.Check(json.RawMessage(body))
		fits := "1"
		if problem != nil {
			fits = "0"
		}
		res, err := s.holderCall(ctx, sc, queue, id, h, append([]any{body, seen.sum, fits,
			agreed.count, agreed.agreement, agreed.result, agreed.lowest, agreed.judged, roll, training, mode}, args...)...)
		var changed *formChanged
		var last *toAgree
		switch {
		case errors.As(err, &changed):
			sum := sha1.Sum([]byte(changed.stored))
			s.forms.Store(queue, formSeen{form: storedOutcome(changed.stored), sum: hex.EncodeToString(sum[:])})
			continue
		case errors.As(err, &last):
			if agreed, err = seen.form.agreeing(last.answers); err != nil {
				return nil, err
			}
			continue
		case errors.Is(err, errUnfit):
			return nil, problem
		}
		return res, err
	}
	return nil, fmt.Errorf("complete %s: %w", id, errSettingsChanged)
}

// Release gives the reserved job back: it returns to its place in line.
func (s *Store) Release(ctx context.Context, id string, h Hold) (*Job, error) {
	return s.fenced(ctx, releaseScript, id, h, "", MaxSkips)
}

// Skip gives the reserved job back, and it is never offered to its holder
// again while it waits (other operators still get it). An operator may have
// skipped at most MaxSkips unfinished jobs of a queue (ErrSkipLimit).
func (s *Store) Skip(ctx context.Context, id string, h Hold) (*Job, error) {
	return s.fenced(ctx, releaseScript, id, h, "skip", MaxSkips)
}

// Fail reports that the holder could not do the job. It goes back in line
// for another attempt, and, as after Skip, is not offered to its holder
// again while it waits; or it is dead when its attempts are used up. A
// holder who has skipped MaxSkips unfinished jobs of the queue may still
// fail one: it goes back in line without that mark, and may come back to
// them.
func (s *Store) Fail(ctx context.Context, id string, h Hold, reason string) (*Job, error) {
	if err := ValidReason(reason); err != nil {
		return nil, err
	}
	return s.fenced(ctx, failScript, id, h, reason, MaxSkips)
}

// ExtendOption refines a request for more time.
type ExtendOption func(*extendArgs)

type extendArgs struct {
	key          string
	fromDeadline bool
}

// WithExtendKey makes the extension idempotent: a retry with the key of
// the reservation's latest extension answers the job as it is and spends
// no second extension. key is 1 to 200 printable ASCII characters, as a
// claim's (WithClaimKey).
func WithExtendKey(key string) ExtendOption { return func(a *extendArgs) { a.key = key } }

// FromDeadline counts the seconds of an extension from the reservation's
// deadline, not from now: they are added to the time left.
func FromDeadline() ExtendOption { return func(a *extendArgs) { a.fromDeadline = true } }

// Extend moves the reservation's deadline to seconds from now. It never
// moves it backward, and stops at the queue's max extensions and max hold
// (ErrExtensionLimit). It returns the job with its new deadline.
func (s *Store) Extend(ctx context.Context, id string, h Hold, seconds int, opts ...ExtendOption) (*Job, error) {
	if seconds < 1 || seconds > day {
		return nil, invalid("seconds", "must be between 1 and %d", day)
	}
	var a extendArgs
	for _, o := range opts {
		o(&a)
	}
	if err := ValidIdempotencyKey(a.key); err != nil {
		return nil, err
	}
	from := ""
	if a.fromDeadline {
		from = "deadline"
	}
	return s.fenced(ctx, extendScript, id, h, seconds, a.key, from)
}

// fenced runs one of the holder's actions: id, token, holder and the
// action's own arguments. A retry of the action after it took effect
// answers the job as it is now.
func (s *Store) fenced(ctx context.Context, sc script, id string, h Hold, args ...any) (*Job, error) {
	queue, ok := queueOf(id)
	if !ok {
		return nil, ErrNotFound
	}
	r, err := s.holderCall(ctx, sc, queue, id, h, args...)
	if err != nil {
		return nil, err
	}
	job := r.job().seenBy(h.Holder)
	return job, r.done()
}

// holderCall runs a holder's action script on the queue's job id.
func (s *Store) holderCall(ctx context.Context, sc script, queue, id string, h Hold, args ...any) (*reply, error) {
	if h.Token == "" || h.Holder == "" {
		return nil, ErrReservationLost
	}
	return s.run(ctx, sc, queue, append([]any{s.nowArg(), localID(id), h.Token, h.Holder}, args...)...)
}

// Cancel withdraws a ready or scheduled job, for actor. With force
// (supervisors) it also cancels a reserved job; its holder's token dies.
// Finished jobs give ErrInvalidState. It returns the job and its former
// holder, if any.
func (s *Store) Cancel(ctx context.Context, id, actor string, force bool, opts ...SuperviseOption) (*Job, string, error) {
	mode := ""
	if force {
		mode = "force"
	}
	return s.supervise(ctx, cancelScript, id, actor, opts, mode)
}

// Requeue puts a dead job back in line with its attempts reset, or takes a
// reserved job from its holder and puts it back in its place (force
// release), for actor. Other states give ErrInvalidState. It returns the
// job and its former holder, if any.
func (s *Store) Requeue(ctx context.Context, id, actor string, opts ...SuperviseOption) (*Job, string, error) {
	return s.supervise(ctx, requeueScript, id, actor, opts)
}

// Assign routes a job to one person, for actor (a supervisor): only they
// may claim it from then on. A waiting job (ready or scheduled) keeps its
// place; a reserved one is transferred: the reservation ends (its
// holder's token dies) and it waits in its place for the person.
// Finished jobs give ErrInvalidState. Whether the person may work the
// queue is the caller's to check. It returns the job and its former
// holder, if any.
func (s *Store) Assign(ctx context.Context, id, person, actor string, opts ...SuperviseOption) (*Job, string, error) {
	if err := validPerson("person", person); err != nil {
		return nil, "", err
	}
	return s.supervise(ctx, assignScript, id, actor, opts, person)
}

// SuperviseOption refines a supervisor's action on a job.
type SuperviseOption func(*seen)

// seen is the job as the supervisor saw it (zero: as it is), and why
// they act ("": no reason given).
type seen struct {
	state  State
	holder string
	reason string
}

// ValidReason checks a reason given for an action, a failure's or a
// supervisor's: at most 2000 bytes of UTF-8 (else ErrInvalid).
func ValidReason(reason string) error {
	if len(reason) > 2000 || !utf8.ValidString(reason) {
		return invalid("reason", "must be at most 2000 bytes of UTF-8 text")
	}
	return nil
}

// AsSeen acts on the job only if it is still in the state the supervisor
// saw (and, reserved, still held by holder), else ErrInvalidState: a page
// that has gone stale neither takes a reservation made since nor requeues
// a job that came back to life. Of a job several hold at once, holder
// names the one whose reservation the change takes, or is EveryHolder of
// those seen: a force release or a cancel then ends every reservation
// (a transfer is refused).
func AsSeen(state State, holder string) SuperviseOption {
	return func(s *seen) { s.state, s.holder = state, holder }
}

// EveryHolder names, for AsSeen, every holder of a job several hold at
// once, as seen (lua/lib.lua, as_seen).
func EveryHolder(j *Job) string { return strings.Join(j.HolderNames(), "\n") }

// WithReason says why the supervisor acts: kept in the job's history
// entry of the change (and shown to a holder whose reservation it ends).
func WithReason(reason string) SuperviseOption {
	return func(s *seen) { s.reason = reason }
}

// ReasonOf is the reason opts give (WithReason), "" for none: for a
// record of the change beside the job's own.
func ReasonOf(opts ...SuperviseOption) string {
	var as seen
	for _, o := range opts {
		o(&as)
	}
	return as.reason
}

// supervise runs a supervisor's action on a job for actor with now, the
// job's id, args, the actor, the state and holder seen and the reason; the script
// answers the job and its former holder.
func (s *Store) supervise(ctx context.Context, sc script, id, actor string, opts []SuperviseOption, args ...any) (*Job, string, error) {
	if err := validName("actor", actor); err != nil {
		return nil, "", err
	}
	queue, ok := queueOf(id)
	if !ok {
		return nil, "", ErrNotFound
	}
	var as seen
	for _, o := range opts {
		o(&as)
	}
	if err := ValidReason(as.reason); err != nil {
		return nil, "", err
	}
	args = append([]any{s.nowArg(), localID(id)}, args...)
	r, err := s.run(ctx, sc, queue, append(args, actor, string(as.state), as.holder, as.reason)...)
	if err != nil {
		return nil, "", err
	}
	job, holder := r.job(), r.str("former holder")
	if err := r.done(); err != nil {
		return nil, "", err
	}
	return job, holder, nil
}

// Results returns the results of the jobs named (those that have one),
// by id, in one round trip per Redis node.
func (s *Store) Results(ctx context.Context, ids []string) (map[string]json.RawMessage, error) {
	cmds := make(map[string]*redis.StringCmd, len(ids))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, id := range ids {
			if queue, ok := queueOf(id); ok {
				cmds[id] = p.HGet(ctx, keysFor(queue).Result(), localID(id))
			}
		}
		return nil
	})
	if err != nil && err != redis.Nil {
		return nil, redisErr(err)
	}
	out := make(map[string]json.RawMessage, len(cmds))
	for id, c := range cmds {
		if r := c.Val(); r != "" {
			out[id] = json.RawMessage(r)
		}
	}
	return out, nil
}

// Get returns the job with its payload and result, and its answers and
// their agreement if it has any.
func (s *Store) Get(ctx context.Context, id string) (*Job, error) {
	queue, ok := queueOf(id)
	if !ok {
		return nil, ErrNotFound
	}
	k := keysFor(queue)
	var metaCmd, payloadCmd *redis.StringCmd
	var resultCmd *redis.SliceCmd
	// One slot, so one pipeline reaches one node even on a cluster.
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		metaCmd = p.HGet(ctx, k.Meta(), localID(id))
		payloadCmd = p.HGet(ctx, k.Payload(), localID(id))
		resultCmd = p.HMGet(ctx, k.Result(), answerFields(localID(id))...)
		return nil
	})
	if err != nil && err != redis.Nil {
		return nil, redisErr(err)
	}
	if metaCmd.Err() == redis.Nil {
		return nil, ErrNotFound
	}
	job, err := decodeJob(id, metaCmd.Val(), payloadCmd.Val(), s.now())
	if err != nil {
		return nil, err
	}
	if err := job.readResult(resultCmd.Val()); err != nil {
		return nil, fmt.Errorf("job %s: %w", id, err)
	}
	return job, nil
}

// answerFields are the fields of keys.Queue.Result that hold what the job
// came to: its result, its answers and their agreement (lua/lib.lua,
// Overlap), and the result that waits for review (Review).
func answerFields(id string) []string {
	return []string{id, id + "\nanswers", id + "\nagreement", id + "\nreview"}
}

// readResult reads into the job the values of its answerFields, as read
// (nil for a field not there).
func (j *Job) readResult(values []any) error {
	text := func(i int) string {
		if i < len(values) {
			v, _ := values[i].(string)
			return v
		}
		return ""
	}
	if r := text(0); r != "" {
		j.Result = json.RawMessage(r)
	}
	if a := text(1); a != "" {
		var err error
		if j.Answers, err = decodeAnswers(a); err != nil {
			return err
		}
	}
	if j.Review != nil && text(3) != "" {
		j.Review.Result = json.RawMessage(text(3))
	}
	var err error
	j.Agreement, err = decodeAgreement(text(2))
	return err
}

// QueueOf returns the queue named in a job or batch id, or false if id is
// not one.
func QueueOf(id string) (string, bool) { return queueOf(id) }

// Held returns the live reservation of the job if operator holds it, so a
// holder's page can act with the token of the reservation it shows. Any
// other case gives ErrReservationLost (ErrNotFound for no such job).
func (s *Store) Held(ctx context.Context, id, operator string) (*Reservation, error) {
	job, err := s.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if job = job.HeldBy(operator); job == nil {
		return nil, ErrReservationLost
	}
	return &Reservation{Job: job, Token: job.token, Deadline: *job.Deadline}, nil
}
