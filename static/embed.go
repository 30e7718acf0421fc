// Package static holds the browser assets: the stylesheet, the small
// hand-written script, the icon, and (after `make build`) htmx from npm in
// vendor/.
package static

import (
	"embed"
	"io/fs"
	"slices"
)

// files is this directory as built; only the assets in served leave it.
//
//go:embed *
var files embed.FS

// served are the assets by their path under /static/. vendor/htmx.min.js
// is there once `make build` has copied it in; a build without it serves
// the rest.
var served = []string{"app.css", "app.js", "favicon.svg", "vendor/htmx.min.js"}

// Assets are the files served under /static/: the assets alone, never a
// directory (so no listing) nor any other file of the package.
var Assets fs.FS = assets{}

type assets struct{}

func (assets) Open(name string) (fs.File, error) {
	if !slices.Contains(served, name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return files.Open(name)
}
