// Package storeerr tells the store's passing troubles from real faults.
package storeerr

import "errors"

// ErrNotReplicated means fewer replicas than required confirmed a change in
// time. The change stands on the master, and may be lost if it fails now;
// retrying is safe by the retry contracts.
var ErrNotReplicated = errors.New("replicas did not confirm the change in time")
