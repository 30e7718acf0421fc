// Package keys is the registry of claimdesk's Redis keys: every key
// claimdesk uses is named here and nowhere else, each with its Redis type,
// its contents, and the package that owns it (reads and writes it). Other
// packages build their keys only through this one.
//
// There are three kinds of keys. Per-queue keys, made by ForQueue, all carry
// the hash tag {queue} as cd:{<queue>}:<suffix>, so every key of one queue
// lives in one Redis Cluster slot and one Lua script can touch them
// together. People keys (users, their index, API tokens) all carry the
// hash tag {people} as cd:{people}:<suffix>, so one transaction changes
// any of them together. Global keys carry no hash tag of a queue or of the
// people, and no queue script ever touches them: a script only reaches the
// keys of its own queue.
//
// Inside the per-queue keys a job or batch is known by its ULID alone,
// without the ".queue" of its public id.
//
// The package is a leaf: it imports nothing of claimdesk.
package keys

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// QueueNamePattern is the rule of a queue's name, as a regular expression
// without anchors: lowercase letters, digits, '-' and '_', starting with a
// letter or digit, at most 64. It is the one home of the rule: a queue's
// name is in every key of the queue, the engine and the people's grants
// check it (ValidQueue), and the new queue form's input takes it as its
// pattern.
const QueueNamePattern = `[a-z0-9][a-z0-9_-]{0,63}`

// ValidQueue reports whether name is a queue's name (QueueNamePattern),
// checked by hand rather than by regexp since every engine call asks.
func ValidQueue(name string) bool {
	if len(name) == 0 || len(name) > 64 || name[0] == '_' || name[0] == '-' {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Prefix starts every claimdesk key, so a claimdesk store can share a Redis
// database with other data.
const Prefix = "cd:"

// Pattern matches every claimdesk key and nothing else, for SCAN: seed
// --reset deletes what it matches.
const Pattern = Prefix + "*"

// Scan calls fn with every key that matches pattern (made of this
// registry's names: Pattern, say), on every master of a Redis Cluster,
// where it calls fn from one goroutine per master at once. As with SCAN, a
// key made or removed meanwhile may or may not be seen.
func Scan(ctx context.Context, rdb redis.UniversalClient, pattern string, fn func(key string) error) error {
	each := func(ctx context.Context, c *redis.Client) error {
		iter := c.Scan(ctx, 0, pattern, 1000).Iterator()
		for iter.Next(ctx) {
			if err := fn(iter.Val()); err != nil {
				return err
			}
		}
		return iter.Err()
	}
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, each)
	case *redis.Client:
		return each(ctx, c)
	}
	return fmt.Errorf("scan: unsupported client %T", rdb)
}

// Global keys: no hash tag, and never touched by a queue script.

// Format is a STRING: the storage format of the engine's data in this Redis,
// checked by every command before it works on the store. Owner:
// internal/tasks (CheckFormat).
const Format = Prefix + "format"

// Queues is a SET of every queue name. Owner: internal/tasks.
const Queues = Prefix + "queues"

// Online is a ZSET of the users who have a page open (a websocket) on some
// instance, each scored by when an instance last said so (Unix ms).
// Owner: internal/notify (Presence).
const Online = Prefix + "online"

// LastAction is a HASH of user name → when the user last changed a job
// (Unix ms, from the transitions of their calls). Owner: internal/notify
// (Announcer).
const LastAction = Prefix + "lastaction"

// Audit is a STREAM of the administrative actions, oldest first, capped at
// about audit.Keep entries: each entry has the fields actor, action,
// target and detail; its id says when. Owner: internal/audit.
const Audit = Prefix + "audit"

// LoginThrottle returns the key that counts the failed login attempts from
// one client (its address), for any names: a STRING counter that expires at
// the end of the throttle window. Owner: internal/users.
func LoginThrottle(client string) string { return Prefix + "loginthrottle:" + client }

// LoginThrottleName returns the key that counts the login attempts for one
// name from one client, given the hash of the name (never the name itself):
// a STRING counter that expires at the end of the throttle window. Owner:
// internal/users.
func LoginThrottleName(client, nameHash string) string { return LoginThrottle(client) + "|" + nameHash }

// LoginFailures returns the key that counts an account's failed logins in a
// row, from any address, given the hash of the name: a STRING counter that
// expires an hour after the last attempt. It carries the hash as a hash
// tag, as LoginGate does, so that one transaction ends both (Unlock).
// Owner: internal/users.
func LoginFailures(nameHash string) string { return Prefix + "loginfailures:{" + nameHash + "}" }

// LoginGate returns the key that holds back logins to an account that
// failed too often, given the hash of the name: a STRING that exists, with
// an expiry, until the account takes its next try. Owner: internal/users.
func LoginGate(nameHash string) string { return Prefix + "logingate:{" + nameHash + "}" }

// LoginKnown returns the key of the client addresses that logged in to an
// account, given the hash of the name: a ZSET of addresses scored by the
// time of their latest login in ms, the latest few kept, expiring a while
// after the last. Owner: internal/users.
func LoginKnown(nameHash string) string { return Prefix + "loginknown:" + nameHash }

// RateLimit returns the name of the rate limit of one kind of request
// (scope) from one client address or user, or for the hash of one name
// typed at the login (who). The limiter,
// github.com/go-redis/redis_rate, keeps it under its own prefix, as the key
// "rate:" + this name: a STRING (when the limit is next whole, as the
// library's GCRA reckons it) that expires by then. Owner:
// internal/handlers (the rate limits).
func RateLimit(scope, who string) string { return Prefix + "rate:" + scope + ":" + who }

// Session returns the key of one web session, given its scs token: a STRING
// of the session's data as scs encodes it, expiring with the session.
// Owner: internal/handlers.
func Session(token string) string { return Prefix + "session:" + token }

// Instances is a ZSET of web instance id → last heartbeat in ms, the
// registry of live instances that notices are published to. Owner:
// internal/notify (the bus; internal/cron prunes it through the bus).
const Instances = Prefix + "instances"

// Notices returns the key of one web instance's inbox: a LIST of notices
// (JSON) that other instances pushed to it, capped in length. Owner:
// internal/notify (the bus).
func Notices(instance string) string { return Prefix + "notices:" + instance }

// CronLock returns the key of the lock of one periodic task: a STRING set
// with SET NX PX to the id of the instance running the task, expiring
// within one interval, so that instances running cron at once do not
// duplicate the task's work. Owner: internal/cron.
func CronLock(task string) string { return Prefix + "cronlock:" + task }

// Recent returns the key of one person's most recent finished jobs: a LIST
// of JSON entries, newest first, trimmed to a few dozen. Owner:
// internal/notify (the announcer writes it).
func Recent(user string) string { return Prefix + "recent:" + user }

// Webhook keys. The registry of endpoints carries the hash tag
// {webhooks}; each endpoint's deliveries carry a hash tag of their own,
// {wh:<endpoint id>}, so that one script changes a delivery, its place in
// the endpoint's schedule and the endpoint's health together, and the
// endpoints' deliveries spread over a cluster. Owner of every one:
// internal/webhooks.

// WebhookEndpoints is a HASH of endpoint id → the endpoint's record as
// JSON: its URL, events, queues, owner, whether it is enabled (and why
// not), when it was made, and its signing secrets, sealed, each with when
// it stops signing (a rotated-out secret keeps signing for a while).
const WebhookEndpoints = Prefix + "{webhooks}:endpoints"

// webhook is the start of every key of one endpoint's deliveries.
func webhook(id string) string { return Prefix + "{wh:" + id + "}:" }

// WebhookDeliveries returns the key of one endpoint's deliveries: a HASH
// of event id → the delivery's record as JSON (the event's type, queue
// and time, the body sent, attempts, state, the last answer, the next
// attempt).
func WebhookDeliveries(id string) string { return webhook(id) + "deliveries" }

// WebhookDue returns the key of one endpoint's schedule: a ZSET of event
// id → when its next attempt is due (ms), for every delivery still to be
// made; while an attempt is under way, when the attempt's lease ends and
// another deliverer may try again.
func WebhookDue(id string) string { return webhook(id) + "due" }

// WebhookLog returns the key of one endpoint's log: a ZSET of event id →
// when the event happened (ms), for every delivery the endpoint keeps;
// the oldest finished ones are dropped beyond a cap.
func WebhookLog(id string) string { return webhook(id) + "log" }

// WebhookHealth returns the key of one endpoint's health: a HASH of
// failing_since (ms: when its attempts began to fail, absent while the
// last one succeeded), succeeded_at (ms: its last success) and lost (how
// many deliveries its backlog's cap dropped).
func WebhookHealth(id string) string { return webhook(id) + "health" }

// People keys: all carry the hash tag {people}, so that every key of the
// people data lives in one Redis Cluster slot and one MULTI/EXEC changes
// a user, the index of users and their tokens together. Owner of every
// one: internal/users.

// people is the start of every people key, hash tag included.
const people = Prefix + "{people}:"

// Users is a SET of every user name.
const Users = people + "users"

// User returns the key of the named user, a HASH of role, queues (comma
// separated), password (a bcrypt hash; absent for producers), disabled
// ("1" while the user is disabled; absent otherwise), away ("1" while the
// user says they are away; absent otherwise) and epoch (a counter
// that a new password and disabling move on, ending every session begun
// before; absent means 0).
func User(name string) string { return people + "user:" + name }

// Token returns the key of one API token's record, given the token's id
// (the first 16 hex digits of the token's SHA-256): a HASH of user, hash
// (the token's whole SHA-256 in hex; the token itself is never stored),
// created and used (Unix ms: when it was made, when it was last presented)
// and revoked (Unix ms, once revoked; the record then expires soon after).
func Token(id string) string { return people + "token:" + id }

// UserTokens returns the key of the SET of the ids of one user's API
// tokens.
func UserTokens(name string) string { return people + "usertokens:" + name }

// Keys of the people data as versions before the {people} hash tag kept
// them: without a hash tag, each in a slot of its own. claimdesk no longer
// writes them: internal/users (Store.Migrate) moves what they hold to the
// people keys above when an instance starts.

// OldUsers is where versions before the {people} hash tag kept Users.
const OldUsers = Prefix + "users"

// OldUser is where versions before the {people} hash tag kept User(name).
func OldUser(name string) string { return Prefix + "user:" + name }

// OldToken is where versions before the {people} hash tag kept Token(id).
func OldToken(id string) string { return Prefix + "token:" + id }

// OldUserTokens is where versions before the {people} hash tag kept
// UserTokens(name).
func OldUserTokens(name string) string { return Prefix + "usertokens:" + name }

// APIToken returns the key under which versions before token ids kept an
// API token, given as the hex SHA-256 of the token: a STRING holding the
// name of the user the token belongs to. claimdesk no longer writes it: it
// moves such a token to its Token record the first time it sees it (used,
// listed or revoked). Owner: internal/users.
func APIToken(sha256Hex string) string { return Prefix + "apitoken:" + sha256Hex }

// Per-queue keys: all carry the hash tag {queue}. Owner of every one:
// internal/tasks (the engine and its Lua scripts).

// Queue names the keys of one queue. Make one with ForQueue.
type Queue struct{ name string }

// ForQueue returns the keys of the named queue.
func ForQueue(name string) Queue { return Queue{name: name} }

// Name returns the name of the queue whose keys q names.
func (q Queue) Name() string { return q.name }

// Part names one key of a queue by what follows the hash tag in it
// (cd:{<queue>}:<part>). The engine's scripts know each key they are
// handed by its part (K.<part> in internal/tasks/lua/lib.lua), so a
// script's keys are declared as a list of parts.
type Part string

// The parts of a queue's keys, one per method of Queue below, which says
// what each key holds.
const (
	PartConf       Part = "conf"
	PartReady      Part = "ready"
	PartScheduled  Part = "scheduled"
	PartReserved   Part = "reserved"
	PartCompleted  Part = "completed"
	PartDead       Part = "dead"
	PartCanceled   Part = "canceled"
	PartMeta       Part = "meta"
	PartPayload    Part = "payload"
	PartResult     Part = "result"
	PartIdem       Part = "idem"
	PartSkips      Part = "skips"
	PartSkipCount  Part = "skipcount"
	PartBatches    Part = "batches"
	PartBatchIndex Part = "batchindex"
	PartBatchDone  Part = "batchdone"
	PartParked     Part = "parked"
	PartMembers    Part = "members"
	PartClaims     Part = "claims"
	PartHolding    Part = "holding"
	PartNumbers    Part = "numbers"
	PartPeople     Part = "people"
	PartWaiting    Part = "waiting"
	PartOutbox     Part = "outbox"
	PartDrafts     Part = "drafts"
	PartSLA        Part = "sla"
	PartLate       Part = "late"
	PartReadyDue   Part = "readydue"
	PartMoving     Part = "moving"
	PartMoved      Part = "moved"
	PartMovedAt    Part = "movedat"
	PartAway       Part = "away"
	PartReturns    Part = "returns"
	PartRouted     Part = "routed"
	PartRoutes     Part = "routes"
	PartFallback   Part = "fallback"
	PartHeads      Part = "heads"
)

// Parts lists every part of a queue's keys, in the order of All.
var Parts = []Part{
	PartConf, PartReady, PartScheduled, PartReserved, PartCompleted,
	PartDead, PartCanceled, PartMeta, PartPayload, PartResult, PartIdem,
	PartSkips, PartSkipCount, PartBatches, PartBatchIndex, PartBatchDone,
	PartParked, PartMembers, PartClaims, PartHolding, PartNumbers,
	PartPeople, PartWaiting, PartOutbox, PartDrafts, PartSLA, PartLate,
	PartReadyDue, PartMoving, PartMoved, PartMovedAt, PartAway, PartReturns,
	PartRouted, PartRoutes, PartFallback, PartHeads,
}

// Key returns the queue's key of the given part, under the hash tag.
func (q Queue) Key(p Part) string { return Prefix + "{" + q.name + "}:" + string(p) }

// Conf returns the queue's HASH of settings (lease_seconds, max_attempts,
// …, outcome: the outcome form's JSON, "" for none; require_reason: "1"
// when every cancel, requeue and force release must say why, read by those
// scripts only when none was given), and of claims: how many claims the queue has answered, ever (the
// claim script counts them); plain ("new", then the offset of its ready
// jobs' ranks from their run_at, while the queue keeps no Waiting index),
// waiting_indexed ("1" once Waiting holds every ready job) and, while the
// cron job indexes a queue, waiting_cursor (where the walk of Meta is); outbox ("1" while a webhook
// listens to the queue: Outbox) and outbox_lost (how many events the
// Outbox's cap dropped); sla_day, sla_done and sla_on_time (the UTC day,
// in days since the epoch, and its completions of jobs with a due time,
// and those before it); routed and seats ("1" once a job waited in a
// line of Routed, and in a seat line of it: claims look there from then
// on). The queue exists exactly when this key does.
func (q Queue) Conf() string { return q.Key(PartConf) }

// Ready returns the queue's ZSET of ready job id → rank; the lowest rank is
// claimed first. A job routed to people or skills has its rank plus 10^15
// here (Routed): the open line is what lies below.
func (q Queue) Ready() string { return q.Key(PartReady) }

// Scheduled returns the queue's ZSET of scheduled job id → due time in ms.
func (q Queue) Scheduled() string { return q.Key(PartScheduled) }

// Reserved returns the queue's ZSET of reserved job id → reservation
// deadline in ms.
func (q Queue) Reserved() string { return q.Key(PartReserved) }

// Completed returns the queue's ZSET of completed job id → completion time
// in ms.
func (q Queue) Completed() string { return q.Key(PartCompleted) }

// Dead returns the queue's ZSET of dead job id → time the job died in ms.
func (q Queue) Dead() string { return q.Key(PartDead) }

// Canceled returns the queue's ZSET of canceled job id → cancel time in ms.
func (q Queue) Canceled() string { return q.Key(PartCanceled) }

// Meta returns the queue's HASH of job id → the job's metadata (state,
// title, priority, attempts, reservation, …) as a run of MessagePack values
// in the order of internal/tasks's metaFields, then its history (lua/lib.lua),
// small and rewritten on every transition.
func (q Queue) Meta() string { return q.Key(PartMeta) }

// Payload returns the queue's HASH of job id → the producer's JSON payload,
// written once.
func (q Queue) Payload() string { return q.Key(PartPayload) }

// Result returns the queue's HASH of job id → the JSON result given on
// completion; and, for a job of a queue with overlap, "<id>\nanswers" →
// its answers (a JSON array) and "<id>\nagreement" → their agreement
// (internal/tasks, lua/lib.lua's Overlap).
func (q Queue) Result() string { return q.Key(PartResult) }

// Idem returns the queue's HASH of enqueue idempotency key → job id.
func (q Queue) Idem() string { return q.Key(PartIdem) }

// Skips returns the queue's SET of "operator\njob id": the operator skipped
// that job, or reported it failed, and is not offered it again while it
// waits.
func (q Queue) Skips() string { return q.Key(PartSkips) }

// SkipCount returns the queue's HASH of operator → how many unfinished jobs
// of the queue that operator has skipped or reported failed (Skips); it
// bounds the work of claim.
func (q Queue) SkipCount() string { return q.Key(PartSkipCount) }

// Batches returns the queue's HASH of batch id → the batch's record as a
// JSON object (title, priority, max_concurrent, state, counters, times).
func (q Queue) Batches() string { return q.Key(PartBatches) }

// BatchIndex returns the queue's ZSET of batch id → creation time in ms.
func (q Queue) BatchIndex() string { return q.Key(PartBatchIndex) }

// BatchDone returns the queue's ZSET of ended batch id → end time in ms, for
// retention.
func (q Queue) BatchDone() string { return q.Key(PartBatchDone) }

// Parked returns the queue's ZSET, all scores 0, of "batch|rank|id": the
// ready jobs of batches with max_concurrent that wait for a free slot, each
// batch's in rank order.
func (q Queue) Parked() string { return q.Key(PartParked) }

// Members returns the queue's ZSET, all scores 0, of "batch|id" for every
// job of every batch, so one batch's jobs can be walked in bounded pages.
func (q Queue) Members() string { return q.Key(PartMembers) }

// Claims returns the queue's HASH of "operator\nidempotency key" → job id:
// the live claims made with an Idempotency-Key header, so that a retried
// claim answers with the same reservation. The engine deletes an entry when
// its reservation ends.
func (q Queue) Claims() string { return q.Key(PartClaims) }

// Holding returns the queue's ZSET, all scores 0, of "operator\njob id": the
// queue's live reservations by holder, so one person's are read without
// walking everyone's. The engine keeps it with Reserved.
func (q Queue) Holding() string { return q.Key(PartHolding) }

// Numbers returns the queue's ZSET of "minute ready claims completed dead
// oldest", scored by minute (Unix ms / 60000): the ready jobs when the
// minute was last sampled, the claims counter of Conf then, the jobs
// completed and dead within the minute, and how long the oldest ready job
// had waited then, in ms (0: none, or not known; samples from before it
// was kept lack it). The cron job writes the minute under way and drops
// those a day old.
func (q Queue) Numbers() string { return q.Key(PartNumbers) }

// Waiting returns the queue's ZSET of every ready job id (claimable or
// held back by its batch) → since when it waits (its run_at, ms), so the
// oldest waiting job is found at once whatever the claim order. The
// engine keeps it with Ready and Parked, but not while the queue is plain
// (Conf's "plain": every ready job in Ready at its run_at less one offset,
// so Ready's first is the oldest; internal/tasks/lua/lib.lua, The oldest
// wait). A queue made before it, or one of over 1,000 ready jobs that
// stopped being plain, is indexed by the cron job (Conf's
// "waiting_indexed" says when done).
func (q Queue) Waiting() string { return q.Key(PartWaiting) }

// People returns the queue's HASH of what each person's reservations of
// the queue came to, per UTC day: field "<day mod 8>\n<person>", value a
// run of MessagePack values (internal/tasks/lua/lib.lua, tally): the day,
// the reservations given back, failed, run out and taken back, then the
// completions as pairs of handling-time bucket and count. A field of a day
// more than a week old is replaced by the same weekday's next, so the hash
// holds at most eight fields per person. The engine's scripts write it as
// reservations end.
func (q Queue) People() string { return q.Key(PartPeople) }

// Outbox returns the queue's STREAM of events for webhooks: while a
// webhook listens to the queue (Conf's "outbox" is "1"), every change that
// ends a job or a batch appends one, in the same script call as the
// change. Each entry has the fields type (job.completed, job.dead,
// job.canceled or batch.finished), id (the job's or batch's ULID), record
// (the job's metadata as Meta holds it, or the batch's record as Batches
// holds it), and for a job payload and result (empty when none). The
// stream's consumer group "deliver" hands entries to the deliverers
// (internal/webhooks), which delete each entry once every endpoint has its
// delivery; at most internal/tasks's OutboxCap entries are kept, the
// oldest dropped beyond that and counted in Conf's "outbox_lost".
func (q Queue) Outbox() string { return q.Key(PartOutbox) }

// Drafts returns the queue's HASH of what holders had typed on their jobs,
// unfinished, by job id: field "<job id>" holds the live draft of the
// job's holder ("<job id>\n@<holder>", each holder's, for a job of a
// queue with overlap, which several may hold at once), saved while they
// type (a run of MessagePack values: who,
// when in ms, the draft's JSON object), written only by its holder and
// only while their reservation lasts; field "<job id>\nkept" holds the
// drafts kept from reservations taken from their holders (force
// released, canceled, run out), oldest first, the latest
// internal/tasks's DraftsKept at most: per draft, those three values
// and then how it ended (action, actor, when in ms). The engine keeps a
// live draft until its reservation ends: a completion or the holder's
// own give-back drops it, a take-back moves it to the kept ones; a job's
// fields go with the job. A job's history says when a reservation
// saved its first draft ("drafted"), so a reservation that saved none
// never reads this key.
func (q Queue) Drafts() string { return q.Key(PartDrafts) }

// SLA returns the queue's ZSET of the unfinished jobs with a due time
// whose next moment of it is still to come → when it comes (ms): the
// moment it is at risk (its warn_at), then once that passed its due time.
// The cron job finds there what came, never walking other jobs
// (lua/sla.lua); a job leaves it once breached, or when it finishes.
func (q Queue) SLA() string { return q.Key(PartSLA) }

// Late returns the queue's ZSET of the unfinished jobs past the moment
// they were at risk → their due time (ms): those due after now are at
// risk, the others breached. The cron job files each as it comes at risk;
// a job leaves when it finishes.
func (q Queue) Late() string { return q.Key(PartLate) }

// ReadyDue returns the queue's ZSET of the claimable ready jobs (those in
// Ready) that have a due time → that due time (ms), plus 10^15 for a
// routed job (Routed): a queue that claims earliest due first (its order
// "due") looks here before Ready.
func (q Queue) ReadyDue() string { return q.Key(PartReadyDue) }

// Moving returns the queue's HASH of job id → the name of the queue the
// job moves to: the jobs that missed their due time while waiting, taken
// out of the queue's line by the cron job (sla.lua) when the queue has a
// breach queue, until they are made in that queue and deleted here
// (internal/tasks, MoveBreached). A job in it is not canceled.
func (q Queue) Moving() string { return q.Key(PartMoving) }

// Moved returns the queue's HASH of job id → where the job moved: the
// name of the queue, then, each after a newline, the idempotency key it
// was enqueued with (which Idem keeps naming it by) and its batch, each
// "" for none; so that its old id still leads to it (the new id is the
// same ULID with the new queue's name), kept as long as a finished job
// (MovedAt), or, while its batch counts it as moved (Away), longer.
func (q Queue) Moved() string { return q.Key(PartMoved) }

// MovedAt returns the queue's ZSET of the ids of Moved → when the job
// moved in ms, for retention.
func (q Queue) MovedAt() string { return q.Key(PartMovedAt) }

// Away returns the queue's HASH of job id → the counter of its batch that
// counts it ("moved" while it is unfinished, else the state it ended in):
// the jobs of the queue's batches that moved to another queue. The cron
// job sets it as they change there (Returns).
func (q Queue) Away() string { return q.Key(PartAway) }

// Returns returns the queue's ZSET of job id → when it last ended, or was
// requeued after it ended, in ms: the jobs that moved here from a batch of
// another queue (their metadata's batch_from and moved_from), whose batch
// has yet to learn it (internal/tasks, ReturnToBatches).
func (q Queue) Returns() string { return q.Key(PartReturns) }

// Routed returns the queue's ZSET (all scores 0) of the lines of the
// routed jobs in line (internal/tasks, lua/lib.lua: Routing): per line
// the jobs routed to a person ("@<name>") or to skills ("+<skills>"),
// each as "r<line>|<rank>|<id>" and, with a due time, also
// "d<line>|<due time>|<id>" (rank and due time zero-padded after adding
// 10^14), so that a line's jobs sort together, best first. A routed job
// in line is in Ready (and ReadyDue) too, its score raised by 10^15. The
// line "!review" holds the jobs that wait for review; the seat lines,
// "~" then a line's name ("~" alone for open jobs), the reserved jobs of
// a queue with overlap that more people may hold at once.
func (q Queue) Routed() string { return q.Key(PartRouted) }

// Routes returns the queue's HASH of skills line ("+<skills>", the
// skills canonical: "contracts:4,de:1") → how many jobs wait in it
// (Routed): the lines a claim by someone with skills looks at.
func (q Queue) Routes() string { return q.Key(PartRoutes) }

// Heads returns the queue's HASH of the lines of Routed that hold a job
// ("r<line>", "d<line>") → their first job, as its member there ends:
// "<rank, or due time, zero-padded after adding 10^14>|<id>"; so that a
// claim learns in one read which job of the lines it may take from comes
// first.
func (q Queue) Heads() string { return q.Key(PartHeads) }

// Fallback returns the queue's ZSET of job id → when, in ms, the time of
// the people it prefers runs out and it goes to anyone with its skills:
// the preferred jobs that have yet to fall back.
func (q Queue) Fallback() string { return q.Key(PartFallback) }

// All returns every key of the queue, in the order of Parts.
func (q Queue) All() []string {
	all := make([]string, len(Parts))
	for i, p := range Parts {
		all[i] = q.Key(p)
	}
	return all
}
