package handlers

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"regexp"
	"strings"
	"sync"

	"claimdesk/api"

	"github.com/labstack/echo/v4"
)

// The API's contract, for anyone to read: the OpenAPI document
// (api/openapi.yaml) as JSON, and the reference page built from it.

func apiDocument(c echo.Context) error {
	doc, err := api.JSON()
	if err != nil {
		return err
	}
	return c.JSONBlob(http.StatusOK, doc)
}

func apiReference(c echo.Context) error {
	c.Response().Header().Set("Content-Security-Policy", referencePolicy())
	return c.HTMLBlob(http.StatusOK, api.Reference)
}

// inlineScript matches a script element of the reference page and its
// text.
var inlineScript = regexp.MustCompile(`(?s)<script[^>]*>(.*?)</script>`)

// referencePolicy is the reference page's Content-Security-Policy: the
// page draws itself with its own inline scripts, allowed by their hashes,
// and sets its styles inline as it draws; nothing comes from elsewhere
// (the logo it asks a CDN for is left out).
var referencePolicy = sync.OnceValue(func() string {
	scripts := []string{"'self'"}
	for _, m := range inlineScript.FindAllSubmatch(api.Reference, -1) {
		sum := sha256.Sum256(m[1])
		scripts = append(scripts, "'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'")
	}
	return "default-src 'self'; img-src 'self' data:; font-src data:; style-src 'self' 'unsafe-inline'; script-src " +
		strings.Join(scripts, " ") + "; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
})
