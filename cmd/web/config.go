package main

import (
	"cmp"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"claimdesk/internal/handlers"
	"claimdesk/internal/webhooks"

	"github.com/go-redis/redis_rate/v10"
)

// Config is everything claimdesk can be told. Each setting is a flag and a
// CLAIMDESK_* environment variable: a flag given wins over the
// environment, and an empty or missing value is the default. readConfig
// reads and checks every setting at once, so a Config is valid throughout.
// docs/settings.md lists the settings; a test holds it, and the comments
// below, to the settings table.
type Config struct {
	// Addr is the address serve listens on, as host:port (--addr,
	// CLAIMDESK_ADDR; default 127.0.0.1:8080).
	Addr string
	// Redis is the store (--redis-url, CLAIMDESK_REDIS_URL; default empty:
	// a private redis-server under ./var/redis): a redis://, rediss:// or
	// unix:// URL of one server; with ?master_name=…&addr=… the addresses
	// are Sentinels; host:port,host:port,… is a cluster.
	Redis redisTarget
	// PublicURL is the origin browsers use: http or https, a host, no path;
	// https makes cookies Secure (--public-url, CLAIMDESK_PUBLIC_URL;
	// default empty: http:// and Addr).
	PublicURL string
	// LogLevel is the least level serve logs: debug, info, warn or error
	// (--log-level, CLAIMDESK_LOG_LEVEL; default info). The other commands
	// log only errors at info: a command that fails says why on its own.
	LogLevel slog.Level
	// CronInterval is how often reclaim, promote and retention run, from 1s
	// to 1h (--cron-interval, CLAIMDESK_CRON_INTERVAL; default 2s).
	CronInterval time.Duration
	// ReadTimeout is how long a request may take to arrive, body included,
	// from 1s to 1h; websockets and ?wait outlive it (--read-timeout,
	// CLAIMDESK_READ_TIMEOUT; default 60s).
	ReadTimeout time.Duration
	// MetricsAddr, when set, is a listen address for /metrics alone, which
	// is then not served on Addr (--metrics-addr, CLAIMDESK_METRICS_ADDR;
	// default empty: /metrics on Addr).
	MetricsAddr string
	// MetricsToken, when set, is the bearer token /metrics asks for,
	// wherever it is served (--metrics-token, CLAIMDESK_METRICS_TOKEN;
	// default empty: none).
	MetricsToken string
	// SocketsPerUser is the most websockets one instance keeps open for one
	// user, from 1 (--ws-per-user, CLAIMDESK_WS_PER_USER; default 20).
	SocketsPerUser int
	// SocketsPerAddress is the most websockets one instance keeps open for
	// one client address, from 1 (--ws-per-address,
	// CLAIMDESK_WS_PER_ADDRESS; default 10000).
	SocketsPerAddress int
	// TrustedProxies are the networks of the reverse proxies whose
	// X-Forwarded-For is believed, written as comma-separated CIDRs
	// (--trusted-proxies, CLAIMDESK_TRUSTED_PROXIES; default empty: none).
	TrustedProxies []*net.IPNet
	// RateUser bounds the API requests and websocket upgrades of one user,
	// written N/s, N/m or N/h (--rate-user, CLAIMDESK_RATE_USER; default
	// 100/s).
	RateUser redis_rate.Limit
	// RateAddress bounds the API requests and websocket upgrades from one
	// client address (--rate-address, CLAIMDESK_RATE_ADDRESS; default
	// 3000/s).
	RateAddress redis_rate.Limit
	// RateLogin bounds the login attempts from one client address
	// (--rate-login, CLAIMDESK_RATE_LOGIN; default 6000/m).
	RateLogin redis_rate.Limit
	// RateLoginUser bounds the login attempts for one user name, from any
	// address (--rate-login-user, CLAIMDESK_RATE_LOGIN_USER; default 20/m).
	RateLoginUser redis_rate.Limit
	// MinReplicas is how many replicas must confirm a change before it is
	// answered as done, from 0 to 16 (--min-replicas,
	// CLAIMDESK_MIN_REPLICAS; default empty, here autoReplicas: 1 where
	// every master of the store has a replica at startup, else 0).
	MinReplicas int
	// WebhookTimeout bounds one delivery of a webhook, from the connection
	// to the answer's last byte, from 1s to 5m (--webhook-timeout,
	// CLAIMDESK_WEBHOOK_TIMEOUT; default 15s).
	WebhookTimeout time.Duration
	// WebhookSchedule is the waits before the attempts of a webhook's
	// delivery, the first's from the event and each later one's from the
	// failure before it (webhooks.DefaultSchedule), written as 1 to 20
	// comma-separated durations, each up to 24h and only the first 0
	// (--webhook-retry-schedule, CLAIMDESK_WEBHOOK_RETRY_SCHEDULE; default
	// 0s,5s,5m,30m,2h,5h,10h,10h).
	WebhookSchedule []time.Duration
	// WebhookAllow are the networks webhooks may reach though they are not
	// public, and the only ones they reach over plain http, written as
	// comma-separated CIDRs (--webhook-allow-networks,
	// CLAIMDESK_WEBHOOK_ALLOW_NETWORKS; default empty: none).
	WebhookAllow []*net.IPNet
	// WebhookKey is the key that seals the webhooks' secrets in the store
	// (AES-256-GCM), 32 bytes written as 64 hex digits (--webhook-key,
	// CLAIMDESK_WEBHOOK_KEY; default empty: the secrets are stored as they
	// are).
	WebhookKey []byte
}

// autoReplicas is MinReplicas when it is not set: the store's replicas
// decide it at startup (minReplicas).
const autoReplicas = -1

// setting is one field of Config as the command line and the environment
// give it.
type setting struct {
	env, flag string
	def       string // the default, written as the setting is; "" for none
	// set reads a value into the setting's field of c, or returns the
	// badValue it is not.
	set func(c *Config, v string) error
}

// settings are every setting, in the order docs/settings.md lists them.
var settings = []setting{
	{"CLAIMDESK_ADDR", "addr", "127.0.0.1:8080", func(c *Config, v string) error {
		c.Addr = v
		return hostPort(v)
	}},
	{"CLAIMDESK_REDIS_URL", "redis-url", "", func(c *Config, v string) (err error) {
		c.Redis, err = parseRedisURL(v)
		return err
	}},
	{"CLAIMDESK_PUBLIC_URL", "public-url", "", func(c *Config, v string) error {
		c.PublicURL = v
		return origin(v)
	}},
	{"CLAIMDESK_LOG_LEVEL", "log-level", "info", func(c *Config, v string) error {
		if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
			return badValue{v, "debug, info, warn or error"}
		}
		return nil
	}},
	{"CLAIMDESK_CRON_INTERVAL", "cron-interval", "2s", func(c *Config, v string) (err error) {
		c.CronInterval, err = duration(v, time.Hour)
		return err
	}},
	{"CLAIMDESK_READ_TIMEOUT", "read-timeout", "60s", func(c *Config, v string) (err error) {
		c.ReadTimeout, err = duration(v, time.Hour)
		return err
	}},
	{"CLAIMDESK_METRICS_ADDR", "metrics-addr", "", func(c *Config, v string) error {
		c.MetricsAddr = v
		if v == "" {
			return nil
		}
		return hostPort(v)
	}},
	{"CLAIMDESK_METRICS_TOKEN", "metrics-token", "", func(c *Config, v string) error {
		c.MetricsToken = v
		return nil
	}},
	{"CLAIMDESK_WS_PER_USER", "ws-per-user", strconv.Itoa(handlers.DefaultSocketsPerUser), func(c *Config, v string) (err error) {
		c.SocketsPerUser, err = atLeastOne(v)
		return err
	}},
	{"CLAIMDESK_WS_PER_ADDRESS", "ws-per-address", strconv.Itoa(handlers.DefaultSocketsPerAddress), func(c *Config, v string) (err error) {
		c.SocketsPerAddress, err = atLeastOne(v)
		return err
	}},
	{"CLAIMDESK_TRUSTED_PROXIES", "trusted-proxies", "", func(c *Config, v string) (err error) {
		c.TrustedProxies, err = networks(v)
		return err
	}},
	{"CLAIMDESK_RATE_USER", "rate-user", formatRate(handlers.DefaultRateLimits.User), func(c *Config, v string) (err error) {
		c.RateUser, err = parseRate(v)
		return err
	}},
	{"CLAIMDESK_RATE_ADDRESS", "rate-address", formatRate(handlers.DefaultRateLimits.Address), func(c *Config, v string) (err error) {
		c.RateAddress, err = parseRate(v)
		return err
	}},
	{"CLAIMDESK_RATE_LOGIN", "rate-login", formatRate(handlers.DefaultRateLimits.Login), func(c *Config, v string) (err error) {
		c.RateLogin, err = parseRate(v)
		return err
	}},
	{"CLAIMDESK_RATE_LOGIN_USER", "rate-login-user", formatRate(handlers.DefaultRateLimits.LoginUser), func(c *Config, v string) (err error) {
		c.RateLoginUser, err = parseRate(v)
		return err
	}},
	{"CLAIMDESK_MIN_REPLICAS", "min-replicas", "", func(c *Config, v string) error {
		c.MinReplicas = autoReplicas
		if v == "" {
			return nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 16 {
			return badValue{v, "a number from 0 to 16"}
		}
		c.MinReplicas = n
		return nil
	}},
	{"CLAIMDESK_WEBHOOK_TIMEOUT", "webhook-timeout", shortDuration(webhooks.DefaultTimeout), func(c *Config, v string) (err error) {
		c.WebhookTimeout, err = duration(v, 5*time.Minute)
		return err
	}},
	{"CLAIMDESK_WEBHOOK_RETRY_SCHEDULE", "webhook-retry-schedule", formatSchedule(webhooks.DefaultSchedule), func(c *Config, v string) error {
		schedule, err := webhooks.ParseSchedule(v)
		if err != nil {
			return badValue{v, "1 to 20 comma-separated durations, each up to 24h and only the first 0, such as 0s,1m,1h (" + err.Error() + ")"}
		}
		c.WebhookSchedule = schedule
		return nil
	}},
	{"CLAIMDESK_WEBHOOK_ALLOW_NETWORKS", "webhook-allow-networks", "", func(c *Config, v string) (err error) {
		c.WebhookAllow, err = networks(v)
		return err
	}},
	{"CLAIMDESK_WEBHOOK_KEY", "webhook-key", "", func(c *Config, v string) (err error) {
		c.WebhookKey, err = webhookKey(v)
		return err
	}},
}

// badValue is a setting's value, or the part of it, that the setting does
// not accept, and what it accepts.
type badValue struct {
	value string // empty: not shown
	want  string
}

func (e badValue) Error() string {
	if e.value == "" {
		return "value: want " + e.want
	}
	return fmt.Sprintf("%q: want %s", e.value, e.want)
}

// readConfig reads every setting: the value given as its flag (flags, by
// flag name) if any, else its environment variable, else its default. It
// checks them all, and returns the first that is bad as a usage error that
// names the setting as it was given, the value, and what it accepts.
func readConfig(flags map[string]string, getenv func(string) string) (Config, error) {
	var c Config
	for _, s := range settings {
		v, given := flags[s.flag]
		from := "--" + s.flag
		if !given {
			v, from = getenv(s.env), s.env
		}
		if err := s.set(&c, cmp.Or(v, s.def)); err != nil {
			return Config{}, usagef("bad %s %v", from, err)
		}
	}
	c.PublicURL = cmp.Or(c.PublicURL, "http://"+c.Addr)
	return c, nil
}

// flagSet is the flags of one command: every setting's, and the command's
// own.
type flagSet struct {
	*flag.FlagSet
	getenv func(string) string
}

// newFlagSet returns the flags of the command name, with every setting's
// flag bound; getenv is the environment the settings not given as flags
// come from.
func newFlagSet(name string, getenv func(string) string) *flagSet {
	fs := &flagSet{flag.NewFlagSet(name, flag.ContinueOnError), getenv}
	fs.SetOutput(io.Discard)
	for _, s := range settings {
		fs.String(s.flag, s.def, "the flag of "+s.env+" (docs/settings.md)")
	}
	return fs
}

// parse parses a command's arguments, NAME before or after the flags, and
// reads its Config (readConfig).
func (fs *flagSet) parse(args []string) (name string, c Config, err error) {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	}
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return "", Config{}, helpAsked{fs.usage()}
	} else if err != nil {
		return "", Config{}, usagef("%s: %v", fs.Name(), err)
	}
	if rest := fs.Args(); len(rest) > 0 {
		if name != "" || len(rest) > 1 {
			return "", Config{}, usagef("%s: unexpected arguments %q", fs.Name(), rest)
		}
		name = rest[0]
	}
	flags := map[string]string{}
	fs.Visit(func(f *flag.Flag) { flags[f.Name] = f.Value.String() })
	c, err = readConfig(flags, fs.getenv)
	return name, c, err
}

// usage is what -h prints for the command: what it takes, its own flags
// and the settings.
func (fs *flagSet) usage() string {
	operand := " NAME"
	switch fs.Name() {
	case "serve", "seed", "webhook add", "webhook list":
		operand = ""
	case "token revoke", "webhook remove", "webhook rotate":
		operand = " ID"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "usage: claimdesk %s%s [flags]\n", fs.Name(), operand)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fs.VisitAll(func(f *flag.Flag) {
		if !slices.ContainsFunc(settings, func(s setting) bool { return s.flag == f.Name }) {
			fmt.Fprintf(tw, "  --%s\t%s\n", f.Name, f.Usage)
		}
	})
	_ = tw.Flush()
	_ = printSettings(&b)
	return b.String()
}

// printSettings lists the settings, for claimdesk help.
func printSettings(w io.Writer) error {
	fmt.Fprintln(w, "\nSettings, as flags or environment variables (a flag wins; docs/settings.md says what each means):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  flag\tenvironment\tdefault")
	for _, s := range settings {
		fmt.Fprintf(tw, "  --%s\t%s\t%s\n", s.flag, s.env, cmp.Or(s.def, "empty"))
	}
	return tw.Flush()
}

// logger is the log of serve, on w.
func (c Config) logger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: c.LogLevel}))
}

// commandLogger is the log of the other commands, on standard error: at
// the default level only errors, since a command that fails says why in
// one line of its own (the Redis client's retries would say it once more).
func (c Config) commandLogger() *slog.Logger {
	if c.LogLevel == slog.LevelInfo {
		c.LogLevel = slog.LevelError
	}
	return c.logger(os.Stderr)
}

// rateLimits are the rate settings as the server takes them.
func (c Config) rateLimits() handlers.RateLimits {
	return handlers.RateLimits{User: c.RateUser, Address: c.RateAddress, Login: c.RateLogin, LoginUser: c.RateLoginUser}
}

// hostPort checks a listen address.
func hostPort(v string) error {
	if _, _, err := net.SplitHostPort(v); err != nil {
		return badValue{v, "host:port, such as 127.0.0.1:8080 or :8080"}
	}
	return nil
}

// origin checks a public URL: empty (the default), or an http or https
// origin, a slash after it at most.
func origin(v string) error {
	if v == "" {
		return nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return badValue{v, "an http or https origin, such as https://claimdesk.example.com, with no path"}
	}
	return nil
}

// duration reads a Go duration or whole seconds, from 1s to most.
func duration(v string, most time.Duration) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		if n, err := strconv.Atoi(v); err == nil && n >= 1 && n <= int(most/time.Second) {
			d = time.Duration(n) * time.Second
		}
	}
	if d < time.Second || d > most {
		return 0, badValue{v, "1s to " + shortDuration(most) + ", as a duration such as 90s or 2m, or as whole seconds such as 90"}
	}
	return d, nil
}

// shortDuration writes d as time.Duration's String does, less the zero
// minutes and seconds it ends with: 5m, 2h, 1h30m.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// formatSchedule writes a retry schedule as webhooks.ParseSchedule reads
// it.
func formatSchedule(schedule []time.Duration) string {
	waits := make([]string, len(schedule))
	for i, d := range schedule {
		waits[i] = shortDuration(d)
	}
	return strings.Join(waits, ",")
}

// webhookKey reads the key of the webhooks' secrets: 64 hex digits, or
// none. A bad one is not shown: it is a secret.
func webhookKey(v string) ([]byte, error) {
	if v == "" {
		return nil, nil
	}
	key, err := hex.DecodeString(v)
	if err != nil || len(key) != 32 {
		return nil, badValue{want: "64 hex digits (32 bytes), such as openssl rand -hex 32 writes"}
	}
	return key, nil
}

// atLeastOne reads a whole number from 1.
func atLeastOne(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, badValue{v, "a whole number from 1"}
	}
	return n, nil
}

// networks reads comma-separated CIDRs.
func networks(v string) ([]*net.IPNet, error) {
	var nets []*net.IPNet
	for s := range strings.SplitSeq(v, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		_, n, err := net.ParseCIDR(s)
		if err != nil {
			return nil, badValue{s, "comma-separated CIDRs such as 10.0.0.0/8,192.0.2.7/32"}
		}
		nets = append(nets, n)
	}
	return nets, nil
}

// rateUnits are the periods a rate may be given per.
var rateUnits = map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour}

// rateRE is the form of a rate: a whole number of requests per second,
// minute or hour.
var rateRE = regexp.MustCompile(`^([1-9][0-9]{0,8})/([smh])$`)

// parseRate reads a rate such as 50/s, 600/m or 9000/h.
func parseRate(v string) (redis_rate.Limit, error) {
	m := rateRE.FindStringSubmatch(v)
	if m == nil {
		return redis_rate.Limit{}, badValue{v, "requests per second, minute or hour, such as 50/s, 600/m or 9000/h"}
	}
	n, _ := strconv.Atoi(m[1]) // at most 9 digits
	return redis_rate.Limit{Rate: n, Burst: n, Period: rateUnits[m[2]]}, nil
}

// formatRate writes a rate as parseRate reads it.
func formatRate(l redis_rate.Limit) string {
	for unit, d := range rateUnits {
		if l.Period == d {
			return fmt.Sprintf("%d/%s", l.Rate, unit)
		}
	}
	panic(fmt.Sprintf("a rate per %s", l.Period))
}
