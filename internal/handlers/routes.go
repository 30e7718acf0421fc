package handlers

import (
	"net/http"

	"claimdesk/internal/users"

	"github.com/labstack/echo/v4"
)

// routes lists every route of claimdesk with its guard: requireUser (a
// session or, under /api/v1, a token) and the roles it is for. The desk
// checks again who may do each action (their grants, themselves); a guard
// here only keeps a role away from pages and calls that are not for it.
// The API's calls that take a queue have no role guard: the desk answers
// them, 404 for a queue that does not exist whoever asks, else a refusal
// that names the queue and the role or grant missing.
// Middleware is given per route, not per group, for the pages: a group's
// middleware would also guard its catch-all route and turn unknown pages
// into 403s.
func (s *Server) routes(e *echo.Echo) {
	user := s.requireUser
	op := requireRole(users.Operator)
	sup := requireRole(users.Supervisor)
	producers := requireRole(users.Producer, users.Supervisor)
	api := e.Group("/api/v1", s.rates.byUser, s.requireUser)

	// Running claimdesk.
	e.GET("/healthz", func(c echo.Context) error { return c.String(http.StatusOK, "ok\n") })
	e.GET("/readyz", s.readyz)
	e.GET("/static/*", asset)

	// Auth (auth.go).
	e.GET("/login", s.loginPage)
	e.POST("/login", s.login, s.rates.logins)
	e.POST("/logout", s.logout, user)

	// Contract (contract.go): for anyone, no token needed.
	e.GET("/api/v1/openapi.json", apiDocument)
	e.GET("/api/reference", apiReference)

	// Live (live.go).
	e.GET("/ws", s.websocket, s.rates.byUser, user)

	// Work (work.go).
	api.POST("/queues/:queue/jobs", s.apiEnqueue)
	api.POST("/queues/:queue/claim", s.apiClaim)
	api.POST("/claim", s.apiClaimAny)
	api.POST("/jobs/:id/complete", s.apiComplete)
	api.POST("/jobs/:id/release", s.apiRelease)
	api.POST("/jobs/:id/skip", s.apiSkip)
	api.POST("/jobs/:id/extend", s.apiExtend)
	api.POST("/jobs/:id/fail", s.apiFail)
	api.POST("/queues/:queue/reviews/claim", s.apiClaimReview)
	api.POST("/jobs/:id/approve", s.apiApprove)
	api.POST("/jobs/:id/send-back", s.apiSendBack)
	api.PUT("/jobs/:id/draft", s.apiSaveDraft)
	e.GET("/", s.home, user)
	e.GET("/fragments/home", s.homeFragment, user, op)
	e.POST("/claim", s.claimAny, user, op)
	e.POST("/queues/:queue/claim", s.claimFrom, user, op)
	e.POST("/queues/:queue/review", s.claimReview, user, op)
	e.GET("/jobs/:id", s.jobPage, user)
	e.POST("/jobs/:id/claim", s.claimJob, user, op)
	e.POST("/jobs/:id/:action", s.workAction, user, op)

	// Jobs (jobs.go).
	api.GET("/jobs", s.apiListJobs)
	api.GET("/jobs/:id", s.apiGetJob)
	api.GET("/jobs/:id/history", s.apiHistory)
	api.GET("/jobs/:id/drafts", s.apiDrafts)
	api.DELETE("/jobs/:id", s.apiCancel, producers)
	api.POST("/jobs/:id/requeue", s.apiRequeue, sup)
	api.POST("/jobs/:id/assign", s.apiAssign, sup)
	api.POST("/jobs/cancel", s.apiCancelMany, sup)
	api.POST("/jobs/requeue", s.apiRequeueMany, sup)
	api.GET("/reservations", s.apiReservations, sup)
	e.POST("/supervisor/jobs/:id/:action", s.superviseJob, user, sup)
	e.POST("/supervisor/queues/:queue/cancel-selected", s.cancelSelectedForm, user, sup)
	e.POST("/supervisor/queues/:queue/requeue-selected", s.requeueSelectedForm, user, sup)

	// Queues (queues.go).
	api.GET("/queues", s.apiQueues)
	api.POST("/queues", s.apiCreateQueue, sup)
	api.PATCH("/queues/:queue", s.apiPatchQueue)
	api.DELETE("/queues/:queue", s.apiDeleteQueue)
	api.POST("/queues/:queue/pause", s.apiPause(true))
	api.POST("/queues/:queue/resume", s.apiPause(false))
	api.POST("/queues/:queue/requeue-dead", s.apiRequeueDead)
	api.GET("/queues/:queue/numbers", s.apiNumbers)
	e.GET("/supervisor", s.supervisorHome, user, sup)
	e.GET("/supervisor/fragments/reservations", s.reservationsFragment, user, sup)
	e.GET("/supervisor/fragments/stats", s.statsFragment, user, sup)
	e.GET("/supervisor/fragments/queues/:queue/numbers", s.queueNumbersFragment, user, sup)
	e.GET("/supervisor/queues/new", s.newQueuePage, user, sup)
	e.POST("/supervisor/queues", s.createQueueForm, user, sup)
	e.GET("/supervisor/queues/:queue", s.queuePage, user, sup)
	e.POST("/supervisor/queues/:queue/settings", s.queueSettingsForm, user, sup)
	e.POST("/supervisor/queues/:queue/pause", s.pauseForm(true), user, sup)
	e.POST("/supervisor/queues/:queue/resume", s.pauseForm(false), user, sup)
	e.POST("/supervisor/queues/:queue/delete", s.deleteQueueForm, user, sup)
	e.POST("/supervisor/queues/:queue/requeue-dead", s.requeueDeadForm, user, sup)

	// Batches (batches.go).
	api.POST("/queues/:queue/batches", s.apiCreateBatch)
	api.POST("/batches/:id/jobs", s.apiAddToBatch, producers)
	api.POST("/batches/:id/seal", s.apiSealBatch, producers)
	api.GET("/batches/:id", s.apiGetBatch, producers)
	api.DELETE("/batches/:id", s.apiCancelBatch, producers)
	e.GET("/supervisor/batches", s.batchesPage, user, sup)
	e.GET("/supervisor/fragments/batches", s.batchesFragment, user, sup)
	e.POST("/supervisor/batches/:id/cancel", s.cancelBatchForm, user, sup)

	// People (people.go).
	api.GET("/users", s.apiUsers, sup)
	api.POST("/users", s.apiCreateUser, sup)
	api.GET("/users/:name", s.apiUser, sup)
	api.PATCH("/users/:name", s.apiPatchUser, sup)
	api.POST("/users/:name/disable", s.apiDisable(true), sup)
	api.POST("/users/:name/enable", s.apiDisable(false), sup)
	api.GET("/users/:name/tokens", s.apiTokens, sup)
	api.POST("/users/:name/tokens", s.apiNewToken, sup)
	api.DELETE("/users/:name/tokens/:id", s.apiRevokeToken, sup)
	e.GET("/supervisor/people", s.peoplePage, user, sup)
	e.POST("/supervisor/people", s.addPersonForm, user, sup)
	e.GET("/supervisor/people/:name", s.personPage, user, sup)
	e.POST("/supervisor/people/:name", s.editPersonForm, user, sup)
	e.POST("/supervisor/people/:name/disable", s.disableForm(true), user, sup)
	e.POST("/supervisor/people/:name/enable", s.disableForm(false), user, sup)
	e.POST("/supervisor/people/:name/tokens", s.newTokenForm, user, sup)
	e.POST("/supervisor/people/:name/tokens/:id/revoke", s.revokeTokenForm, user, sup)

	// Team (team.go).
	api.GET("/team", s.apiTeam, sup)
	e.GET("/supervisor/team", s.teamPage, user, sup)
	e.GET("/supervisor/fragments/team", s.teamFragment, user, sup)
	e.GET("/supervisor/fragments/team-work", s.teamWorkFragment, user, sup)
	e.POST("/away", s.setAway, user, op)

	// Webhooks (webhooks.go; the pages, webhookpages.go).
	api.GET("/webhooks", s.apiWebhooks, producers)
	api.POST("/webhooks", s.apiCreateWebhook, producers)
	api.GET("/webhooks/:id", s.apiWebhook, producers)
	api.PATCH("/webhooks/:id", s.apiPatchWebhook, producers)
	api.DELETE("/webhooks/:id", s.apiDeleteWebhook, producers)
	api.POST("/webhooks/:id/rotate", s.apiRotateWebhook, producers)
	api.GET("/webhooks/:id/deliveries", s.apiDeliveries, producers)
	api.POST("/webhooks/:id/deliveries/:delivery/replay", s.apiReplay, producers)
	e.GET("/webhooks", s.webhooksPage, user, sup)
	e.POST("/webhooks", s.addWebhookForm, user, sup)
	e.GET("/webhooks/:id", s.webhookPage, user, sup)
	e.GET("/webhooks/:id/fragments/deliveries", s.deliveriesFragment, user, sup)
	e.POST("/webhooks/:id/pause", s.enableWebhookForm(false), user, sup)
	e.POST("/webhooks/:id/resume", s.enableWebhookForm(true), user, sup)
	e.POST("/webhooks/:id/rotate", s.rotateWebhookForm, user, sup)
	e.POST("/webhooks/:id/remove", s.removeWebhookForm, user, sup)
	e.POST("/webhooks/:id/deliveries/:delivery/replay", s.replayForm, user, sup)

	// Audit (audit.go).
	api.GET("/audit", s.auditAPI, sup)
	e.GET("/supervisor/audit", s.auditPage, user, sup)
}
