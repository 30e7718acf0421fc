// Package client is the Go client of claimdesk's HTTP API.
//
// It is generated from the API's contract, api/openapi.yaml, by
// oapi-codegen (openapi.gen.go): a type per schema and a method per
// operation of [ClientWithResponses].
package client

//go:generate go tool oapi-codegen -config oapi-codegen.yaml ../api/openapi.yaml
