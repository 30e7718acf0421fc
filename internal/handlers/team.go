package handlers

import (
	"net/http"

	"claimdesk/internal/tasks"
	"claimdesk/views"

	"github.com/labstack/echo/v4"
)

// Team: the Team page and GET /api/v1/team, where everyone who works jobs
// is, what they hold and what their reservations came to (desk.Team);
// and an operator's saying they are away.

func (s *Server) teamPage(c echo.Context) error {
	t, w, err := s.desk.Team(c.Request().Context(), actor(c), true, true)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, views.TeamPage(s.page(c, "Team"), t, w))
}

func (s *Server) teamWorkFragment(c echo.Context) error {
	_, w, err := s.desk.Team(c.Request().Context(), actor(c), false, true)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, views.TeamWorkTable(w))
}

func (s *Server) teamFragment(c echo.Context) error {
	t, _, err := s.desk.Team(c.Request().Context(), actor(c), true, false)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, views.TeamTable(t))
}

// setAway lets an operator say they are away (no new-job notices) or back.
func (s *Server) setAway(c echo.Context) error {
	away := c.FormValue("away") == "1"
	if err := s.desk.SetAway(c.Request().Context(), actor(c), away); err != nil {
		return err
	}
	if !away { // while away, the home page itself says so
		s.flash(c, "Welcome back: new jobs are announced again.")
	}
	return redirect(c, "/")
}

func tallyOut(t tasks.Tally) tallyJSON {
	out := tallyJSON{Completed: t.Completed, GivenBack: t.GivenBack, Failed: t.Failed, Expired: t.Expired, TakenBack: t.TakenBack,
		Approved: t.Approved, SentBack: t.SentBack, Judged: t.Judged, Agreed: t.Agreed}
	if m := t.MedianHandling(); m > 0 {
		secs := m.Seconds()
		out.MedianHandlingSeconds = &secs
	}
	return out
}

// apiTeam answers what the Team page shows: everyone who works jobs, where
// they are, what they hold, and their numbers of today and the last week.
func (s *Server) apiTeam(c echo.Context) error {
	t, w, err := s.desk.Team(c.Request().Context(), actor(c), true, true)
	if err != nil {
		return err
	}
	tallies := map[string]tasks.PersonTally{}
	for _, wk := range w.Workers {
		tallies[wk.User.Name] = wk.Tally
	}
	out := make([]memberJSON, 0, len(t.Members))
	for _, m := range t.Members {
		tally := tallies[m.User.Name]
		mj := memberJSON{Name: m.User.Name, Role: m.User.Role, Status: string(m.Status), Holding: []heldJSON{},
			Skills: m.User.Skills.List(), Waiting: m.Waiting,
			LastActionAt: optional(m.LastAction), Today: tallyOut(tally.Today), Last7Days: tallyOut(tally.Window)}
		for _, j := range m.Held {
			mj.Holding = append(mj.Holding, heldJSON{ID: j.ID, Queue: j.Queue, Title: j.Title, ReservedAt: j.ReservedAt})
		}
		out = append(out, mj)
	}
	stuck := make([]stuckJSON, len(t.Stuck))
	for i, l := range t.Stuck {
		stuck[i] = stuckJSON{Queue: l.Queue, Person: l.Person, Skills: l.Skills.List(), Waiting: l.Waiting, FirstJob: l.First}
	}
	return c.JSON(http.StatusOK, teamAnswer{MoreHeld: t.More, People: out, Stuck: stuck})
}
