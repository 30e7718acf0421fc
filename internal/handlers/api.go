package handlers

import (
	"encoding/json"
	"time"

	"claimdesk/internal/audit"
	"claimdesk/internal/tasks"
	"claimdesk/internal/users"
	"claimdesk/internal/webhooks"
)

// The bodies of /api/v1 that are not the engine's own types (tasks.Job,
// tasks.Batch, tasks.Queue, tasks.Entry…) nor the webhooks' (their
// Endpoint and Delivery): what each route takes and what
// it answers, as api/openapi.yaml describes them. Fields are in the order in
// which they are sent.

// Requests.

// enqueueRequest is one job, or a batch in "jobs" (POST
// /queues/{queue}/jobs).
type enqueueRequest struct {
	tasks.NewJob
	Jobs []tasks.NewJob `json:"jobs"`
}

// claimAnyRequest names the queues to claim from (POST /claim); no body,
// or no "queues": every queue granted the operator.
type claimAnyRequest struct {
	Queues []string `json:"queues"`
}

// holderRequest is the body of the holder's actions (POST
// /jobs/{id}/complete, release, skip, extend and fail): the reservation's
// token, and what each action takes besides.
type holderRequest struct {
	Token   string          `json:"token"`
	Result  json.RawMessage `json:"result"`
	Reason  string          `json:"reason"`
	Seconds int             `json:"seconds"`
}

// sendBackRequest is a reviewer's send-back (POST /jobs/{id}/send-back).
type sendBackRequest struct {
	Token string `json:"token"`
	Note  string `json:"note"`
}

// draftRequest is the holder's draft (PUT /jobs/{id}/draft).
type draftRequest struct {
	Token  string          `json:"token"`
	Values json.RawMessage `json:"values"`
}

// draftAnswer says when a draft was saved.
type draftAnswer struct {
	SavedAt time.Time `json:"saved_at"`
}

// cancelManyRequest names the jobs to cancel (POST /jobs/cancel).
type cancelManyRequest struct {
	IDs    []string `json:"ids"`
	Force  bool     `json:"force"`
	Reason string   `json:"reason"`
}

// reasonRequest says why a supervisor requeues (POST /jobs/{id}/requeue,
// POST /queues/{queue}/requeue-dead); the body is optional.
type reasonRequest struct {
	Reason string `json:"reason"`
}

// requeueManyRequest names the dead jobs to requeue, and why (POST
// /jobs/requeue).
type requeueManyRequest struct {
	IDs    []string `json:"ids"`
	Reason string   `json:"reason"`
}

// addToBatchRequest is the jobs to add to an open batch (POST
// /batches/{id}/jobs).
type addToBatchRequest struct {
	Jobs []tasks.NewJob `json:"jobs"`
}

// createUserRequest is a new person (POST /users).
type createUserRequest struct {
	Name     string     `json:"name"`
	Role     users.Role `json:"role"`
	Queues   []string   `json:"queues"`
	Skills   []string   `json:"skills"`
	Training bool       `json:"training"`
	Password string     `json:"password"`
}

// patchUserRequest is a change to a person (PATCH /users/{name}): what is
// left out stays.
type patchUserRequest struct {
	Role     *users.Role `json:"role"`
	Queues   *[]string   `json:"queues"`
	Skills   *[]string   `json:"skills"`
	Training *bool       `json:"training"`
	Password string      `json:"password"`
}

// assignRequest names the person to route a job to, and why (POST
// /jobs/{id}/assign).
type assignRequest struct {
	Person string `json:"person"`
	Reason string `json:"reason"`
}

// createWebhookRequest registers a webhook (POST /webhooks).
type createWebhookRequest struct {
	URL    string            `json:"url"`
	Events []tasks.EventType `json:"events"`
	Queues []string          `json:"queues"`
}

// patchWebhookRequest is a change to a webhook (PATCH /webhooks/{id}):
// what is left out stays.
type patchWebhookRequest struct {
	URL     *string           `json:"url"`
	Events  []tasks.EventType `json:"events"`
	Queues  *[]string         `json:"queues"`
	Enabled *bool             `json:"enabled"`
}

// Answers.

// errorAnswer is every error: {"error": {"code", "fields"?, "message"}}.
type errorAnswer struct {
	Error errorDetail `json:"error"`
}

// errorDetail is what went wrong: fields, when set, says what is wrong
// with each field of the input.
type errorDetail struct {
	Code    string            `json:"code"`
	Fields  map[string]string `json:"fields,omitempty"`
	Message string            `json:"message"`
}

// queuesAnswer lists the queues the caller may see (GET /queues).
type queuesAnswer struct {
	Queues []queueSummary `json:"queues"`
}

// queueSummary is one entry of GET /queues.
type queueSummary struct {
	Name         string `json:"name"`
	Ready        int64  `json:"ready"`
	Held         int64  `json:"held"`
	Scheduled    int64  `json:"scheduled"`
	Reserved     int64  `json:"reserved"`
	Dead         int64  `json:"dead"`
	LeaseSeconds int    `json:"lease_seconds"`
	MaxAttempts  int    `json:"max_attempts"`
	MaxHeld      int    `json:"max_held"`
	Paused       bool   `json:"paused"`
	// Outcome is the queue's outcome form, which a completion's result
	// must fit.
	Outcome *tasks.Outcome `json:"outcome,omitempty"`
	// AtRisk and Breached count the unfinished jobs at risk of missing
	// their due time and past it.
	AtRisk   int64 `json:"at_risk"`
	Breached int64 `json:"breached"`
}

// minutesAnswer is a queue's numbers of the last day (GET
// /queues/{queue}/numbers).
type minutesAnswer struct {
	Minutes []minuteJSON `json:"minutes"`
}

// minuteJSON is one minute of a queue's numbers.
type minuteJSON struct {
	At        time.Time `json:"at"`
	Ready     int64     `json:"ready"`
	Claims    int64     `json:"claims"`
	Completed int64     `json:"completed"`
	Dead      int64     `json:"dead"`
	// OldestWaitSeconds is how long the oldest ready job had waited.
	OldestWaitSeconds float64 `json:"oldest_wait_seconds"`
}

// requeueDeadAnswer is one step of requeueing a queue's dead jobs (POST
// /queues/{queue}/requeue-dead).
type requeueDeadAnswer struct {
	DeadLeft int64 `json:"dead_left"`
	Requeued int   `json:"requeued"`
}

// jobAnswer is one job enqueued (POST /queues/{queue}/jobs).
type jobAnswer struct {
	Job *tasks.Job `json:"job"`
}

// jobsAnswer is the jobs of one request (POST /queues/{queue}/jobs with
// "jobs", POST /batches/{id}/jobs).
type jobsAnswer struct {
	Jobs []*tasks.Job `json:"jobs"`
}

// claimAnswer is a job claimed and its reservation (POST
// /queues/{queue}/claim, POST /claim).
type claimAnswer struct {
	Job         *tasks.Job      `json:"job"`
	Reservation reservationJSON `json:"reservation"`
}

// reservationJSON is the claim's proof, sent only to the claimer.
type reservationJSON struct {
	Token        string    `json:"token"`
	Deadline     time.Time `json:"deadline"`
	LeaseSeconds int       `json:"lease_seconds"`
}

// claimOf answers the reservation r.
func claimOf(r *tasks.Reservation) *claimAnswer {
	return &claimAnswer{r.Job, reservationJSON{r.Token, r.Deadline, r.Job.LeaseSeconds}}
}

// completeNextAnswer is a completion and the claim that followed it (POST
// /jobs/{id}/complete?next=true): next is null when nothing was claimed,
// and next_error then says why, when a queue's rule refused it.
type completeNextAnswer struct {
	Job       *tasks.Job   `json:"job"`
	Next      *claimAnswer `json:"next"`
	NextError *nextError   `json:"next_error,omitempty"`
}

// nextError is why nothing was claimed after a completion.
type nextError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// extendAnswer is the reservation's new deadline (POST /jobs/{id}/extend).
type extendAnswer struct {
	Deadline *time.Time `json:"deadline"`
}

// historyAnswer is a job's history, oldest first (GET /jobs/{id}/history);
// trimmed, when not 0, is how many of its entries were dropped.
type historyAnswer struct {
	History []tasks.Entry `json:"history"`
	Trimmed int           `json:"trimmed,omitempty"`
}

// jobListAnswer is a page of jobs (GET /jobs): scanned is there when a
// filter was given, and says how many jobs were looked at.
type jobListAnswer struct {
	Jobs       []*tasks.Job `json:"jobs"`
	NextCursor *string      `json:"next_cursor"`
	Scanned    *int         `json:"scanned,omitempty"`
}

// reservationsAnswer is a page of live reservations (GET /reservations).
type reservationsAnswer struct {
	NextCursor   *string            `json:"next_cursor"`
	Reservations []reservationEntry `json:"reservations"`
}

// reservationEntry is one entry of GET /reservations.
type reservationEntry struct {
	Job        *tasks.Job `json:"job"`
	Operator   string     `json:"operator"`
	ReservedAt *time.Time `json:"reserved_at"`
	Deadline   *time.Time `json:"deadline"`
}

// cancelManyAnswer says which jobs were canceled, and why the others were
// not (POST /jobs/cancel).
type cancelManyAnswer struct {
	Canceled []string      `json:"canceled"`
	Failed   []bulkFailure `json:"failed"`
}

// requeueManyAnswer says which jobs were requeued, and why the others
// were not (POST /jobs/requeue).
type requeueManyAnswer struct {
	Requeued []string      `json:"requeued"`
	Failed   []bulkFailure `json:"failed"`
}

// bulkFailure is a job a bulk action could not change, and why.
type bulkFailure struct {
	ID      string `json:"id"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// batchAnswer is a batch made and its first jobs (POST
// /queues/{queue}/batches).
type batchAnswer struct {
	Batch *tasks.Batch `json:"batch"`
	Jobs  []*tasks.Job `json:"jobs"`
}

// usersAnswer lists the people (GET /users).
type usersAnswer struct {
	Users []userJSON `json:"users"`
}

// userJSON is a user as the API shows it (never a password).
type userJSON struct {
	Name     string     `json:"name"`
	Role     users.Role `json:"role"`
	Queues   []string   `json:"queues"`
	Skills   []string   `json:"skills"`
	Training bool       `json:"training"`
	Disabled bool       `json:"disabled"`
}

// tokensAnswer lists a person's API tokens (GET /users/{name}/tokens).
type tokensAnswer struct {
	Tokens []tokenJSON `json:"tokens"`
}

// tokenJSON is an API token as the API lists it (never the token).
type tokenJSON struct {
	ID       string     `json:"id"`
	Created  *time.Time `json:"created_at"`
	LastUsed *time.Time `json:"last_used_at"`
}

// newTokenAnswer is a token made, shown this once (POST
// /users/{name}/tokens).
type newTokenAnswer struct {
	ID    string `json:"id"`
	Token string `json:"token"`
}

// teamAnswer is what the Team page shows (GET /team).
type teamAnswer struct {
	MoreHeld bool         `json:"more_held"`
	People   []memberJSON `json:"people"`
	Stuck    []stuckJSON  `json:"stuck"`
}

// stuckJSON is a line of routed jobs nobody with a page open may take.
type stuckJSON struct {
	Queue    string   `json:"queue"`
	Person   string   `json:"person,omitempty"`
	Skills   []string `json:"skills,omitempty"`
	Waiting  int64    `json:"waiting"`
	FirstJob string   `json:"first_job"`
}

// memberJSON is one person as GET /team shows them.
type memberJSON struct {
	Name         string     `json:"name"`
	Role         users.Role `json:"role"`
	Status       string     `json:"status"`
	Skills       []string   `json:"skills"`
	Waiting      int64      `json:"waiting_for_them"`
	Holding      []heldJSON `json:"holding"`
	LastActionAt *time.Time `json:"last_action_at"`
	Today        tallyJSON  `json:"today"`
	Last7Days    tallyJSON  `json:"last_7_days"`
}

// heldJSON is a job a member holds.
type heldJSON struct {
	ID         string     `json:"id"`
	Queue      string     `json:"queue"`
	Title      string     `json:"title"`
	ReservedAt *time.Time `json:"reserved_at"`
}

// tallyJSON is a tally as the API shows it.
type tallyJSON struct {
	Completed int64 `json:"completed"`
	GivenBack int64 `json:"given_back"`
	Failed    int64 `json:"failed"`
	Expired   int64 `json:"expired"`
	TakenBack int64 `json:"taken_back"`
	// MedianHandlingSeconds is null without completions.
	MedianHandlingSeconds *float64 `json:"median_handling_seconds"`
	// Approved and SentBack count their completions reviewers decided on;
	// Judged their answers agreed with others', Agreed those that agreed
	// with the majority.
	Approved int64 `json:"approved"`
	SentBack int64 `json:"sent_back"`
	Judged   int64 `json:"judged"`
	Agreed   int64 `json:"agreed"`
}

// webhooksAnswer lists the webhooks the caller may manage (GET /webhooks).
type webhooksAnswer struct {
	Webhooks []webhooks.Endpoint `json:"webhooks"`
}

// webhookSecretAnswer is a webhook and its new secret, shown this once
// (POST /webhooks, POST /webhooks/{id}/rotate).
type webhookSecretAnswer struct {
	Webhook webhooks.Endpoint `json:"webhook"`
	Secret  string            `json:"secret"`
}

// deliveriesAnswer is a webhook's latest deliveries, newest first (GET
// /webhooks/{id}/deliveries).
type deliveriesAnswer struct {
	Deliveries []webhooks.Delivery `json:"deliveries"`
}

// auditAnswer is a page of the audit log, newest first (GET /audit).
type auditAnswer struct {
	Entries    []audit.Entry `json:"entries"`
	NextCursor *string       `json:"next_cursor"`
}
