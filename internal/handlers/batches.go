package handlers

import (
	"net/http"
	"slices"

	"claimdesk/internal/audit"
	"claimdesk/internal/tasks"
	"claimdesk/internal/users"
	"claimdesk/views"

	"github.com/labstack/echo/v4"
)

func (s *Server) batchRoutes(g *echo.Group) {
	producers := requireRole(users.Producer, users.Supervisor)
	g.POST("/queues/:queue/batches", s.apiCreateBatch, producers)
	g.POST("/batches/:id/jobs", s.apiAddToBatch, producers)
	g.POST("/batches/:id/seal", s.apiSealBatch, producers)
	g.GET("/batches/:id", s.apiGetBatch, producers)
	g.DELETE("/batches/:id", s.apiCancelBatch, producers)
}

func (s *Server) apiCreateBatch(c echo.Context) error {
	queue := c.Param("queue")
	u, _ := currentUser(c)
	if !u.CanSee(queue) {
		return forbidden()
	}
	var body tasks.NewBatch
	if err := decode(c, &body); err != nil {
		return err
	}
	ctx := c.Request().Context()
	b, out, err := s.tasks.CreateBatch(ctx, queue, u.Name, body)
	if err != nil {
		return err
	}
	status := http.StatusCreated
	if len(out) > 0 && !slices.ContainsFunc(out, func(e tasks.Enqueued) bool { return e.Created }) {
		status = http.StatusOK // a repeat: every job, and so the batch, existed
	}
	return c.JSON(status, map[string]any{"batch": b, "jobs": jobsOf(out)})
}

func (s *Server) apiAddToBatch(c echo.Context) error {
	var body struct {
		Jobs []tasks.NewJob `json:"jobs"`
	}
	if err := decode(c, &body); err != nil {
		return err
	}
	if _, err := s.visibleBatch(c); err != nil {
		return err
	}
	u, _ := currentUser(c)
	_, out, err := s.tasks.AddToBatch(c.Request().Context(), c.Param("id"), u.Name, body.Jobs)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, map[string]any{"jobs": jobsOf(out)})
}

// jobsOf lists the jobs of a batch request, as the response lists them.
func jobsOf(out []tasks.Enqueued) []*tasks.Job {
	list := make([]*tasks.Job, len(out))
	for i, e := range out {
		list[i] = e.Job
	}
	return list
}

func (s *Server) apiSealBatch(c echo.Context) error {
	if _, err := s.visibleBatch(c); err != nil {
		return err
	}
	b, err := s.tasks.SealBatch(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, b)
}

func (s *Server) apiCancelBatch(c echo.Context) error {
	if _, err := s.visibleBatch(c); err != nil {
		return err
	}
	b, err := s.cancelBatch(c, c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, b)
}

// cancelBatch cancels a batch for the API and the pages alike, and records
// it in the audit log.
func (s *Server) cancelBatch(c echo.Context, id string) (*tasks.Batch, error) {
	u, _ := currentUser(c)
	b, err := s.tasks.CancelBatch(c.Request().Context(), id, u.Name)
	if err != nil {
		return nil, err
	}
	s.record(c, audit.BatchCanceled, b.ID, quote(b.Title)+" in "+b.Queue+", "+views.Plural(b.Total, "job"))
	return b, nil
}

func (s *Server) apiGetBatch(c echo.Context) error {
	wait, err := waitParam(c)
	if err != nil {
		return err
	}
	b, err := s.visibleBatch(c)
	if err != nil {
		return err
	}
	if wait > 0 && !b.Ended() {
		b, err = waitUntil(c.Request().Context(), s.hub, b.ID, wait, s.tasks.GetBatch, (*tasks.Batch).Ended)
		if err != nil {
			return err
		}
	}
	return c.JSON(http.StatusOK, b)
}

// visibleBatch returns the batch named in the path if the user may see its
// queue; others are forbidden it.
func (s *Server) visibleBatch(c echo.Context) (*tasks.Batch, error) {
	u, _ := currentUser(c)
	b, err := s.tasks.GetBatch(c.Request().Context(), c.Param("id"))
	if err != nil {
		return nil, err
	}
	if !u.CanSee(b.Queue) {
		return nil, newError(http.StatusForbidden, "forbidden", "the batch's queue, %s, is not granted to you", b.Queue)
	}
	return b, nil
}
