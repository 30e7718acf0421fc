package handlers

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"claimdesk/internal/desk"
	"claimdesk/internal/skills"
	"claimdesk/internal/tasks"
	"claimdesk/internal/users"
	"claimdesk/views"

	"github.com/labstack/echo/v4"
)

// People: supervisors add people, grant them queues, set their passwords,
// disable and enable them, and make and revoke their API tokens, in the
// browser (/supervisor/people) and through the API (/api/v1/users). A
// supervisor may not disable themselves nor change their own role, so the
// last supervisor cannot lock everyone out by a slip.

func userOut(u users.User) userJSON {
	return userJSON{Name: u.Name, Role: u.Role, Queues: append([]string{}, u.Queues...), Skills: u.Skills.List(), Training: u.Training, Disabled: u.Disabled}
}

// skillsIn reads a person's skills as the API takes them, one by one.
func skillsIn(list []string) (skills.Set, error) {
	set, err := skills.FromList(list)
	if err != nil {
		return nil, &tasks.ValidationError{Field: "skills", Message: err.Error()}
	}
	return set, nil
}

func (s *Server) apiUsers(c echo.Context) error {
	list, err := s.desk.People(c.Request().Context(), actor(c))
	if err != nil {
		return err
	}
	out := make([]userJSON, len(list))
	for i, u := range list {
		out[i] = userOut(u)
	}
	return c.JSON(http.StatusOK, usersAnswer{out})
}

func (s *Server) apiUser(c echo.Context) error {
	u, err := s.desk.PersonNamed(c.Request().Context(), actor(c), c.Param("name"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, userOut(u))
}

func (s *Server) apiCreateUser(c echo.Context) error {
	var b createUserRequest
	if err := decode(c, &b); err != nil {
		return err
	}
	have, err := skillsIn(b.Skills)
	if err != nil {
		return err
	}
	u := users.User{Name: b.Name, Role: b.Role, Queues: b.Queues, Skills: have, Training: b.Training}
	if err := s.desk.AddPerson(c.Request().Context(), actor(c), u, b.Password); err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, userOut(u))
}

func (s *Server) apiPatchUser(c echo.Context) error {
	var b patchUserRequest
	if err := decode(c, &b); err != nil {
		return err
	}
	ch := desk.Change{Role: b.Role, Queues: b.Queues, Training: b.Training, Password: b.Password}
	if b.Skills != nil {
		have, err := skillsIn(*b.Skills)
		if err != nil {
			return err
		}
		ch.Skills = &have
	}
	u, err := s.desk.ChangePerson(c.Request().Context(), actor(c), c.Param("name"), ch)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, userOut(u))
}

// setDisabled disables or enables the named user, and returns them.
func (s *Server) setDisabled(c echo.Context, name string, disabled bool) (users.User, error) {
	if disabled {
		return s.desk.Disable(c.Request().Context(), actor(c), name)
	}
	return s.desk.Enable(c.Request().Context(), actor(c), name)
}

func (s *Server) apiDisable(disabled bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		u, err := s.setDisabled(c, c.Param("name"), disabled)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, userOut(u))
	}
}

func (s *Server) apiTokens(c echo.Context) error {
	ts, err := s.desk.Tokens(c.Request().Context(), actor(c), c.Param("name"))
	if err != nil {
		return err
	}
	out := make([]tokenJSON, len(ts))
	for i, t := range ts {
		out[i] = tokenJSON{t.ID, optional(t.Created), optional(t.LastUsed)}
	}
	return c.JSON(http.StatusOK, tokensAnswer{out})
}

func (s *Server) apiNewToken(c echo.Context) error {
	token, err := s.desk.NewToken(c.Request().Context(), actor(c), c.Param("name"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, newTokenAnswer{ID: users.TokenID(token), Token: token})
}

func (s *Server) apiRevokeToken(c echo.Context) error {
	if err := s.desk.RevokeToken(c.Request().Context(), actor(c), c.Param("name"), c.Param("id")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// The pages.

func (s *Server) renderPeople(c echo.Context, status int, v views.PeopleView) error {
	ctx, a := c.Request().Context(), actor(c)
	var err error
	if v.People, err = s.desk.People(ctx, a); err != nil {
		return err
	}
	if v.Queues, err = s.desk.QueueNames(ctx, a); err != nil {
		return err
	}
	return s.render(c, status, views.PeoplePage(s.page(c, "People"), v))
}

func (s *Server) peoplePage(c echo.Context) error {
	return s.renderPeople(c, http.StatusOK, views.PeopleView{New: users.User{Role: users.Operator}})
}

// personProblem says in words what was refused of a change to a person,
// with the status to answer it with; it returns err when it was no such
// refusal (the store's trouble, say).
func personProblem(err error) (int, string, error) {
	pub, internal := publicError(err)
	if internal || pub.Status == http.StatusNotFound {
		return 0, "", err
	}
	msg := pub.Message
	if i := strings.Index(msg, ": "); i >= 0 && errors.Is(err, users.ErrInvalid) {
		msg = msg[i+2:]
	}
	if errors.Is(err, users.ErrExists) {
		msg = "Someone is already named " + strings.TrimPrefix(msg, users.ErrExists.Error()+": ") + ". Choose another name, or open theirs to change it"
	}
	return pub.Status, sentence(msg), nil
}

// grantForm reads the grant of the People page's forms for a person of
// the role: all queues, a producer's choice alone, which the API says as
// no queues; or the queues ticked, which for an operator may be none. A
// producer with none ticked would reach every queue unasked, so the page
// asks for All queues instead; problem says what to choose.
func grantForm(c echo.Context, role users.Role) (queues []string, all bool, problem string) {
	form, _ := c.FormParams()
	queues = form["queues"]
	switch grant := c.FormValue("grant"); {
	case grant == "all" && role == users.Producer:
		return nil, true, ""
	case grant == "all" && role == users.Operator:
		return queues, true, "All queues is for producers. Tick the queues an operator works."
	case grant == "some" && role == users.Producer && len(queues) == 0:
		return queues, false, "Tick the queues they may fill, or choose All queues."
	}
	return queues, false, ""
}

// allQueues is whether the person's grant is every queue, as the People
// page's grant offers it: a producer's with none listed.
func allQueues(u users.User) bool { return u.Role == users.Producer && len(u.Queues) == 0 }

func (s *Server) addPersonForm(c echo.Context) error {
	u := users.User{Name: strings.TrimSpace(c.FormValue("name")), Role: users.Role(c.FormValue("role")), Training: trainingForm(c)}
	queues, all, problem := grantForm(c, u.Role)
	u.Queues = queues
	typed := c.FormValue("skills")
	if problem == "" {
		u.Skills, problem = skillsForm(typed)
	}
	if problem != "" {
		return s.renderPeople(c, http.StatusBadRequest, views.PeopleView{New: u, Problem: problem, AllQueues: all, Skills: typed})
	}
	err := s.desk.AddPerson(c.Request().Context(), actor(c), u, c.FormValue("password"))
	if err == nil {
		s.flash(c, "Added "+u.Name+" ("+string(u.Role)+").")
		return redirect(c, "/supervisor/people/"+u.Name)
	}
	status, problem, err := personProblem(err)
	if err != nil {
		return err
	}
	return s.renderPeople(c, status, views.PeopleView{New: u, Problem: problem, AllQueues: all, Skills: typed})
}

// trainingForm reads a People page form's "in training" box (a hidden "0"
// before the box, "1" from the box ticked).
func trainingForm(c echo.Context) bool {
	form, _ := c.FormParams()
	v := form["training"]
	return len(v) > 0 && v[len(v)-1] == "1"
}

// skillsForm reads the skills typed in a People page's form; problem says
// what is wrong with them.
func skillsForm(typed string) (skills.Set, string) {
	have, err := skills.Parse(typed)
	if err != nil {
		return nil, "Skills: " + err.Error() + "."
	}
	return have, ""
}

func (s *Server) renderPerson(c echo.Context, status int, v views.PersonView) error {
	ctx, a := c.Request().Context(), actor(c)
	var err error
	if v.Tokens, err = s.desk.Tokens(ctx, a, v.Person.Name); err != nil {
		return err
	}
	if v.Queues, err = s.desk.QueueNames(ctx, a); err != nil {
		return err
	}
	me, _ := currentUser(c)
	v.Self, v.Now = me.Name == v.Person.Name, time.Now()
	return s.render(c, status, views.PersonPage(s.page(c, v.Person.Name), v))
}

func (s *Server) personPage(c echo.Context) error {
	u, err := s.desk.PersonNamed(c.Request().Context(), actor(c), c.Param("name"))
	if err != nil {
		return err
	}
	return s.renderPerson(c, http.StatusOK, views.PersonView{Person: u, AllQueues: allQueues(u), NewToken: s.popNewToken(c, u.Name)})
}

func (s *Server) editPersonForm(c echo.Context) error {
	ctx, a := c.Request().Context(), actor(c)
	role := users.Role(c.FormValue("role"))
	queues, all, problem := grantForm(c, role)
	typed := c.FormValue("skills")
	var have skills.Set
	if problem == "" {
		have, problem = skillsForm(typed)
	}
	if problem != "" {
		u, err := s.desk.PersonNamed(ctx, a, c.Param("name"))
		if err != nil {
			return err
		}
		u.Role, u.Queues, u.Training = role, queues, trainingForm(c)
		return s.renderPerson(c, http.StatusBadRequest, views.PersonView{Person: u, Problem: problem, AllQueues: all, Skills: &typed})
	}
	training := trainingForm(c)
	changed, err := s.desk.ChangePerson(ctx, a, c.Param("name"), desk.Change{Role: &role, Queues: &queues, Skills: &have, Training: &training, Password: c.FormValue("password")})
	if err == nil {
		s.flash(c, "Saved "+changed.Name+".")
		return redirect(c, "/supervisor/people/"+changed.Name)
	}
	status, problem, err := personProblem(err)
	if err != nil {
		return err
	}
	return s.renderPerson(c, status, views.PersonView{Person: changed, Problem: problem, AllQueues: all, Skills: &typed})
}

func (s *Server) disableForm(disabled bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		name := c.Param("name")
		if _, err := s.setDisabled(c, name, disabled); err != nil {
			return err
		}
		if disabled {
			s.flash(c, "Disabled "+name+": their sessions ended and their API tokens stopped working.")
		} else {
			s.flash(c, "Enabled "+name+": they can log in again, and their API tokens work again.")
		}
		return redirect(c, "/supervisor/people/"+name)
	}
}

// newTokenForm makes an API token and sends the browser to the person's
// page, which shows it this once (POST, redirect, GET: reloading that page
// makes no second token). The token waits for that page in the session,
// which lives in the store alone: never in the URL, a cookie or the log.
func (s *Server) newTokenForm(c echo.Context) error {
	ctx, a := c.Request().Context(), actor(c)
	u, err := s.desk.PersonNamed(ctx, a, c.Param("name"))
	if err != nil {
		return err
	}
	token, err := s.desk.NewToken(ctx, a, u.Name)
	if err != nil {
		return err
	}
	s.sessions.Put(ctx, newTokenKey, u.Name+" "+token)
	return redirect(c, "/supervisor/people/"+u.Name)
}

// popNewToken takes the token just made for the person out of the session
// (kept as the person's name, a space and the token): it is shown once. A
// token made for someone else stays for their page.
func (s *Server) popNewToken(c echo.Context, person string) string {
	ctx := c.Request().Context()
	name, token, _ := strings.Cut(s.sessions.GetString(ctx, newTokenKey), " ")
	if name != person || token == "" {
		return ""
	}
	s.sessions.Remove(ctx, newTokenKey)
	return token
}

func (s *Server) revokeTokenForm(c echo.Context) error {
	name, id := c.Param("name"), c.Param("id")
	if err := s.desk.RevokeToken(c.Request().Context(), actor(c), name, id); err != nil {
		return err
	}
	s.flash(c, "Revoked the token "+id+": whatever used it stops working within 2 seconds.")
	return redirect(c, "/supervisor/people/"+name)
}
