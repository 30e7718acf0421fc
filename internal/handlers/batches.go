package handlers

import (
	"net/http"
	"slices"

	"claimdesk/internal/tasks"
	"claimdesk/internal/users"

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
	var body tasks.NewBatch
	if err := decode(c, &body); err != nil {
		return err
	}
	b, out, err := s.desk.CreateBatch(c.Request().Context(), actor(c), c.Param("queue"), body)
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
	out, err := s.desk.AddToBatch(c.Request().Context(), actor(c), c.Param("id"), body.Jobs)
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
	b, err := s.desk.SealBatch(c.Request().Context(), actor(c), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, b)
}

func (s *Server) apiCancelBatch(c echo.Context) error {
	b, err := s.desk.CancelBatch(c.Request().Context(), actor(c), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, b)
}

func (s *Server) apiGetBatch(c echo.Context) error {
	wait, err := waitParam(c)
	if err != nil {
		return err
	}
	b, err := s.desk.Batch(c.Request().Context(), actor(c), c.Param("id"))
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
