package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// mainArgs, in the environment, makes the test binary run claimdesk's main
// with these arguments (one per line), as a user would run the program.
const mainArgs = "CLAIMDESK_TEST_MAIN_ARGS"

func TestMain(m *testing.M) {
	if args, ok := os.LookupEnv(mainArgs); ok {
		os.Args = append([]string{"claimdesk"}, strings.Split(args, "\n")...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The contract of every command: exit status 0 on success, 2 on bad usage,
// 1 on failure, with a one-line message on stderr.
func TestExitStatusAndMessage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		env    []string
		args   []string
		status int
		says   string
	}{
		{"an unknown command", nil, []string{"bogus"}, 2, "unknown command"},
		{"a bad setting", []string{"CLAIMDESK_MIN_REPLICAS=-1"}, []string{"queue", "add", "q"}, 2, `bad CLAIMDESK_MIN_REPLICAS "-1"`},
		{"a bad setting of serve", []string{"CLAIMDESK_CRON_INTERVAL=0"}, []string{"serve"}, 2, `bad CLAIMDESK_CRON_INTERVAL "0"`},
		{"a bad setting's flag", nil, []string{"seed", "--rate-user", "5"}, 2, `bad --rate-user "5"`},
		{"a bad flag", nil, []string{"queue", "add", "q", "--lease-seconds", "-5"}, 2, "lease"},
		{"a bad role", nil, []string{"user", "add", "eve", "--role", "wizard"}, 2, `bad role "wizard"`},
		{"Redis not answering", nil, []string{"seed"}, 1, "redis does not answer"},
		{"Redis not answering a command", nil, []string{"queue", "add", "q"}, 1, "redis does not answer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), "CLAIMDESK_REDIS_URL=redis://127.0.0.1:1", mainArgs+"="+strings.Join(tc.args, "\n"))
			cmd.Env = append(cmd.Env, tc.env...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != tc.status {
				t.Fatalf("claimdesk %s: %v, want exit status %d; stderr:\n%s", strings.Join(tc.args, " "), err, tc.status, stderr.String())
			}
			if msg := stderr.String(); strings.Count(msg, "\n") != 1 || !strings.HasSuffix(msg, "\n") || !strings.Contains(msg, tc.says) {
				t.Fatalf("claimdesk %s said on stderr:\n%s\nwant one line saying %q", strings.Join(tc.args, " "), msg, tc.says)
			}
			if stdout.Len() != 0 {
				t.Fatalf("claimdesk %s printed on stdout: %s", strings.Join(tc.args, " "), stdout.String())
			}
		})
	}
}
