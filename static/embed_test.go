package static

import (
	"errors"
	"io/fs"
	"testing"
)

// TestAssets checks that the script's modules are served with it, and
// nothing that is not an asset.
func TestAssets(t *testing.T) {
	for _, tc := range []struct {
		name   string
		served bool
	}{
		{"app.js", true},
		{"app.css", true},
		{"favicon.svg", true},
		{"js/live.js", true},
		{"js/countdown.js", true},
		{"js/nothing.js", false},
		{"js", false},
		{"js/", false},
		{"tsconfig.json", false},
		{"embed.go", false},
		{"js/../embed.go", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := fs.Stat(Assets, tc.name)
			if tc.served && err != nil {
				t.Errorf("not served: %v", err)
			}
			if !tc.served && !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("served (err %v), want not found", err)
			}
		})
	}
}
