package handlers

import (
	"cmp"
	"context"
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

// team gathers what the Team page shows of everyone: where they are
// (presence, when set) and what their reservations came to (work, when
// set), from one read of the people.
func (s *Server) team(ctx context.Context, presence, work bool) (v views.TeamView, w views.TeamWork, err error) {
	people, err := s.users.List(ctx)
	if err != nil {
		return v, w, err
	}
	if presence {
		if v, err = s.teamView(ctx, people); err != nil {
			return v, w, err
		}
	}
	if work {
		w, err = s.teamWork(ctx, people)
	}
	return v, w, err
}

// teamView gathers the Team page: everyone who logs in, whether they have
// a page open, are idle or away, what they hold and since when.
func (s *Server) teamView(ctx context.Context, people []users.User) (views.TeamView, error) {
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

// teamWork gathers the Team page's numbers: what the reservations of
// everyone who works jobs came to today and in the last week, across all
// queues, most completed first.
func (s *Server) teamWork(ctx context.Context, people []users.User) (views.TeamWork, error) {
	queues, err := s.tasks.QueueNames(ctx)
	if err != nil {
		return views.TeamWork{}, err
	}
	tallies, err := s.tasks.Tallies(ctx, queues)
	if err != nil {
		return views.TeamWork{}, err
	}
	var w views.TeamWork
	for _, u := range people {
		if u.Role == users.Producer {
			continue
		}
		wk := views.Worker{User: u}
		if t := tallies[u.Name]; t != nil {
			wk.Tally = *t
		}
		w.Workers = append(w.Workers, wk)
	}
	slices.SortStableFunc(w.Workers, func(a, b views.Worker) int {
		return cmp.Or(cmp.Compare(b.Tally.Window.Completed, a.Tally.Window.Completed),
			cmp.Compare(b.Tally.Window.Ended(), a.Tally.Window.Ended()), strings.Compare(a.User.Name, b.User.Name))
	})
	return w, nil
}

func (s *Server) teamPage(c echo.Context) error {
	v, w, err := s.team(c.Request().Context(), true, true)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, views.TeamPage(s.page(c, "Team"), v, w))
}

func (s *Server) teamWorkFragment(c echo.Context) error {
	_, w, err := s.team(c.Request().Context(), false, true)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, views.TeamWorkTable(w))
}

func (s *Server) teamFragment(c echo.Context) error {
	v, _, err := s.team(c.Request().Context(), true, false)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, views.TeamTable(v))
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
	out := tallyJSON{Completed: t.Completed, GivenBack: t.GivenBack, Failed: t.Failed, Expired: t.Expired, TakenBack: t.TakenBack}
	if m := t.MedianHandling(); m > 0 {
		secs := m.Seconds()
		out.MedianHandlingSeconds = &secs
	}
	return out
}

// apiTeam answers what the Team page shows: everyone who works jobs, where
// they are, what they hold, and their numbers of today and the last week.
func (s *Server) apiTeam(c echo.Context) error {
	v, w, err := s.team(c.Request().Context(), true, true)
	if err != nil {
		return err
	}
	tallies := map[string]tasks.PersonTally{}
	for _, wk := range w.Workers {
		tallies[wk.User.Name] = wk.Tally
	}
	out := make([]memberJSON, 0, len(v.Members))
	for _, m := range v.Members {
		t := tallies[m.User.Name]
		mj := memberJSON{Name: m.User.Name, Role: m.User.Role, Status: string(m.Status), Holding: []heldJSON{},
			LastActionAt: optional(m.LastAction), Today: tallyOut(t.Today), Last7Days: tallyOut(t.Window)}
		for _, j := range m.Held {
			mj.Holding = append(mj.Holding, heldJSON{ID: j.ID, Queue: j.Queue, Title: j.Title, ReservedAt: j.ReservedAt})
		}
		out = append(out, mj)
	}
	return c.JSON(http.StatusOK, teamAnswer{MoreHeld: v.More, People: out})
}
