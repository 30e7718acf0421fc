package handlers

import (
	"cmp"
	"net/http"
	"slices"
	"strings"
	"time"

	"claimdesk/internal/tasks"
	"claimdesk/internal/users"
	"claimdesk/views"

	"github.com/labstack/echo/v4"
)

// idleAfter is how long someone with a page open, holding nothing, may go
// without changing a job before the Team page calls them idle.
const idleAfter = 5 * time.Minute

// teamView gathers the Team page: everyone who logs in, whether they have
// a page open, are idle or away, what they hold and since when.
func (s *Server) teamView(c echo.Context) (views.TeamView, error) {
	ctx := c.Request().Context()
	people, err := s.users.List(ctx)
	if err != nil {
		return views.TeamView{}, err
	}
	seen, err := s.presence.Everyone(ctx)
	if err != nil {
		return views.TeamView{}, err
	}
	held, err := s.tasks.ListReservations(ctx, "", tasks.MaxPageSize, "", tasks.WithoutPayloads)
	if err != nil {
		return views.TeamView{}, err
	}
	byHolder := map[string][]*tasks.Job{}
	for _, j := range held.Jobs {
		byHolder[j.ReservedBy] = append(byHolder[j.ReservedBy], j)
	}
	now := time.Now()
	v := views.TeamView{Now: now, More: held.NextCursor != ""}
	for _, u := range people {
		if u.Role == users.Producer {
			continue
		}
		m := views.Member{User: u, Held: byHolder[u.Name], LastAction: seen[u.Name].LastAction}
		slices.SortFunc(m.Held, func(a, b *tasks.Job) int { return a.ReservedAt.Compare(*b.ReservedAt) })
		switch open := seen[u.Name].Open(now); {
		case u.Disabled || !open:
			m.Status = views.Offline
		case u.Away:
			m.Status = views.Away
		case len(m.Held) > 0 || now.Sub(m.LastAction) < idleAfter:
			m.Status = views.Online
		default:
			m.Status = views.Idle
		}
		v.Members = append(v.Members, m)
	}
	slices.SortStableFunc(v.Members, func(a, b views.Member) int {
		return cmp.Or(cmp.Compare(a.Status.Order(), b.Status.Order()), strings.Compare(a.User.Name, b.User.Name))
	})
	return v, nil
}

func (s *Server) teamPage(c echo.Context) error {
	v, err := s.teamView(c)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, views.TeamPage(s.page(c, "Team"), v))
}

func (s *Server) teamFragment(c echo.Context) error {
	v, err := s.teamView(c)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, views.TeamTable(v))
}

// setAway lets an operator say they are away (no new-job notices) or back.
func (s *Server) setAway(c echo.Context) error {
	u, _ := currentUser(c)
	away := c.FormValue("away") == "1"
	if err := s.users.SetAway(c.Request().Context(), u.Name, away); err != nil {
		return err
	}
	if !away { // while away, the home page itself says so
		s.flash(c, "Welcome back: new jobs are announced again.")
	}
	return redirect(c, "/")
}
