// Package api holds the contract of claimdesk's HTTP API: the OpenAPI
// document openapi.yaml, which the server publishes as JSON, and the
// reference page built from it (reference.html, make generate).
package api

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"sync"

	"go.yaml.in/yaml/v4"
)

// YAML is the OpenAPI document as it is written.
//
//go:embed openapi.yaml
var YAML []byte

// Reference is the API's reference page: one HTML file, built from YAML
// by Redocly's CLI, its scripts and styles inline.
//
//go:embed reference.html
var Reference []byte

// JSON returns the OpenAPI document as JSON, converted from YAML once.
var JSON = sync.OnceValues(func() ([]byte, error) {
	var doc any
	if err := yaml.Unmarshal(YAML, &doc); err != nil {
		return nil, fmt.Errorf("openapi.yaml: %w", err)
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("openapi.yaml as JSON: %w", err)
	}
	return out, nil
})
