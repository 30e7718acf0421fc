package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestSmoke runs every scenario at the smoke sizes against a claimdesk
// binary built for the test: each must run, pass its correctness checks and
// report its targets (which small sizes need not meet). The smoke sizes
// take the branches the default sizes take (the http scenario's batches,
// the floor's operators finding a job or none, its pages polling, the
// webhooks' backlog delivered after a restart): every timed operation must
// have been called, and the floor's every way taken.
func TestSmoke(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	dir := t.TempDir()
	bin, jsonPath := filepath.Join(dir, "claimdesk"), filepath.Join(dir, "bench.json")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "claimdesk/cmd/web")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build claimdesk: %v\n%s", err, out)
	}

	var buf bytes.Buffer
	err := run(ctx, []string{"-smoke", "-json", jsonPath, "-claimdesk", bin}, &buf)
	out := buf.String()
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	defer func() {
		if t.Failed() {
			t.Log(out)
		}
	}()
	for _, sc := range scenarios {
		if !strings.Contains(out, "running "+sc.name+"…") {
			t.Errorf("scenario %s did not run", sc.name)
		}
	}
	if !strings.Contains(out, "targets met.") {
		t.Errorf("no summary line")
	}

	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var results []result
	if err := json.Unmarshal(b, &results); err != nil {
		t.Fatal(err)
	}
	figures := map[string]float64{}
	for _, r := range results {
		// A floor's operators claim afresh only when a complete found no
		// next job: whether that happens within one short phase is
		// chance, so its claims are counted over both phases.
		floorClaims := -1
		for _, op := range r.Ops {
			if strings.HasPrefix(op.Op, "claim (pages ") {
				floorClaims = max(floorClaims, 0) + op.Calls
				continue
			}
			if op.Calls == 0 {
				t.Errorf("%s: %q was never called", r.Scenario, op.Op)
			}
		}
		if floorClaims == 0 {
			t.Errorf("%s: no page's operator ever claimed", r.Scenario)
		}
		for _, f := range r.Figures {
			figures[f.Name] = f.Value
		}
	}
	for _, name := range []string{"batches of 5 jobs",
		"claims that found nothing", "completes that claimed the next job", "completes that found no next job", "polls (every page, every phase)",
		"backlog: deliveries/s, first arrival to last"} {
		if v, ok := figures[name]; !ok || v < 1 {
			t.Errorf("figure %q = %v (reported: %t), want at least 1", name, v, ok)
		}
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

// TestBatchTooBig refuses an http scenario whose jobs cannot fill one
// batch: it would time no batch enqueue.
func TestBatchTooBig(t *testing.T) {
	for _, args := range [][]string{
		{"-operators", "10", "-cycles", "9", "-batch", "50"},
		{"-operators", "100", "-cycles", "100", "-batch", "1001"},
	} {
		_, err := parse(args, io.Discard)
		var usage usageError
		if !errors.As(err, &usage) {
			t.Errorf("parse(%q) = %v, want a usage error", args, err)
		}
	}
	if _, err := parse([]string{"-operators", "10", "-cycles", "10", "-batch", "50"}, io.Discard); err != nil {
		t.Errorf("100 jobs, batches of 50: %v", err)
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

// TestAsynqBuildFails: a peer scenario whose asynq program does not build
// fails, saying which program and why.
func TestAsynqBuildFails(t *testing.T) {
	root := t.TempDir()
	module := filepath.Join(root, asynqModule)
	if err := os.MkdirAll(module, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		filepath.Join(root, "go.mod"):    "module claimdesk\n",
		filepath.Join(module, "go.mod"):  "module claimdesk/cmd/bench/asynq\n",
		filepath.Join(module, "main.go"): "package main\n\nfunc main() { undefined() }\n",
	} {
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(filepath.Join(root, "cmd", "bench"))
	_, err := buildAsynq(context.Background(), t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "build the asynq program") || !strings.Contains(err.Error(), "undefined") {
		t.Fatalf("err = %v, want one that names the asynq program and the compiler's complaint", err)
	}
}

// TestPeerWithoutBatches: with -peer-batches=false the peer scenario
// enqueues and drains on both sides and no more: every job done once, no
// figure or target of claimdesk's batches or lone caller.
func TestPeerWithoutBatches(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := parse([]string{"-smoke", "-peer-batches=false"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	r, err := runPeer(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	var checks []string
	for _, ch := range r.Checks {
		if !ch.OK {
			t.Errorf("check %s: %s", ch.Name, ch.Detail)
		}
		checks = append(checks, ch.Name)
	}
	if !slices.Equal(checks, []string{"claimdesk: every job done exactly once, none left", "asynq: every job done exactly once, none left"}) {
		t.Errorf("checks %q, want the two sides' only", checks)
	}
	for _, f := range r.Figures {
		if strings.Contains(f.Name, "batches") || strings.Contains(f.Name, "alone") {
			t.Errorf("figure %q reported", f.Name)
		}
	}
	if len(r.Targets) != 3 {
		t.Errorf("%d targets, want the three of CPU and memory: %+v", len(r.Targets), r.Targets)
	}
}
