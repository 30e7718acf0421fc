package handlers

import "github.com/labstack/echo/v4"

// Routes lists the routes the server registers (routes), for the tests
// that hold them to the API's contract.
func Routes() []*echo.Route {
	e := echo.New()
	(&Server{rates: &rateLimiter{}}).routes(e)
	return e.Routes()
}
