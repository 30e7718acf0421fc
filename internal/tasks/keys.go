package tasks

import "claimdesk/internal/keys"

// Every key name comes from internal/keys. A queue's keys there are in the
// order every queue script expects them (lua/lib.lua names them).

func keysFor(queue string) keys.Queue { return keys.ForQueue(queue) }

// stateKey returns the index ZSET of the queue that holds jobs in state s.
func stateKey(k keys.Queue, s State) string {
	switch s {
	case StateReady:
		return k.Ready()
	case StateScheduled:
		return k.Scheduled()
	case StateReserved:
		return k.Reserved()
	case StateCompleted:
		return k.Completed()
	case StateDead:
		return k.Dead()
	case StateCanceled:
		return k.Canceled()
	}
	return ""
}
