package client

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// APIError is an answer of the server that is not the one asked for: a
// refusal, with its HTTP status and the API's error code (docs/api.md,
// Errors). Find it with errors.As and branch on Code; Message is for
// people and may change:
//
//	var refused *client.APIError
//	if errors.As(err, &refused) && refused.Code == client.ErrorCodeReservationLost {
//		// the job is no longer ours: stop working on it
//	}
type APIError struct {
	// Status is the answer's HTTP status code, such as 409.
	Status int
	// Code is the API's error code, such as reservation_lost; empty when
	// the answer carried no error of the API's (a proxy's 502, say).
	Code ErrorCode
	// Message says what went wrong, for people.
	Message string
	// Fields says what is wrong with each field of a result that does not
	// fit its queue's outcome form; nil otherwise.
	Fields map[string]string
	// RetryAfter is how long the server asks to wait before a retry (the
	// Retry-After of a 429 or a 503); 0 when it sent none.
	RetryAfter time.Duration
}

// Error says the status, the code and the message.
func (e *APIError) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("claimdesk answered %d: %s", e.Status, e.Message)
	}
	return fmt.Sprintf("claimdesk answered %d %s: %s", e.Status, e.Code, e.Message)
}

// refusal is the APIError of an answer the caller did not expect: its
// status, the API's error body if it has one, and its Retry-After.
func refusal(res *http.Response, body []byte) *APIError {
	e := &APIError{Status: res.StatusCode, Message: http.StatusText(res.StatusCode)}
	var b Error
	if json.Unmarshal(body, &b) == nil && b.Error.Code != "" {
		e.Code, e.Message = b.Error.Code, b.Error.Message
		if b.Error.Fields != nil {
			e.Fields = *b.Error.Fields
		}
	}
	if s, err := strconv.Atoi(res.Header.Get("Retry-After")); err == nil && s > 0 {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	return e
}
