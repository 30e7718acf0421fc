package handlers

import "github.com/labstack/echo/v4"

// Routes lists the routes the server registers (routes), for the tests
// that hold them to the API's contract.
func Routes() []*echo.Route {
	e := echo.New()
	(&Server{rates: &rateLimiter{}}).routes(e)
	return e.Routes()
}

// ErrorCode is an entry of the table of error codes (errorCodes): the
// status and code the user sees.
type ErrorCode struct {
	Status int
	Code   string
}

// ErrorCodes lists the table of error codes, for the test that holds it
// to the API's contract.
func ErrorCodes() []ErrorCode {
	out := make([]ErrorCode, len(errorCodes))
	for i, m := range errorCodes {
		out[i] = ErrorCode{m.status, m.code}
	}
	return out
}
