// Package client is the Go client of claimdesk's HTTP API.
//
// Most of it is generated from the API's contract, api/openapi.yaml, by
// oapi-codegen (openapi.gen.go): a type per schema and a method per
// operation of [ClientWithResponses]. Over it, [Desk] makes the common
// loops short: a producer enqueues jobs and waits for their results; an
// operator claims a job, completes it and takes the next. Each refusal of
// the server comes back as an [*APIError], with its status, the API's
// error code and, for a 429 or a 503, how long to wait before a retry.
//
// A receiver of claimdesk's webhooks checks each delivery with
// [VerifyWebhook], or [ParseWebhook] to have its event too: signed with
// the endpoint's secret as the Standard Webhooks specification says, and
// sent within minutes of now.
package client

//go:generate go tool oapi-codegen -config oapi-codegen.yaml ../api/openapi.yaml
