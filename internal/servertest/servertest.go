// Package servertest runs claimdesk for tests as the users of its API meet
// it: the binary built from cmd/web, serving on a free loopback port over
// a private redis-server, its queues, people and tokens made with its own
// commands.
package servertest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"claimdesk/internal/tasks/taskstest"
)

// Bounds on the server's start and stop.
const (
	startTimeout = 15 * time.Second
	stopTimeout  = 20 * time.Second
)

// binary is the claimdesk binary Main builds.
var binary string

// Main builds the claimdesk binary, runs the package's tests and exits
// with their status. A test package whose tests start servers calls it
// from its TestMain.
func Main(m *testing.M) {
	dir, err := os.MkdirTemp("", "claimdesk-servertest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "servertest:", err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "claimdesk")
	if out, err := exec.Command("go", "build", "-o", binary, "claimdesk/cmd/web").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "servertest: build claimdesk: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Server is a claimdesk serve process of a test.
type Server struct {
	// URL is where it serves: http://127.0.0.1:port.
	URL string
	// Redis is its private redis-server.
	Redis *taskstest.Server
	env   []string

	mu  sync.Mutex
	log bytes.Buffer // what the process wrote
}

// Start starts claimdesk serve for the test over a private redis-server,
// with the settings in env (NAME=value) over the test's defaults (rates
// that no test reaches), and waits until it serves. The test's end stops
// it, and shows what it logged if the test failed.
func Start(tb testing.TB, env ...string) *Server {
	tb.Helper()
	if binary == "" {
		tb.Fatal("servertest: no claimdesk binary: call servertest.Main from TestMain")
	}
	s := &Server{Redis: taskstest.Redis(tb)}
	// Only these settings: none of the environment's reach the server.
	s.env = append([]string{"CLAIMDESK_REDIS_URL=redis://" + s.Redis.Addr(),
		"CLAIMDESK_RATE_USER=100000/s", "CLAIMDESK_RATE_ADDRESS=100000/s"}, env...)

	cmd := exec.Command(binary, "serve", "--addr", "127.0.0.1:0")
	cmd.Env, cmd.Dir = s.env, tb.TempDir()
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	taskstest.DieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	serving := make(chan string, 1)
	exited := make(chan struct{})
	go func() {
		// serve logs where it listens, on a line ending addr=host:port.
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.log.WriteString(line + "\n")
			s.mu.Unlock()
			if _, addr, found := strings.Cut(line, " addr="); found && strings.Contains(line, "claimdesk is serving") {
				serving <- addr
			}
		}
		_, _ = io.Copy(io.Discard, out)
		_ = cmd.Wait()
		close(exited)
	}()
	tb.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(stopTimeout):
			_ = cmd.Process.Kill()
			<-exited
			tb.Errorf("servertest: claimdesk did not stop within %v", stopTimeout)
		}
		if tb.Failed() {
			tb.Logf("claimdesk's log:\n%s", s.Log())
		}
	})
	select {
	case addr := <-serving:
		s.URL = "http://" + addr
	case <-exited:
		tb.Fatalf("servertest: claimdesk ended before serving:\n%s", s.Log())
	case <-time.After(startTimeout):
		tb.Fatalf("servertest: claimdesk did not serve within %v:\n%s", startTimeout, s.Log())
	}
	return s
}

// Log is what the server has logged so far.
func (s *Server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

// Command runs a claimdesk command (queue add NAME, say) over the server's
// store, with stdin on its standard input, and returns what it printed,
// trimmed; it fails the test if the command fails.
func (s *Server) Command(tb testing.TB, stdin string, args ...string) string {
	tb.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env, cmd.Dir = s.env, tb.TempDir()
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		tb.Fatalf("servertest: claimdesk %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(stdout.String())
}

// Token adds the person name with the role (operator, supervisor or
// producer), granted the queues, and returns a new API token of theirs.
// Operators and supervisors get a password too, as they need one.
func (s *Server) Token(tb testing.TB, name, role string, queues ...string) string {
	tb.Helper()
	args := []string{"user", "add", name, "--role", role, "--queues", strings.Join(queues, ",")}
	if role != "producer" {
		args = append(args, "--password-stdin")
	}
	s.Command(tb, "password-of-"+name+"\n", args...)
	return s.Command(tb, "", "token", "add", name)
}
