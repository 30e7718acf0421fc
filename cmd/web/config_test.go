package main

import (
	"bytes"
	"cmp"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
)

// defaults is the Config of an empty environment and no flags, written
// out: a default that changes fails TestReadConfig.
func defaults() Config {
	return Config{
		Addr:              "127.0.0.1:8080",
		PublicURL:         "http://127.0.0.1:8080",
		LogLevel:          slog.LevelInfo,
		CronInterval:      2 * time.Second,
		ReadTimeout:       60 * time.Second,
		SocketsPerUser:    20,
		SocketsPerAddress: 10000,
		RateUser:          redis_rate.PerSecond(100),
		RateAddress:       redis_rate.PerSecond(3000),
		RateLogin:         redis_rate.PerMinute(6000),
		RateLoginUser:     redis_rate.PerMinute(20),
		MinReplicas:       autoReplicas,
		WebhookTimeout:    15 * time.Second,
		WebhookSchedule: []time.Duration{0, 5 * time.Second, 5 * time.Minute, 30 * time.Minute,
			2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour},
	}
}

// envOf is an environment of name, value pairs.
func envOf(pairs ...string) func(string) string {
	env := map[string]string{}
	for i := 0; i+1 < len(pairs); i += 2 {
		env[pairs[i]] = pairs[i+1]
	}
	return func(k string) string { return env[k] }
}

// cidrs parses CIDRs a test names.
func cidrs(t *testing.T, ss ...string) []*net.IPNet {
	t.Helper()
	var nets []*net.IPNet
	for _, s := range ss {
		_, n, err := net.ParseCIDR(s)
		if err != nil {
			t.Fatal(err)
		}
		nets = append(nets, n)
	}
	return nets
}

func TestReadConfig(t *testing.T) {
	t.Parallel()
	redisAt := func(url string) redisTarget {
		target, err := parseRedisURL(url)
		if err != nil {
			t.Fatal(err)
		}
		return target
	}
	for _, tc := range []struct {
		name string
		env  []string // name, value pairs
		args []string // the command line of serve
		want func(c *Config)
	}{
		{"defaults", nil, nil, func(*Config) {}},
		{"an address", []string{"CLAIMDESK_ADDR", ":9000"}, nil, func(c *Config) { c.Addr, c.PublicURL = ":9000", "http://:9000" }},
		{"an IPv6 address", []string{"CLAIMDESK_ADDR", "[::1]:8080"}, nil, func(c *Config) { c.Addr, c.PublicURL = "[::1]:8080", "http://[::1]:8080" }},
		{"a Redis URL", []string{"CLAIMDESK_REDIS_URL", "redis://127.0.0.1:6379/2"}, nil, func(c *Config) { c.Redis = redisAt("redis://127.0.0.1:6379/2") }},
		{"a Redis cluster", []string{"CLAIMDESK_REDIS_URL", "10.0.0.1:7000,10.0.0.2:7000"}, nil, func(c *Config) { c.Redis = redisAt("10.0.0.1:7000,10.0.0.2:7000") }},
		{"a public URL", []string{"CLAIMDESK_PUBLIC_URL", "https://claimdesk.example.com"}, nil, func(c *Config) { c.PublicURL = "https://claimdesk.example.com" }},
		{"a public URL with a slash", []string{"CLAIMDESK_PUBLIC_URL", "https://claimdesk.example.com:8443/"}, nil, func(c *Config) { c.PublicURL = "https://claimdesk.example.com:8443/" }},
		{"a log level", []string{"CLAIMDESK_LOG_LEVEL", "debug"}, nil, func(c *Config) { c.LogLevel = slog.LevelDebug }},
		{"a log level in capitals", []string{"CLAIMDESK_LOG_LEVEL", "WARN"}, nil, func(c *Config) { c.LogLevel = slog.LevelWarn }},
		{"a duration", []string{"CLAIMDESK_CRON_INTERVAL", "1m30s"}, nil, func(c *Config) { c.CronInterval = 90 * time.Second }},
		{"whole seconds", []string{"CLAIMDESK_CRON_INTERVAL", "5"}, nil, func(c *Config) { c.CronInterval = 5 * time.Second }},
		{"the shortest", []string{"CLAIMDESK_READ_TIMEOUT", "1s"}, nil, func(c *Config) { c.ReadTimeout = time.Second }},
		{"the longest", []string{"CLAIMDESK_READ_TIMEOUT", "3600"}, nil, func(c *Config) { c.ReadTimeout = time.Hour }},
		{"a metrics address", []string{"CLAIMDESK_METRICS_ADDR", "127.0.0.1:9090"}, nil, func(c *Config) { c.MetricsAddr = "127.0.0.1:9090" }},
		{"a metrics token", []string{"CLAIMDESK_METRICS_TOKEN", "s3cret token"}, nil, func(c *Config) { c.MetricsToken = "s3cret token" }},
		{"one websocket per user", []string{"CLAIMDESK_WS_PER_USER", "1"}, nil, func(c *Config) { c.SocketsPerUser = 1 }},
		{"websockets per address", []string{"CLAIMDESK_WS_PER_ADDRESS", "1000000"}, nil, func(c *Config) { c.SocketsPerAddress = 1000000 }},
		{"trusted proxies", []string{"CLAIMDESK_TRUSTED_PROXIES", " 10.0.0.0/8, 192.0.2.7/32,,2001:db8::/32"}, nil,
			func(c *Config) { c.TrustedProxies = cidrs(t, "10.0.0.0/8", "192.0.2.7/32", "2001:db8::/32") }},
		{"a user rate", []string{"CLAIMDESK_RATE_USER", "50/s"}, nil, func(c *Config) { c.RateUser = redis_rate.PerSecond(50) }},
		{"an address rate", []string{"CLAIMDESK_RATE_ADDRESS", "600/m"}, nil, func(c *Config) { c.RateAddress = redis_rate.PerMinute(600) }},
		{"a login rate", []string{"CLAIMDESK_RATE_LOGIN", "9000/h"}, nil, func(c *Config) { c.RateLogin = redis_rate.PerHour(9000) }},
		{"no replicas", []string{"CLAIMDESK_MIN_REPLICAS", "0"}, nil, func(c *Config) { c.MinReplicas = 0 }},
		{"the most replicas", []string{"CLAIMDESK_MIN_REPLICAS", "16"}, nil, func(c *Config) { c.MinReplicas = 16 }},
		{"the shortest webhook timeout", []string{"CLAIMDESK_WEBHOOK_TIMEOUT", "1"}, nil, func(c *Config) { c.WebhookTimeout = time.Second }},
		{"the longest webhook timeout", []string{"CLAIMDESK_WEBHOOK_TIMEOUT", "5m"}, nil, func(c *Config) { c.WebhookTimeout = 5 * time.Minute }},
		{"a webhook timeout in seconds", []string{"CLAIMDESK_WEBHOOK_TIMEOUT", "300"}, nil, func(c *Config) { c.WebhookTimeout = 5 * time.Minute }},
		{"a retry schedule", []string{"CLAIMDESK_WEBHOOK_RETRY_SCHEDULE", "0s, 1m30s,24h"}, nil,
			func(c *Config) { c.WebhookSchedule = []time.Duration{0, 90 * time.Second, 24 * time.Hour} }},
		{"one attempt", []string{"CLAIMDESK_WEBHOOK_RETRY_SCHEDULE", "10s"}, nil, func(c *Config) { c.WebhookSchedule = []time.Duration{10 * time.Second} }},
		{"webhook networks", []string{"CLAIMDESK_WEBHOOK_ALLOW_NETWORKS", "10.20.0.0/16, fd00:1::/64"}, nil,
			func(c *Config) { c.WebhookAllow = cidrs(t, "10.20.0.0/16", "fd00:1::/64") }},
		{"a webhook key", []string{"CLAIMDESK_WEBHOOK_KEY", strings.Repeat("0f", 31) + "A9"}, nil,
			func(c *Config) { c.WebhookKey = append(bytes.Repeat([]byte{0x0f}, 31), 0xa9) }},
		{"a flag", nil, []string{"--cron-interval", "7s"}, func(c *Config) { c.CronInterval = 7 * time.Second }},
		{"a flag wins over the environment", []string{"CLAIMDESK_CRON_INTERVAL", "5s", "CLAIMDESK_WS_PER_USER", "3"}, []string{"--cron-interval=7s"},
			func(c *Config) { c.CronInterval, c.SocketsPerUser = 7*time.Second, 3 }},
		{"a flag wins over a bad environment", []string{"CLAIMDESK_WS_PER_USER", "0"}, []string{"--ws-per-user", "2"},
			func(c *Config) { c.SocketsPerUser = 2 }},
		{"an empty flag is the default", []string{"CLAIMDESK_LOG_LEVEL", "debug", "CLAIMDESK_METRICS_TOKEN", "s3cret"}, []string{"--log-level=", "--metrics-token", ""},
			func(*Config) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, got, err := newFlagSet("serve", envOf(tc.env...)).parse(tc.args)
			if err != nil {
				t.Fatal(err)
			}
			want := defaults()
			tc.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("env %q, flags %q:\n got %+v\nwant %+v", tc.env, tc.args, got, want)
			}
		})
	}
}

// A bad value is a usage error that names the setting as it was given, the
// value (or the bad part of it) and what the setting accepts.
func TestReadConfigRefuses(t *testing.T) {
	t.Parallel()
	const (
		hostPort = `want host:port, such as 127.0.0.1:8080 or :8080`
		redisURL = `want ` + redisURLs
		origin   = `want an http or https origin, such as https://claimdesk.example.com, with no path`
		dur      = `want 1s to 1h, as a duration such as 90s or 2m, or as whole seconds such as 90`
		count    = `want a whole number from 1`
		cidr     = `want comma-separated CIDRs such as 10.0.0.0/8,192.0.2.7/32`
		rate     = `want requests per second, minute or hour, such as 50/s, 600/m or 9000/h`
		replicas = `want a number from 0 to 16`
		timeout  = `want 1s to 5m, as a duration such as 90s or 2m, or as whole seconds such as 90`
		schedule = `want 1 to 20 comma-separated durations, each up to 24h and only the first 0, such as 0s,1m,1h`
		key      = `value: want 64 hex digits (32 bytes), such as openssl rand -hex 32 writes`
	)
	for _, tc := range []struct {
		env  []string
		args []string
		says string
	}{
		{[]string{"CLAIMDESK_ADDR", "localhost"}, nil, `bad CLAIMDESK_ADDR "localhost": ` + hostPort},
		{[]string{"CLAIMDESK_ADDR", "127.0.0.1:80:80"}, nil, `bad CLAIMDESK_ADDR "127.0.0.1:80:80": ` + hostPort},
		{[]string{"CLAIMDESK_REDIS_URL", "localhost"}, nil, `bad CLAIMDESK_REDIS_URL "localhost": ` + redisURL},
		{[]string{"CLAIMDESK_REDIS_URL", "10.0.0.1:7000,10.0.0.2"}, nil, `bad CLAIMDESK_REDIS_URL "10.0.0.2": ` + redisURL},
		{[]string{"CLAIMDESK_REDIS_URL", "http://10.0.0.1:6379"}, nil, `bad CLAIMDESK_REDIS_URL "http://10.0.0.1:6379": ` + redisURL},
		// The password stays out of the message.
		{[]string{"CLAIMDESK_REDIS_URL", "redis://:hunter2@10.0.0.1:6379/x"}, nil,
			`bad CLAIMDESK_REDIS_URL "redis://:xxxxx@10.0.0.1:6379/x": ` + redisURL + ` (redis: invalid database number: "x")`},
		{[]string{"CLAIMDESK_REDIS_URL", "redis://:hunter2@10.0.0.1:port"}, nil,
			`bad CLAIMDESK_REDIS_URL value: ` + redisURL + ` (invalid port ":port" after host)`},
		{[]string{"CLAIMDESK_PUBLIC_URL", "claimdesk.example.com"}, nil, `bad CLAIMDESK_PUBLIC_URL "claimdesk.example.com": ` + origin},
		{[]string{"CLAIMDESK_PUBLIC_URL", "ftp://claimdesk.example.com"}, nil, `bad CLAIMDESK_PUBLIC_URL "ftp://claimdesk.example.com": ` + origin},
		{[]string{"CLAIMDESK_PUBLIC_URL", "https://example.com/claimdesk"}, nil, `bad CLAIMDESK_PUBLIC_URL "https://example.com/claimdesk": ` + origin},
		{[]string{"CLAIMDESK_PUBLIC_URL", "https://claimdesk.example.com/?x"}, nil, `bad CLAIMDESK_PUBLIC_URL "https://claimdesk.example.com/?x": ` + origin},
		{[]string{"CLAIMDESK_LOG_LEVEL", "loud"}, nil, `bad CLAIMDESK_LOG_LEVEL "loud": want debug, info, warn or error`},
		{[]string{"CLAIMDESK_CRON_INTERVAL", "500ms"}, nil, `bad CLAIMDESK_CRON_INTERVAL "500ms": ` + dur},
		{[]string{"CLAIMDESK_CRON_INTERVAL", "0"}, nil, `bad CLAIMDESK_CRON_INTERVAL "0": ` + dur},
		{[]string{"CLAIMDESK_CRON_INTERVAL", "soon"}, nil, `bad CLAIMDESK_CRON_INTERVAL "soon": ` + dur},
		{[]string{"CLAIMDESK_READ_TIMEOUT", "3601"}, nil, `bad CLAIMDESK_READ_TIMEOUT "3601": ` + dur},
		{[]string{"CLAIMDESK_READ_TIMEOUT", "-5"}, nil, `bad CLAIMDESK_READ_TIMEOUT "-5": ` + dur},
		{[]string{"CLAIMDESK_READ_TIMEOUT", "9999999999999"}, nil, `bad CLAIMDESK_READ_TIMEOUT "9999999999999": ` + dur},
		{[]string{"CLAIMDESK_METRICS_ADDR", "9090"}, nil, `bad CLAIMDESK_METRICS_ADDR "9090": ` + hostPort},
		{[]string{"CLAIMDESK_WS_PER_USER", "0"}, nil, `bad CLAIMDESK_WS_PER_USER "0": ` + count},
		{[]string{"CLAIMDESK_WS_PER_ADDRESS", "many"}, nil, `bad CLAIMDESK_WS_PER_ADDRESS "many": ` + count},
		{[]string{"CLAIMDESK_TRUSTED_PROXIES", "10.0.0.0/8, 10.0.0.300/32"}, nil, `bad CLAIMDESK_TRUSTED_PROXIES "10.0.0.300/32": ` + cidr},
		{[]string{"CLAIMDESK_TRUSTED_PROXIES", "10.0.0.1"}, nil, `bad CLAIMDESK_TRUSTED_PROXIES "10.0.0.1": ` + cidr},
		{[]string{"CLAIMDESK_TRUSTED_PROXIES", "10.0.0.0/8;192.0.2.0/24"}, nil, `bad CLAIMDESK_TRUSTED_PROXIES "10.0.0.0/8;192.0.2.0/24": ` + cidr},
		{[]string{"CLAIMDESK_RATE_USER", "50/sec"}, nil, `bad CLAIMDESK_RATE_USER "50/sec": ` + rate},
		{[]string{"CLAIMDESK_RATE_USER", "50/d"}, nil, `bad CLAIMDESK_RATE_USER "50/d": ` + rate},
		{[]string{"CLAIMDESK_RATE_ADDRESS", "0/s"}, nil, `bad CLAIMDESK_RATE_ADDRESS "0/s": ` + rate},
		{[]string{"CLAIMDESK_RATE_ADDRESS", "-5/s"}, nil, `bad CLAIMDESK_RATE_ADDRESS "-5/s": ` + rate},
		{[]string{"CLAIMDESK_RATE_LOGIN", "1.5/s"}, nil, `bad CLAIMDESK_RATE_LOGIN "1.5/s": ` + rate},
		{[]string{"CLAIMDESK_RATE_LOGIN", "10 /m"}, nil, `bad CLAIMDESK_RATE_LOGIN "10 /m": ` + rate},
		{[]string{"CLAIMDESK_RATE_LOGIN", "10"}, nil, `bad CLAIMDESK_RATE_LOGIN "10": ` + rate},
		{[]string{"CLAIMDESK_MIN_REPLICAS", "-1"}, nil, `bad CLAIMDESK_MIN_REPLICAS "-1": ` + replicas},
		{[]string{"CLAIMDESK_MIN_REPLICAS", "17"}, nil, `bad CLAIMDESK_MIN_REPLICAS "17": ` + replicas},
		{[]string{"CLAIMDESK_MIN_REPLICAS", "one"}, nil, `bad CLAIMDESK_MIN_REPLICAS "one": ` + replicas},
		{[]string{"CLAIMDESK_WEBHOOK_TIMEOUT", "500ms"}, nil, `bad CLAIMDESK_WEBHOOK_TIMEOUT "500ms": ` + timeout},
		{[]string{"CLAIMDESK_WEBHOOK_TIMEOUT", "5m1s"}, nil, `bad CLAIMDESK_WEBHOOK_TIMEOUT "5m1s": ` + timeout},
		{[]string{"CLAIMDESK_WEBHOOK_TIMEOUT", "301"}, nil, `bad CLAIMDESK_WEBHOOK_TIMEOUT "301": ` + timeout},
		{[]string{"CLAIMDESK_WEBHOOK_RETRY_SCHEDULE", "0s,soon"}, nil,
			`bad CLAIMDESK_WEBHOOK_RETRY_SCHEDULE "0s,soon": ` + schedule + ` ("soon" is no duration)`},
		{[]string{"CLAIMDESK_WEBHOOK_RETRY_SCHEDULE", "0s,5s,25h"}, nil,
			`bad CLAIMDESK_WEBHOOK_RETRY_SCHEDULE "0s,5s,25h": ` + schedule + ` ("25h" is not from 0 to 24h)`},
		{[]string{"CLAIMDESK_WEBHOOK_RETRY_SCHEDULE", "5s,0s"}, nil,
			`bad CLAIMDESK_WEBHOOK_RETRY_SCHEDULE "5s,0s": ` + schedule + ` (wait 2 is 0: only the first may be)`},
		{[]string{"CLAIMDESK_WEBHOOK_RETRY_SCHEDULE", "1s" + strings.Repeat(",1s", 20)}, nil,
			`bad CLAIMDESK_WEBHOOK_RETRY_SCHEDULE "1s` + strings.Repeat(",1s", 20) + `": ` + schedule + ` (21 waits, want 1 to 20)`},
		{[]string{"CLAIMDESK_WEBHOOK_ALLOW_NETWORKS", "10.0.0.0/8,169.254.169.254"}, nil, `bad CLAIMDESK_WEBHOOK_ALLOW_NETWORKS "169.254.169.254": ` + cidr},
		// The key stays out of the message.
		{[]string{"CLAIMDESK_WEBHOOK_KEY", strings.Repeat("ab", 31)}, nil, `bad CLAIMDESK_WEBHOOK_KEY ` + key},
		{[]string{"CLAIMDESK_WEBHOOK_KEY", strings.Repeat("ab", 33)}, nil, `bad CLAIMDESK_WEBHOOK_KEY ` + key},
		{[]string{"CLAIMDESK_WEBHOOK_KEY", strings.Repeat("zz", 32)}, nil, `bad CLAIMDESK_WEBHOOK_KEY ` + key},
		{[]string{"CLAIMDESK_WEBHOOK_KEY", strings.Repeat("a", 63)}, nil, `bad CLAIMDESK_WEBHOOK_KEY ` + key},
		// Given as a flag, the setting is named as the flag.
		{nil, []string{"--ws-per-user", "0"}, `bad --ws-per-user "0": ` + count},
		{[]string{"CLAIMDESK_RATE_LOGIN", "9/h"}, []string{"--rate-login=9/d"}, `bad --rate-login "9/d": ` + rate},
	} {
		t.Run(strings.Join(append(tc.env, tc.args...), " "), func(t *testing.T) {
			t.Parallel()
			_, _, err := newFlagSet("serve", envOf(tc.env...)).parse(tc.args)
			var u usageError
			if !errors.As(err, &u) || !strings.HasPrefix(err.Error(), tc.says) {
				t.Fatalf("got %v\nwant a usage error saying %s", err, tc.says)
			}
		})
	}
}

// claimdesk help lists every setting: its flag, variable and default.
func TestHelpListsTheSettings(t *testing.T) {
	t.Parallel()
	out, err := command(envOf(), "", "help")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range settings {
		want := regexp.MustCompile(`(?m)^  --` + regexp.QuoteMeta(s.flag) + ` +` + s.env + ` +` + regexp.QuoteMeta(cmp.Or(s.def, "empty")) + `$`)
		if !want.MatchString(out) {
			t.Errorf("claimdesk help has no line matching %s:\n%s", want, out)
		}
	}
}

// settingsTable is docs/settings.md's table: its rows' cells by
// environment variable.
func settingsTable(t *testing.T) map[string][]string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/settings.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	for line := range strings.Lines(string(doc)) {
		if !strings.HasPrefix(line, "| `CLAIMDESK_") {
			continue
		}
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), " | ")
		if len(cells) < 4 {
			t.Fatalf("docs/settings.md: a row of fewer than 4 cells (environment, flag, default, meaning): %s", line)
		}
		env := strings.Trim(strings.TrimSpace(cells[0]), "`")
		if _, twice := rows[env]; twice {
			t.Errorf("docs/settings.md has two rows of %s", env)
		}
		rows[env] = cells
	}
	return rows
}

// docs/settings.md has a row for every setting, with its flag and its
// default, and no row of anything else.
func TestSettingsAreDocumented(t *testing.T) {
	t.Parallel()
	rows := settingsTable(t)
	for _, s := range settings {
		cells, ok := rows[s.env]
		if !ok {
			t.Errorf("docs/settings.md has no row of %s", s.env)
			continue
		}
		delete(rows, s.env)
		if flag := "`--" + s.flag + "`"; cells[1] != flag {
			t.Errorf("docs/settings.md gives %s the flag %s, want %s", s.env, cells[1], flag)
		}
		def := "empty"
		if s.def != "" {
			def = "`" + s.def + "`"
		}
		if !strings.HasPrefix(cells[2], def) {
			t.Errorf("docs/settings.md gives %s the default %s, want one that begins %s", s.env, cells[2], def)
		}
	}
	for env := range rows {
		t.Errorf("docs/settings.md has a row of %s, which is no setting", env)
	}
}

// Every field of Config says in its comment which setting it is (flag and
// environment variable) and its default, and every setting is one field.
func TestConfigFieldsNameTheirSettings(t *testing.T) {
	t.Parallel()
	file, err := parser.ParseFile(token.NewFileSet(), "config.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var fields []*ast.Field
	ast.Inspect(file, func(n ast.Node) bool {
		if ts, ok := n.(*ast.TypeSpec); ok && ts.Name.Name == "Config" {
			fields = ts.Type.(*ast.StructType).Fields.List
		}
		return fields == nil
	})
	if len(fields) != reflect.TypeFor[Config]().NumField() {
		t.Fatalf("found %d fields of Config in config.go, want %d (one per line)", len(fields), reflect.TypeFor[Config]().NumField())
	}
	named := map[string]string{} // env by field
	for _, f := range fields {
		name := f.Names[0].Name
		doc := strings.Join(strings.Fields(f.Doc.Text()), " ")
		for _, s := range settings {
			if !strings.Contains(doc, "(--"+s.flag+", "+s.env+";") {
				continue
			}
			if prev, ok := named[name]; ok {
				t.Errorf("the comment of Config.%s names %s and %s", name, prev, s.env)
			}
			named[name] = s.env
			def := s.def
			if def == "" {
				def = "empty"
			}
			if !strings.Contains(doc, "; default "+def) {
				t.Errorf("the comment of Config.%s does not give its default as %q: %s", name, "; default "+def, doc)
			}
		}
		if _, ok := named[name]; !ok {
			t.Errorf("the comment of Config.%s names no setting as (--flag, CLAIMDESK_…; default …): %s", name, doc)
		}
	}
	for _, s := range settings {
		n := 0
		for _, env := range named {
			if env == s.env {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s is named by %d fields of Config, want 1", s.env, n)
		}
	}
}

// Every CLAIMDESK_* name in the docs, the code, the tests and the build
// is a setting, or one of the few names that are not.
func TestSettingNamesAreSettings(t *testing.T) {
	t.Parallel()
	notSettings := map[string]string{
		"CLAIMDESK_SESSION_SECRET": "docs/settings.md: claimdesk needs none",
		"CLAIMDESK_E2E_PORT":       "the browser tests' first port",
		"CLAIMDESK_TEST_MAIN_ARGS": "exit_test.go: runs main in the test binary",
	}
	isSetting := func(name string) bool {
		return slices.ContainsFunc(settings, func(s setting) bool { return s.env == name })
	}
	nameRE := regexp.MustCompile(`CLAIMDESK_[A-Z0-9_]*(\*)?`)
	seen := 0
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && path != "../.." || d.Name() == "node_modules" || d.Name() == "var" {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".md", ".ts", ".js", ".yml", ".yaml", ".sh":
		default:
			if d.Name() != "Makefile" {
				return nil
			}
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, name := range nameRE.FindAllString(string(text), -1) {
			seen++
			// CLAIMDESK_RATE_* in the docs, or a prefix in code, stands
			// for the settings it begins.
			if prefix := strings.TrimSuffix(name, "*"); strings.HasSuffix(prefix, "_") {
				if !slices.ContainsFunc(settings, func(s setting) bool { return strings.HasPrefix(s.env, prefix) }) {
					t.Errorf("%s: %s is the start of no setting", path, name)
				}
				continue
			}
			if _, ok := notSettings[name]; !ok && !isSetting(name) {
				t.Errorf("%s: %s is no setting (docs/settings.md lists them)", path, name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < len(settings) {
		t.Fatalf("found %d CLAIMDESK_* names in the project, fewer than its %d settings", seen, len(settings))
	}
}
