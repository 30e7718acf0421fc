// Package webhooks is the signed, durable delivery of claimdesk's events
// (a job completed, dead or canceled, a batch finished) to the endpoints
// registered for them, as the Standard Webhooks text says
// (https://www.standardwebhooks.com/).
//
// Every delivery is a POST of the event as JSON, {"type", "timestamp",
// "data"}, with the headers webhook-id (the event's id, the same on every
// attempt), webhook-timestamp (the attempt's, in Unix seconds) and
// webhook-signature (Sign, keyed by the endpoint's secret). It goes out
// through Egress, the one way claimdesk reaches a webhook's URL, which
// keeps a URL from aiming claimdesk at its own network. A delivery that
// fails is tried again on a schedule (Delay), and the endpoints' secrets
// are kept sealed at rest (Sealer).
package webhooks
