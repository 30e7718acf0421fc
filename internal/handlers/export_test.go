package handlers

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/redis/go-redis/v9"
)

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

// LoginLimits applies the default rate limits of the login
// (rateLimiter.logins) over rdb: login tries one login of name from
// address, and answers nil, or the status of the refusal as an error.
func LoginLimits(rdb redis.UniversalClient) (login func(name, address string) error) {
	r := newRateLimiter(rdb, RateLimits{}, slog.New(slog.DiscardHandler))
	h := r.logins(func(echo.Context) error { return nil })
	e := echo.New()
	return func(name, address string) error {
		req := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(url.Values{"name": {name}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.RemoteAddr = net.JoinHostPort(address, "40000")
		if err := h(e.NewContext(req, httptest.NewRecorder())); err != nil {
			if ae, ok := err.(*apiError); ok {
				return fmt.Errorf("%d %s", ae.Status, ae.Code)
			}
			return err
		}
		return nil
	}
}
