// Package storeerr tells the store's passing troubles from real faults: a
// Redis that is restarting, loading its data, failing over or out of
// reach for a moment, and replicas that did not confirm a change. Callers
// answer those with 503 and Retry-After (retrying is safe by claimdesk's
// retry contracts) and log them as warnings, once per burst; anything else
// is an internal error.
package storeerr

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// ErrNotReplicated means fewer replicas than required confirmed a change in
// time. The change stands on the master, and may be lost if it fails now;
// retrying is safe by the retry contracts.
var ErrNotReplicated = errors.New("replicas did not confirm the change in time")

// transientReplies are the first words of the Redis error replies that
// mean "not now": the server is loading its data, running a long script,
// in a cluster that is down or resharding, demoted to a replica, without
// its master or replicas, or unable to persist.
var transientReplies = map[string]bool{
	"LOADING":     true,
	"BUSY":        true,
	"TRYAGAIN":    true,
	"CLUSTERDOWN": true,
	"MOVED":       true, // still moving after the client's redirects
	"ASK":         true,
	"READONLY":    true,
	"MASTERDOWN":  true,
	"NOREPLICAS":  true,
	"MISCONF":     true,
	"UNBLOCKED":   true, // a blocked client let go when the server's role changed
}

// Transient reports whether err means the store cannot answer for a
// moment, so the request may be retried: an error reply named in
// transientReplies (by its first word, never by what follows), too many
// clients, a connection that could not be made or was lost, a timeout, a
// closed or exhausted connection pool, or ErrNotReplicated. A request
// whose own client went away (context.Canceled) is not: nobody waits for
// its answer. One that ran out of time (context.DeadlineExceeded) is: the
// store was too slow to answer it.
func Transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var reply redis.Error
	if errors.As(err, &reply) {
		msg := reply.Error()
		word, _, _ := strings.Cut(msg, " ")
		return transientReplies[word] || strings.HasPrefix(msg, "ERR max number of clients reached")
	}
	var netErr net.Error
	return errors.Is(err, ErrNotReplicated) ||
		errors.As(err, &netErr) ||
		errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, redis.ErrClosed) || errors.Is(err, redis.ErrPoolTimeout) ||
		errors.Is(err, redis.ErrPoolExhausted)
}
