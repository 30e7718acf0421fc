// Package static holds the browser assets: the stylesheet, the small
// hand-written script (app.js and its modules in js/, type-checked and
// linted by make lint), the icon, and (after `make build`) htmx from npm
// in vendor/.
package static

import (
	"embed"
	"io/fs"
	"path"
)

// files is this directory as built; only the assets in served leave it.
//
//go:embed *
var files embed.FS

// served says whether name is an asset, by its path under /static/: the
// stylesheet, the icon, the script and its modules. vendor/htmx.min.js is
// there once `make build` has copied it in; a build without it serves the
// rest.
func served(name string) bool {
	switch name {
	case "app.css", "app.js", "favicon.svg", "vendor/htmx.min.js":
		return true
	}
	module, _ := path.Match("js/*.js", name)
	return module
}

// Assets are the files served under /static/: the assets alone, never a
// directory (so no listing) nor any other file of the package.
var Assets fs.FS = assets{}

type assets struct{}

func (assets) Open(name string) (fs.File, error) {
	if !served(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return files.Open(name)
}
