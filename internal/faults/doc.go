// Package faults holds claimdesk's fault tests: two claimdesk processes
// serve producers and operators through the HTTP API while their processes
// and their Redis are killed (SIGKILL, as a crash would) and started again,
// or a Redis Cluster master fails over; afterwards every acknowledged job
// must have been completed exactly once, no job held by two operators at
// once, none lost or stuck, and no request answered 500. The tests build
// the server from cmd/web and start everything on loopback ports.
package faults
