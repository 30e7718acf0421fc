package tasks

import (
	"errors"
	"fmt"
)

// Sentinel errors of the engine. Callers check them with errors.Is; the HTTP
// layer maps each to one status code.
var (
	// ErrNotFound means no job has the given id.
	ErrNotFound = errors.New("job not found")
	// ErrBatchNotFound means no batch has the given id.
	ErrBatchNotFound = errors.New("batch not found")
	// ErrQueueNotFound means no queue has the given name.
	ErrQueueNotFound = errors.New("queue not found")
	// ErrQueueExists means a queue of that name exists already.
	ErrQueueExists = errors.New("a queue of that name exists")
	// ErrQueueNotEmpty means the queue still has jobs ready, scheduled,
	// reserved or dead, or a batch unfinished: it cannot be deleted.
	ErrQueueNotEmpty = errors.New("queue is not empty")
	// ErrQueuePaused means the queue is paused: it claims nothing new.
	ErrQueuePaused = errors.New("queue is paused")
	// ErrHoldLimit means the operator holds as many of the queue's jobs as
	// its max_held allows.
	ErrHoldLimit = errors.New("hold limit reached")
	// ErrReservationLost means the token is not the live reservation of the
	// job: it was completed, given back, reclaimed after its deadline, or
	// taken away by a supervisor. Nothing the caller sent was stored.
	ErrReservationLost = errors.New("reservation lost")
	// ErrForbidden means the caller holds the token of someone else's
	// reservation: holder actions are the holder's alone. Nothing changed.
	ErrForbidden = errors.New("not your reservation")
	// ErrNotReady means the job asked for is not waiting in line for this
	// operator: someone claimed it, it finished, or the operator skipped it.
	ErrNotReady = errors.New("job is not ready to claim")
	// ErrInvalidState means the job is not in a state that allows the action.
	ErrInvalidState = errors.New("invalid state for this action")
	// ErrExtensionLimit means the reservation may not be extended any further.
	ErrExtensionLimit = errors.New("extension limit reached")
	// ErrSkipLimit means the operator has skipped too many unfinished jobs of
	// the queue to skip another.
	ErrSkipLimit = errors.New("skip limit reached")
	// ErrReasonRequired means the job's queue requires a reason for a
	// cancel, requeue or force release (Queue.RequireReason), and none was
	// given. Nothing changed.
	ErrReasonRequired = errors.New("a reason is required")
	// ErrInvalid means some input was not valid; the error is a *ValidationError.
	ErrInvalid = errors.New("invalid input")
	// ErrTooLarge means a payload, result or batch is over its size limit.
	ErrTooLarge = errors.New("too large")
)

// ValidationError tells which field of the input was wrong and why.
// It matches ErrInvalid, or ErrTooLarge for size limits, with errors.Is.
type ValidationError struct {
	Field   string
	Message string
	// Min and Max bound the field when it is a number out of its range
	// (Ranged): a page can say so in its own words.
	Min, Max int
	Ranged   bool
	tooBig   bool
}

func (e *ValidationError) Error() string { return e.Field + ": " + e.Message }

// Is reports whether target is the sentinel this error belongs to.
func (e *ValidationError) Is(target error) bool {
	if e.tooBig {
		return target == ErrTooLarge
	}
	return target == ErrInvalid
}

func invalid(field, format string, args ...any) error {
	return &ValidationError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// outOfRange says that field must be between lo and hi.
func outOfRange(field string, lo, hi int) error {
	return &ValidationError{Field: field, Message: fmt.Sprintf("must be between %d and %d", lo, hi), Min: lo, Max: hi, Ranged: true}
}

func tooLarge(field, format string, args ...any) error {
	return &ValidationError{Field: field, Message: fmt.Sprintf(format, args...), tooBig: true}
}

// errKeyElsewhere refuses a batch request some of whose jobs' idempotency
// keys made jobs outside that batch.
var errKeyElsewhere = fmt.Errorf("%w: an idempotency_key of these jobs already made a job outside this batch", ErrInvalidState)

// errSettingsChanged means a queue's settings were written by someone else
// between a read and a write made from it (PatchQueue reads them again).
var errSettingsChanged = errors.New("the queue's settings changed meanwhile")

// errUnfit means a result does not fit the queue's outcome form: the
// holder is told how (an *OutcomeError) by completeHeld.
var errUnfit = errors.New("the result does not fit the outcome form")

// formChanged means a completion was checked against another outcome form
// than the queue's: stored is the queue's, as stored (completeHeld).
type formChanged struct{ stored string }

func (e *formChanged) Error() string { return "the queue's outcome form changed meanwhile" }

// toAgree means a completion was the last answer to a job with overlap,
// to be agreed with the answers before it: answers are them all, as
// stored (completeHeld).
type toAgree struct{ answers string }

func (e *toAgree) Error() string { return "the answers are to be agreed" }

// statusErrors maps the status codes that scripts answer to errors.
var statusErrors = map[string]error{
	"not_found":        ErrNotFound,
	"queue_not_found":  ErrQueueNotFound,
	"queue_exists":     ErrQueueExists,
	"queue_not_empty":  ErrQueueNotEmpty,
	"queue_paused":     ErrQueuePaused,
	"hold_limit":       ErrHoldLimit,
	"batch_not_found":  ErrBatchNotFound,
	"reservation_lost": ErrReservationLost,
	"invalid_state":    ErrInvalidState,
	"key_elsewhere":    errKeyElsewhere,
	"changed":          errSettingsChanged,
	"extension_limit":  ErrExtensionLimit,
	"skip_limit":       ErrSkipLimit,
	"forbidden":        ErrForbidden,
	"not_ready":        ErrNotReady,
	"unfit":            errUnfit,
	"reason_required":  ErrReasonRequired,
	"routes":           errRoutesChanged,
}
