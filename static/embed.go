// Package static holds the browser assets: the stylesheet, the small
// hand-written script, and (after `make build`) htmx from npm in vendor/.
package static

import "embed"

// Files are the assets, served under /static/.
//
//go:embed *
var Files embed.FS
