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

// -h and --help, after any command or none, print its usage on standard
// output and end well, without connecting to Redis.
func TestHelpExitsZero(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		says []string
	}{
		{[]string{"-h"}, []string{"usage: claimdesk [serve|seed|", "CLAIMDESK_REDIS_URL"}},
		{[]string{"--help"}, []string{"usage: claimdesk [serve|seed|", "CLAIMDESK_REDIS_URL"}},
		{[]string{"serve", "-h"}, []string{"usage: claimdesk serve [flags]", "--cron-interval"}},
		{[]string{"seed", "--help"}, []string{"usage: claimdesk seed [flags]", "--reset", "--if-empty", "CLAIMDESK_REDIS_URL"}},
		{[]string{"queue", "add", "-h"}, []string{"usage: claimdesk queue add NAME [flags]", "--lease-seconds", "--outcome"}},
		{[]string{"queue", "add", "q", "--max-held", "2", "--help"}, []string{"usage: claimdesk queue add NAME [flags]"}},
		{[]string{"user", "add", "-h"}, []string{"usage: claimdesk user add NAME [flags]", "--role", "--password-stdin"}},
		{[]string{"user", "disable", "-h"}, []string{"usage: claimdesk user disable NAME [flags]"}},
		{[]string{"token", "revoke", "--help"}, []string{"usage: claimdesk token revoke ID [flags]"}},
		{[]string{"token", "-h"}, []string{"usage: claimdesk token … (token add, token list, token revoke;"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), "CLAIMDESK_REDIS_URL=redis://127.0.0.1:1", mainArgs+"="+strings.Join(tc.args, "\n"))
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("claimdesk %s: %v, want exit status 0; stderr:\n%s", strings.Join(tc.args, " "), err, stderr.String())
			}
			for _, want := range tc.says {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("claimdesk %s printed:\n%s\nwant %q in it", strings.Join(tc.args, " "), stdout.String(), want)
				}
			}
			if stderr.Len() != 0 {
				t.Errorf("claimdesk %s said on stderr: %s", strings.Join(tc.args, " "), stderr.String())
			}
		})
	}
}
