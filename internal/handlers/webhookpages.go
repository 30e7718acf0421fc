package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"claimdesk/internal/tasks"
	"claimdesk/internal/webhooks"
	"claimdesk/views"

	"github.com/labstack/echo/v4"
)

// Webhooks, in the browser: supervisors see every webhook (/webhooks),
// whoever registered it, and add their own; on a webhook's page
// (/webhooks/{id}) they follow its latest deliveries and replay one,
// pause and resume it, rotate its secret and remove it. A secret is shown
// once, on the page that answers the change that made it: never through a
// redirect or the session.

// deliveriesShown is how many of a webhook's latest deliveries its page
// lists.
const deliveriesShown = 50

func (s *Server) renderWebhooks(c echo.Context, status int, v views.WebhooksView) error {
	ctx, a := c.Request().Context(), actor(c)
	var err error
	if v.Endpoints, err = s.desk.Webhooks(ctx, a); err != nil {
		return err
	}
	if v.Queues, err = s.desk.QueueNames(ctx, a); err != nil {
		return err
	}
	v.Sealed = s.desk.WebhookSecretsSealed()
	return s.render(c, status, views.WebhooksPage(s.page(c, "Webhooks"), v))
}

func (s *Server) webhooksPage(c echo.Context) error {
	return s.renderWebhooks(c, http.StatusOK, views.WebhooksView{Form: views.NewWebhookForm()})
}

// addWebhookForm adds a webhook and shows its page with its secret, this
// once. A refused form is shown again as typed, saying what is wrong at
// the field it blames.
func (s *Server) addWebhookForm(c echo.Context) error {
	form, _ := c.FormParams()
	f := views.WebhookForm{URL: strings.TrimSpace(c.FormValue("url")), Every: c.FormValue("scope") != "chosen", Queues: form["queues"]}
	for _, t := range form["events"] {
		f.Events = append(f.Events, tasks.EventType(t))
	}
	n := webhooks.NewEndpoint{URL: f.URL, Events: f.Events}
	if !f.Every {
		if len(f.Queues) == 0 {
			return s.renderWebhooks(c, http.StatusBadRequest, views.WebhooksView{Form: f,
				Problem: views.WebhookProblem{Field: "queues", Message: "Tick the queues whose events it receives, or choose every queue."}})
		}
		n.Queues = f.Queues
	}
	e, secret, err := s.desk.AddWebhook(c.Request().Context(), actor(c), n)
	if err != nil {
		status, problem, err := webhookProblem(err)
		if err != nil {
			return err
		}
		return s.renderWebhooks(c, status, views.WebhooksView{Form: f, Problem: problem})
	}
	return s.renderWebhook(c, http.StatusCreated, views.WebhookView{Endpoint: e, Secret: secret, Added: true})
}

// webhookProblem says in words what was refused of a new webhook, with
// the field to blame and the status to answer it with; it returns err
// when it was no such refusal (the store's trouble, say).
func webhookProblem(err error) (int, views.WebhookProblem, error) {
	var inv *webhooks.InvalidError
	switch {
	case errors.As(err, &inv):
		return http.StatusBadRequest, views.WebhookProblem{Field: inv.Field, Message: sentence(inv.Message)}, nil
	case errors.Is(err, webhooks.ErrTooMany):
		return http.StatusConflict, views.WebhookProblem{Message: fmt.Sprintf(
			"You have %d webhooks already, the most one person may have: remove one first.", webhooks.MaxPerOwner)}, nil
	}
	pub, internal := publicError(err)
	if internal || pub.Status == http.StatusNotFound {
		return 0, views.WebhookProblem{}, err
	}
	return pub.Status, views.WebhookProblem{Message: sentence(pub.Message)}, nil
}

// renderWebhook shows the webhook's page, with its latest deliveries.
func (s *Server) renderWebhook(c echo.Context, status int, v views.WebhookView) error {
	var err error
	if v.Deliveries, err = s.desk.WebhookDeliveries(c.Request().Context(), actor(c), v.Endpoint.ID, deliveriesShown); err != nil {
		return err
	}
	return s.render(c, status, views.WebhookPage(s.page(c, views.WebhookTitle(v.Endpoint)), v))
}

func (s *Server) webhookPage(c echo.Context) error {
	e, err := s.desk.Webhook(c.Request().Context(), actor(c), c.Param("id"))
	if err != nil {
		return err
	}
	return s.renderWebhook(c, http.StatusOK, views.WebhookView{Endpoint: e})
}

// deliveriesFragment is a webhook's latest deliveries, which its page
// fetches afresh every few seconds.
func (s *Server) deliveriesFragment(c echo.Context) error {
	id := c.Param("id")
	ds, err := s.desk.WebhookDeliveries(c.Request().Context(), actor(c), id, deliveriesShown)
	if err != nil {
		return err
	}
	return s.render(c, http.StatusOK, views.Deliveries(s.fragment(c), id, ds))
}

// enableWebhookForm resumes or pauses a webhook from its page. One whose
// URL claimdesk may no longer reach (the networks allowed changed) is not
// changed, and its page says why.
func (s *Server) enableWebhookForm(enabled bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := c.Param("id")
		e, err := s.desk.ChangeWebhook(c.Request().Context(), actor(c), id, webhooks.Patch{Enabled: &enabled})
		var inv *webhooks.InvalidError
		if errors.As(err, &inv) {
			s.note(c, "Not changed: "+sentence(inv.Message)+" Remove this webhook, and add one with a URL claimdesk may reach.")
			return redirect(c, "/webhooks/"+id)
		}
		if err != nil {
			return err
		}
		if enabled {
			s.flash(c, "Resumed the webhook to "+e.URL+": the events that waited for it go out now.")
		} else {
			s.flash(c, "Paused the webhook to "+e.URL+": its events wait for it until you resume it.")
		}
		return redirect(c, "/webhooks/"+id)
	}
}

// rotateWebhookForm gives the webhook a new secret and shows it, this
// once, on the webhook's page.
func (s *Server) rotateWebhookForm(c echo.Context) error {
	e, secret, err := s.desk.RotateWebhook(c.Request().Context(), actor(c), c.Param("id"))
	if err != nil {
		return err
	}
	return s.renderWebhook(c, http.StatusOK, views.WebhookView{Endpoint: e, Secret: secret})
}

func (s *Server) removeWebhookForm(c echo.Context) error {
	ctx, a := c.Request().Context(), actor(c)
	e, err := s.desk.Webhook(ctx, a, c.Param("id"))
	if err != nil {
		return err
	}
	if err := s.desk.RemoveWebhook(ctx, a, e.ID); err != nil {
		return err
	}
	s.flash(c, "Removed the webhook to "+e.URL+", and its deliveries.")
	return redirect(c, "/webhooks")
}

// replayForm makes a delivery again, from its first attempt: at once,
// or once its webhook is resumed.
func (s *Server) replayForm(c echo.Context) error {
	ctx, a := c.Request().Context(), actor(c)
	d, err := s.desk.ReplayDelivery(ctx, a, c.Param("id"), c.Param("delivery"))
	if err != nil {
		return err
	}
	e, err := s.desk.Webhook(ctx, a, c.Param("id"))
	if err != nil {
		return err
	}
	when := "its first attempt is due now"
	if !e.Enabled {
		when = "it goes out once you resume the webhook"
	}
	s.flash(c, "Replaying "+string(d.Event)+" of "+quote(d.Title)+": "+when+".")
	return redirect(c, "/webhooks/"+e.ID)
}

// sentence writes a refusal's message as a sentence: capitalized, with a
// full stop.
func sentence(msg string) string {
	if msg == "" {
		return msg
	}
	return strings.ToUpper(msg[:1]) + msg[1:] + "."
}
