package tasks

// Every Redis key claimdesk uses is named here, and nowhere else. All keys of
// one queue carry the hash tag {queue}, so they live in one Redis Cluster slot
// and one script may touch them together. Inside them a job or batch is
// known by its ULID alone, without the ".queue" of its public id (id.go).

// keyPrefix starts every key, so a claimdesk store can share a Redis database.
const keyPrefix = "cd:"

// queueKeys names the keys of one queue.
type queueKeys struct{ q string }

func keysFor(queue string) queueKeys { return queueKeys{q: queue} }

func (k queueKeys) key(suffix string) string { return keyPrefix + "{" + k.q + "}:" + suffix }

// conf is a HASH of the queue's settings (lease_seconds, max_attempts, …).
// The queue exists exactly when this key does.
func (k queueKeys) conf() string { return k.key("conf") }

// ready is a ZSET of job id → rank; the lowest rank is claimed first.
func (k queueKeys) ready() string { return k.key("ready") }

// scheduled is a ZSET of job id → due time in ms.
func (k queueKeys) scheduled() string { return k.key("scheduled") }

// reserved is a ZSET of job id → reservation deadline in ms.
func (k queueKeys) reserved() string { return k.key("reserved") }

// completed is a ZSET of job id → completion time in ms.
func (k queueKeys) completed() string { return k.key("completed") }

// dead is a ZSET of job id → time the job died in ms.
func (k queueKeys) dead() string { return k.key("dead") }

// canceled is a ZSET of job id → cancel time in ms.
func (k queueKeys) canceled() string { return k.key("canceled") }

// meta is a HASH of job id → the job's metadata (state, title, priority,
// attempts, reservation, …) as a run of MessagePack values (lua/lib.lua),
// small and rewritten on every transition.
func (k queueKeys) meta() string { return k.key("meta") }

// payload is a HASH of job id → the producer's JSON payload, written once.
func (k queueKeys) payload() string { return k.key("payload") }

// result is a HASH of job id → the JSON result given on completion.
func (k queueKeys) result() string { return k.key("result") }

// idem is a HASH of idempotency key → job id.
func (k queueKeys) idem() string { return k.key("idem") }

// skips is a SET of "operator\njob id": operator skipped that job and is not
// offered it again.
func (k queueKeys) skips() string { return k.key("skips") }

// skipCount is a HASH of operator → how many unfinished jobs of the queue
// that operator has skipped; it bounds the work of claim.
func (k queueKeys) skipCount() string { return k.key("skipcount") }

// batches is a HASH of batch id → the batch's record as a JSON object
// (title, priority, max_concurrent, state, counters, times).
func (k queueKeys) batches() string { return k.key("batches") }

// batchIndex is a ZSET of batch id → creation time in ms.
func (k queueKeys) batchIndex() string { return k.key("batchindex") }

// batchDone is a ZSET of ended batch id → end time in ms, for retention.
func (k queueKeys) batchDone() string { return k.key("batchdone") }

// parked is a ZSET, all scores 0, of "batch|rank|id": the ready jobs of
// batches with max_concurrent that wait for a free slot, each batch's in
// rank order.
func (k queueKeys) parked() string { return k.key("parked") }

// members is a ZSET, all scores 0, of "batch|id" for every job of every
// batch, so one batch's jobs can be walked in bounded pages.
func (k queueKeys) members() string { return k.key("members") }

// stateKey returns the index ZSET that holds jobs in state s.
func (k queueKeys) stateKey(s State) string {
	switch s {
	case StateReady:
		return k.ready()
	case StateScheduled:
		return k.scheduled()
	case StateReserved:
		return k.reserved()
	case StateCompleted:
		return k.completed()
	case StateDead:
		return k.dead()
	case StateCanceled:
		return k.canceled()
	}
	return ""
}

// formatKey is a STRING: the storage format of the engine's data in this
// Redis (CheckFormat). It is global and no script touches it.
const formatKey = keyPrefix + "format"

// queuesKey is a SET of every queue name. It is global (no hash tag) and no
// script touches it.
const queuesKey = keyPrefix + "queues"

// all returns the queue's keys in the order every queue script expects them
// (lua/lib.lua names them).
func (k queueKeys) all() []string {
	return []string{
		k.conf(), k.ready(), k.scheduled(), k.reserved(), k.completed(),
		k.dead(), k.canceled(), k.meta(), k.payload(), k.result(), k.idem(),
		k.skips(), k.skipCount(), k.batches(), k.batchIndex(), k.batchDone(),
		k.parked(), k.members(),
	}
}
