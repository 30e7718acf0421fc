package handlers

import (
	"net/http"

	"claimdesk/internal/webhooks"

	"github.com/labstack/echo/v4"
)

// Webhooks: producers register endpoints for the events of their own
// queues, supervisors see and manage every endpoint (the desk says who may
// do what, internal/desk/webhooks.go), through /api/v1/webhooks.

// How many deliveries GET /webhooks/{id}/deliveries lists: when no limit
// is given, and at most.
const (
	defaultDeliveries = 50
	maxDeliveries     = 1000
)

func (s *Server) apiWebhooks(c echo.Context) error {
	list, err := s.desk.Webhooks(c.Request().Context(), actor(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, webhooksAnswer{list})
}

func (s *Server) apiCreateWebhook(c echo.Context) error {
	var b createWebhookRequest
	if err := decode(c, &b); err != nil {
		return err
	}
	e, secret, err := s.desk.AddWebhook(c.Request().Context(), actor(c), webhooks.NewEndpoint{URL: b.URL, Events: b.Events, Queues: b.Queues})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, webhookSecretAnswer{e, secret})
}

func (s *Server) apiWebhook(c echo.Context) error {
	e, err := s.desk.Webhook(c.Request().Context(), actor(c), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, e)
}

func (s *Server) apiPatchWebhook(c echo.Context) error {
	var b patchWebhookRequest
	if err := decode(c, &b); err != nil {
		return err
	}
	e, err := s.desk.ChangeWebhook(c.Request().Context(), actor(c), c.Param("id"),
		webhooks.Patch{URL: b.URL, Events: b.Events, Queues: b.Queues, Enabled: b.Enabled})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, e)
}

func (s *Server) apiDeleteWebhook(c echo.Context) error {
	if err := s.desk.RemoveWebhook(c.Request().Context(), actor(c), c.Param("id")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) apiRotateWebhook(c echo.Context) error {
	e, secret, err := s.desk.RotateWebhook(c.Request().Context(), actor(c), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, webhookSecretAnswer{e, secret})
}

func (s *Server) apiDeliveries(c echo.Context) error {
	limit, err := limitParam(c, defaultDeliveries, maxDeliveries)
	if err != nil {
		return err
	}
	list, err := s.desk.WebhookDeliveries(c.Request().Context(), actor(c), c.Param("id"), limit)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, deliveriesAnswer{list})
}

func (s *Server) apiReplay(c echo.Context) error {
	d, err := s.desk.ReplayDelivery(c.Request().Context(), actor(c), c.Param("id"), c.Param("delivery"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, d)
}
