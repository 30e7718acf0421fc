package main

import (
	"bytes"
	"context"
	"math"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSmoke runs every scenario at the smoke sizes against a claimdesk
// binary built for the test: each must run, pass its correctness checks and
// report its targets (which tiny sizes need not meet).
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server and claimdesk processes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	bin := filepath.Join(t.TempDir(), "claimdesk")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "claimdesk/cmd/web")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build claimdesk: %v\n%s", err, out)
	}

	var buf bytes.Buffer
	err := run(ctx, []string{"-smoke", "-json", "", "-claimdesk", bin}, &buf)
	out := buf.String()
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	for _, sc := range scenarios {
		if !strings.Contains(out, "running "+sc.name+"…") {
			t.Errorf("scenario %s did not run", sc.name)
		}
	}
	if !strings.Contains(out, "targets met.") {
		t.Errorf("no summary line")
	}
	if t.Failed() {
		t.Log(out)
	}
}

// TestMissingBinary says how to get the claimdesk binary.
func TestMissingBinary(t *testing.T) {
	c, err := parse([]string{"-smoke", "-claimdesk", filepath.Join(t.TempDir(), "nope")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = runHTTP(context.Background(), c)
	if err == nil || !strings.Contains(err.Error(), "make build") {
		t.Fatalf("err = %v, want one that says to run make build", err)
	}
}

// TestQuantile checks the histogram estimate against Prometheus's rule.
func TestQuantile(t *testing.T) {
	h := histogram{le: []float64{.001, .005, .01, math.Inf(1)}, counts: []float64{0, 50, 100, 100}}
	for _, tc := range []struct{ q, want float64 }{{.5, .005}, {.25, .003}, {.99, .0099}} {
		if got := h.quantile(tc.q); got < tc.want-1e-9 || got > tc.want+1e-9 {
			t.Errorf("quantile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
}
