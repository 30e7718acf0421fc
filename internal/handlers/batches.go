package handlers

import (
	"context"
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
	b, out, err := s.tasks.CreateBatch(ctx, queue, body)
	s.count("create_batch", err)
	if err != nil {
		return err
	}
	status := http.StatusCreated
	if len(out) > 0 && !slices.ContainsFunc(out, func(e tasks.Enqueued) bool { return e.Created }) {
		status = http.StatusOK // a repeat: every job, and so the batch, existed
	}
	return c.JSON(status, map[string]any{"batch": b, "jobs": s.announceJobs(ctx, out, b)})
}

func (s *Server) apiAddToBatch(c echo.Context) error {
	var body struct {
		Jobs []tasks.NewJob `json:"jobs"`
	}
	if err := decode(c, &body); err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, err := s.visibleBatch(c); err != nil {
		return err
	}
	b, out, err := s.tasks.AddToBatch(ctx, c.Param("id"), body.Jobs)
	s.count("add_to_batch", err)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, map[string]any{"jobs": s.announceJobs(ctx, out, b)})
}

// announceJobs announces the jobs a batch request created and returns all
// of them, as the response lists them.
func (s *Server) announceJobs(ctx context.Context, out []tasks.Enqueued, b *tasks.Batch) []*tasks.Job {
	list := make([]*tasks.Job, len(out))
	var created []*tasks.Job
	for i, e := range out {
		list[i] = e.Job
		if e.Created {
			created = append(created, e.Job)
		}
	}
	s.announce.Jobs(ctx, created, b)
	return list
}

func (s *Server) apiSealBatch(c echo.Context) error {
	if _, err := s.visibleBatch(c); err != nil {
		return err
	}
	ctx := c.Request().Context()
	b, err := s.tasks.SealBatch(ctx, c.Param("id"))
	s.count("seal_batch", err)
	if err != nil {
		return err
	}
	s.announce.Batch(ctx, b)
	return c.JSON(http.StatusOK, b)
}

func (s *Server) apiCancelBatch(c echo.Context) error {
	if _, err := s.visibleBatch(c); err != nil {
		return err
	}
	ctx := c.Request().Context()
	b, err := s.cancelBatch(ctx, c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, b)
}

// cancelBatch cancels a batch and announces it.
func (s *Server) cancelBatch(ctx context.Context, id string) (*tasks.Batch, error) {
	b, _, err := s.tasks.CancelBatch(ctx, id)
	s.count("cancel_batch", err)
	if err != nil {
		return nil, err
	}
	s.announce.Batch(ctx, b)
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
// queue; to others it does not exist.
func (s *Server) visibleBatch(c echo.Context) (*tasks.Batch, error) {
	u, _ := currentUser(c)
	b, err := s.tasks.GetBatch(c.Request().Context(), c.Param("id"))
	if err != nil {
		return nil, err
	}
	if !u.CanSee(b.Queue) {
		return nil, tasks.ErrBatchNotFound
	}
	return b, nil
}
