package handlers

import (
	"net/http"
	"slices"
	"time"

	"claimdesk/internal/tasks"
	"claimdesk/views"

	"github.com/labstack/echo/v4"
)

// Batches: a producer's request of many jobs, followed as one
// (/api/v1/batches), and the supervisor's Batches page.

func (s *Server) apiCreateBatch(c echo.Context) error {
	if err := s.desk.MayProduce(c.Request().Context(), actor(c), c.Param("queue")); err != nil {
		return err
	}
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
	return c.JSON(status, batchAnswer{b, jobsOf(out)})
}

func (s *Server) apiAddToBatch(c echo.Context) error {
	var body addToBatchRequest
	if err := decode(c, &body); err != nil {
		return err
	}
	out, err := s.desk.AddToBatch(c.Request().Context(), actor(c), c.Param("id"), body.Jobs)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, jobsAnswer{jobsOf(out)})
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

// batchesView lists the newest batches of every queue.
func (s *Server) batchesView(c echo.Context) (views.BatchesView, error) {
	bs, err := s.desk.Batches(c.Request().Context(), actor(c), 50)
	return views.BatchesView{Batches: bs, Now: time.Now()}, err
}

func (s *Server) batchesPage(c echo.Context) error {
	v, err := s.batchesView(c)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, views.BatchesPage(s.page(c, "Batches"), v))
}

func (s *Server) batchesFragment(c echo.Context) error {
	v, err := s.batchesView(c)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, views.BatchList(s.fragment(c), v))
}

// cancelBatchForm cancels a batch from the batches page.
func (s *Server) cancelBatchForm(c echo.Context) error {
	b, err := s.desk.CancelBatch(c.Request().Context(), actor(c), c.Param("id"))
	if err != nil {
		return err
	}
	msg := "Canceled the batch " + quote(b.Title) + "."
	if !b.Ended() {
		msg += " " + views.Plural(b.Reserved, "job") + " in progress may still finish."
	}
	s.flash(c, msg)
	return redirect(c, "/supervisor/batches")
}
