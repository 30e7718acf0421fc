package handlers

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"claimdesk/internal/audit"
	"claimdesk/views"

	"github.com/labstack/echo/v4"
)

// The audit log: every administrative action records itself (desk);
// supervisors read the log on /supervisor/audit and through GET
// /api/v1/audit, filtered by who, what and when.

// auditAPI lists the audit log, newest first.
func (s *Server) auditAPI(c echo.Context) error {
	limit, err := limitParam(c, 100, 1000)
	if err != nil {
		return err
	}
	f := audit.Filter{Actor: actorParam(c.QueryParam("actor")), Action: c.QueryParam("action")}
	if f.Since, err = queryTime(c, "since"); err != nil {
		return err
	}
	if f.Until, err = queryTime(c, "until"); err != nil {
		return err
	}
	entries, next, err := s.desk.AuditLog(c.Request().Context(), actor(c), c.QueryParam("cursor"), limit, f)
	if err != nil {
		return auditError(err)
	}
	return c.JSON(http.StatusOK, auditAnswer{entries, nullable(next)})
}

// actorParam is an actor as the log records it: a user's name in lower
// case, or "command line".
func actorParam(v string) string { return strings.ToLower(strings.TrimSpace(v)) }

func auditError(err error) error {
	switch {
	case errors.Is(err, audit.ErrBadCursor):
		return newError(http.StatusBadRequest, "invalid_field", "cursor is not one the audit log gave")
	case errors.Is(err, audit.ErrBadFilter):
		return newError(http.StatusBadRequest, "invalid_field", "%s", strings.TrimPrefix(err.Error(), audit.ErrBadFilter.Error()+": "))
	}
	return err
}

// auditWithin are the spans the Audit page filters by, back from now.
var auditWithin = map[string]time.Duration{"1h": time.Hour, "24h": 24 * time.Hour, "7d": 7 * 24 * time.Hour}

// auditPage shows the audit log, newest first, 100 to a page, filtered by
// who (who), what (action) and how recently (within: 1h, 24h or 7d).
func (s *Server) auditPage(c echo.Context) error {
	v := views.AuditView{Who: actorParam(c.QueryParam("who")), Action: c.QueryParam("action"), Within: c.QueryParam("within"), Now: time.Now()}
	f := audit.Filter{Actor: v.Who, Action: v.Action}
	if v.Within != "" {
		d, ok := auditWithin[v.Within]
		if !ok {
			return newError(http.StatusBadRequest, "invalid_field", "within must be 1h, 24h or 7d")
		}
		f.Since = v.Now.Add(-d)
	}
	var err error
	v.Entries, v.Next, err = s.desk.AuditLog(c.Request().Context(), actor(c), c.QueryParam("cursor"), 100, f)
	if err != nil {
		return auditError(err)
	}
	return s.render(c, http.StatusOK, views.AuditPage(s.page(c, "Audit log"), v))
}
