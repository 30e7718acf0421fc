package handlers

import (
	"errors"
	"net/http"

	"claimdesk/internal/audit"
	"claimdesk/views"

	"github.com/labstack/echo/v4"
)

// The audit log: every administrative action records itself (desk);
// supervisors read the log on /supervisor/audit and through GET
// /api/v1/audit.

// auditAPI lists the audit log, newest first.
func (s *Server) auditAPI(c echo.Context) error {
	limit, err := limitParam(c, 100, 1000)
	if err != nil {
		return err
	}
	entries, next, err := s.desk.AuditLog(c.Request().Context(), actor(c), c.QueryParam("cursor"), limit)
	if err != nil {
		return auditError(err)
	}
	return c.JSON(http.StatusOK, auditAnswer{entries, nullable(next)})
}

func auditError(err error) error {
	if errors.Is(err, audit.ErrBadCursor) {
		return newError(http.StatusBadRequest, "invalid_field", "cursor is not one the audit log gave")
	}
	return err
}

// auditPage shows the audit log, newest first, 100 to a page.
func (s *Server) auditPage(c echo.Context) error {
	entries, next, err := s.desk.AuditLog(c.Request().Context(), actor(c), c.QueryParam("cursor"), 100)
	if err != nil {
		return auditError(err)
	}
	return s.render(c, http.StatusOK, views.AuditPage(s.page(c, "Audit log"), views.AuditView{Entries: entries, Next: next}))
}
