// Command claimdesk serves the claimdesk web app and administers its store:
//
//	claimdesk [serve]                 run the web server
//	claimdesk seed [--reset]          load the demo data
//	claimdesk queue add NAME [flags]  create or update a queue
//	claimdesk user add NAME --role R  create or update a user
//	claimdesk user change NAME        change what the flags say of a user
//	claimdesk user disable NAME       end a user's sessions, refuse their tokens
//	claimdesk user enable NAME        let a disabled user work again
//	claimdesk user unlock NAME        end a user's login delay
//	claimdesk token add NAME          print a new API token for a user
//	claimdesk token list NAME         list a user's tokens: ID CREATED LAST_USED
//	claimdesk token revoke ID         end a token
//	claimdesk webhook add [flags]     register a webhook (--url, --events, --queues), print its secret
//	claimdesk webhook list            list the webhooks, with their health
//	claimdesk webhook remove ID       remove a webhook and its deliveries
//	claimdesk webhook rotate ID       print a webhook's new secret; the old one signs a day more
//	claimdesk [COMMAND] -h            what the command takes, its flags, the settings
//
// Configuration comes from flags or CLAIMDESK_* environment variables,
// read once into a Config (config.go; docs/settings.md lists them); this
// package is the only place that reads them.
package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"claimdesk/internal/audit"
	"claimdesk/internal/cron"
	"claimdesk/internal/desk"
	"claimdesk/internal/durable"
	"claimdesk/internal/handlers"
	"claimdesk/internal/notify"
	"claimdesk/internal/skills"
	"claimdesk/internal/tasks"
	"claimdesk/internal/users"
	"claimdesk/internal/webhooks"
	"claimdesk/seed"

	"github.com/prometheus/client_golang/prometheus"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdin, os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "claimdesk:", err)
		var u usageError
		if errors.As(err, &u) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// usageError is a mistake on the command line (exit status 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// helpAsked is the answer to -h or --help: the usage, which run prints on
// standard output, and the command ends well.
type helpAsked struct{ usage string }

func (h helpAsked) Error() string { return h.usage }

// isHelp reports whether arg asks for help, as the flag package takes it.
func isHelp(arg string) bool {
	return arg == "-h" || arg == "--h" || arg == "-help" || arg == "--help"
}

// run is the whole program: main only adds the process around it.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout io.Writer) error {
	err := dispatch(ctx, args, getenv, stdin, stdout)
	var help helpAsked
	if errors.As(err, &help) {
		_, err = io.WriteString(stdout, help.usage)
	}
	return err
}

// dispatch runs the command args name.
func dispatch(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout io.Writer) error {
	cmd := "serve"
	if len(args) > 0 && (!strings.HasPrefix(args[0], "-") || isHelp(args[0])) {
		cmd, args = args[0], args[1:]
	}
	if isHelp(cmd) {
		cmd = "help"
	}
	switch cmd {
	case "serve":
		return serveCmd(ctx, args, getenv, stdout)
	case "seed":
		return seedCmd(ctx, args, getenv, stdout)
	case "queue", "user", "token", "webhook":
		if len(args) > 0 && isHelp(args[0]) {
			group := slices.DeleteFunc(strings.Split(commands, ", "), func(c string) bool { return !strings.HasPrefix(c, cmd+" ") })
			return helpAsked{fmt.Sprintf("usage: claimdesk %s … (%s; -h after one of them: its flags)\n", cmd, strings.Join(group, ", "))}
		}
		if len(args) == 0 {
			return usagef("usage: claimdesk %s … (%s)", cmd, commands)
		}
		switch sub := cmd + " " + args[0]; sub {
		case "queue add", "user add", "token add":
			return addCmd(ctx, cmd, args[1:], getenv, stdin, stdout)
		case "user change":
			return addCmd(ctx, sub, args[1:], getenv, stdin, stdout)
		case "user disable", "user enable", "user unlock", "token list", "token revoke", "queue pause", "queue resume":
			return adminCmd(ctx, sub, args[1:], getenv, stdout)
		case "webhook add", "webhook list", "webhook remove", "webhook rotate":
			return webhookCmd(ctx, sub, args[1:], getenv, stdout)
		}
		return usagef("unknown command %q (%s)", cmd+" "+args[0], commands)
	case "help":
		fmt.Fprintf(stdout, "usage: claimdesk [%s] [flags]\n", strings.ReplaceAll(commands, ", ", "|"))
		return printSettings(stdout)
	}
	return usagef("unknown command %q (%s)", cmd, commands)
}

// commands are the commands claimdesk knows.
const commands = "serve, seed, queue add, queue pause, queue resume, user add, user change, user disable, user enable, user unlock, token add, token list, token revoke, webhook add, webhook list, webhook remove, webhook rotate"

// stores connects to Redis and returns the stores over it.
type stores struct {
	tasks *tasks.Store
	users *users.Store
	// bus tells running instances of changes made outside them.
	bus *notify.Bus
	// desk does what the administrative commands do (openForCommand).
	desk *desk.Desk
	// webhooks is the registry of webhooks.
	webhooks *webhooks.Store
}

// openForCommand opens the stores for an admin command.
func (c Config) openForCommand(ctx context.Context) (stores, func(), error) {
	log := c.commandLogger()
	st, hc, stop, err := open(ctx, c, log, false)
	if err != nil {
		return st, stop, err
	}
	st.desk = desk.New(desk.Config{Redis: hc.Redis, Tasks: st.tasks, Users: st.users, Bus: st.bus, Log: log,
		Webhooks: st.webhooks})
	return st, stop, nil
}

// open connects to Redis and, unless reset says the caller empties the
// store first, makes sure the store is in this version's format.
func open(ctx context.Context, c Config, log *slog.Logger, reset bool) (stores, *handlers.Config, func(), error) {
	rdb, stop, err := connectRedis(ctx, c.Redis, log)
	if err != nil {
		return stores{}, nil, nil, err
	}
	pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := rdb.Ping(pingCtx).Err(); err != nil {
		stop()
		return stores{}, nil, nil, fmt.Errorf("redis does not answer: %w", err)
	}
	replicas, have, err := minReplicas(pingCtx, rdb, c.MinReplicas)
	if err != nil {
		stop()
		return stores{}, nil, nil, err
	}
	if replicas > have {
		log.Warn("fewer replicas than changes wait for: changes answer 503 until they connect",
			"min_replicas", replicas, "connected", have)
	}
	log.Debug("changes wait for replicas", "min_replicas", replicas, "timeout", replicaTimeout)
	sealer, err := webhooks.NewSealer(c.WebhookKey)
	if err != nil {
		stop()
		return stores{}, nil, nil, err
	}
	s := stores{tasks: tasks.New(rdb, tasks.WithMinReplicas(replicas, replicaTimeout)),
		users: users.New(rdb, users.WithMinReplicas(replicas, replicaTimeout))}
	s.webhooks = webhooks.NewStore(rdb, s.tasks, sealer, c.egress(), durable.Policy{Replicas: replicas, Timeout: replicaTimeout})
	if !reset {
		if err := checkFormat(pingCtx, s.tasks); err != nil {
			stop()
			return stores{}, nil, nil, err
		}
		moved, tokens, err := s.users.Migrate(ctx)
		if err != nil {
			stop()
			return stores{}, nil, nil, err
		}
		if moved+tokens > 0 {
			log.Info("people data moved to its keys under {people}", "users", moved, "tokens", tokens)
		}
	}
	// Every change to a user, from a command or a server, reaches the
	// websockets of every running instance.
	s.bus = notify.NewBus(rdb, log)
	s.users.Observe(s.bus.TellUserChanged)
	return s, &handlers.Config{Redis: rdb, Tasks: s.tasks, Users: s.users, Log: log,
		Bus: s.bus, Hub: notify.NewHub(), Presence: notify.NewPresence(rdb, log), Webhooks: s.webhooks}, stop, nil
}

// egress is how webhooks reach their endpoints.
func (c Config) egress() *webhooks.Egress {
	return &webhooks.Egress{Allow: c.WebhookAllow, Timeout: c.WebhookTimeout}
}

// checkFormat refuses a store of another storage format, saying how to
// start afresh.
func checkFormat(ctx context.Context, ts *tasks.Store) error {
	err := ts.CheckFormat(ctx)
	if errors.Is(err, tasks.ErrStorageFormat) {
		return fmt.Errorf("%w; to start afresh, empty it: claimdesk seed --reset deletes every claimdesk key and loads the demo data", err)
	}
	return err
}

// announceCloseTimeout bounds how long shutdown waits for pending notices
// to be published.
const announceCloseTimeout = 5 * time.Second

// serveCmd runs `serve`.
func serveCmd(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	_, c, err := newFlagSet("serve", getenv).parse(args)
	if err != nil {
		return err
	}
	return serve(ctx, c, stdout)
}

// serve runs the web server, logging on stdout, until ctx ends.
func serve(ctx context.Context, c Config, stdout io.Writer) error {
	log := c.logger(stdout)
	_, hc, stop, err := open(ctx, c, log, false)
	if err != nil {
		return err
	}
	defer stop()
	hc.TrustedProxies, hc.RateLimits = c.TrustedProxies, c.rateLimits()
	hc.PublicURL = c.PublicURL
	hc.SocketsPerUser, hc.SocketsPerAddress = c.SocketsPerUser, c.SocketsPerAddress
	hc.Registry = prometheus.NewRegistry()
	hc.MetricsToken, hc.SeparateMetrics = c.MetricsToken, c.MetricsAddr != ""

	// The notice listener, the announcer and the cron jobs live as long as
	// the server. On the way out, the server's requests and cron's run end
	// first, then the announcer publishes what they left pending, then the
	// listener stops.
	bg, stopBackground := context.WithCancel(context.WithoutCancel(ctx))
	listening := make(chan struct{})
	go func() { defer close(listening); hc.Bus.Listen(bg, hc.Hub.Deliver) }()
	go hc.Presence.Run(bg, hc.Hub)
	announce := notify.NewAnnouncer(hc.Bus, log)
	hc.Tasks.Observe(announce.Observe)
	// The deliverer hands on the events of every change, this instance's
	// at once (it observes them), and runs until the requests have ended.
	deliverer := webhooks.NewDeliverer(webhooks.Config{Store: hc.Webhooks, Tasks: hc.Tasks, Egress: c.egress(),
		Schedule: c.WebhookSchedule, Instance: hc.Bus.ID(), Log: log, May: desk.MayReceive(hc.Users), Registerer: hc.Registry})
	hc.Tasks.Observe(deliverer.Observe)
	hc.WebhooksChanged, hc.DisabledWebhooks = deliverer.Changed, deliverer.Disabled
	if !hc.Webhooks.Sealed() {
		log.Warn("webhook secrets are stored unsealed: set CLAIMDESK_WEBHOOK_KEY to seal them")
	}
	// The handlers' desk records what cron's changes keep of people too:
	// made before cron's first run.
	handler := handlers.New(*hc)
	runner := cron.New(cron.Config{Redis: hc.Redis, Tasks: hc.Tasks, Bus: hc.Bus,
		Log: log, Interval: c.CronInterval, Registry: hc.Registry})
	stopCron := runner.Start(bg)
	delivering, stopDelivering := context.WithCancel(bg)
	delivered := make(chan struct{})
	go func() { defer close(delivered); deliverer.Run(delivering) }()
	defer func() {
		stopCron()
		stopDelivering()
		<-delivered
		closeCtx, cancel := context.WithTimeout(context.Background(), announceCloseTimeout)
		defer cancel()
		if err := announce.Close(closeCtx); err != nil {
			log.Warn("notices still pending at shutdown", "err", err)
		}
		stopBackground()
		<-listening
	}()

	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return err
	}
	srv := httpServer(handler, c.ReadTimeout)
	done := make(chan error, 2)
	if c.MetricsAddr != "" {
		mln, err := net.Listen("tcp", c.MetricsAddr)
		if err != nil {
			ln.Close()
			return fmt.Errorf("metrics listener: %w", err)
		}
		msrv := httpServer(handlers.Metrics(hc.Registry, c.MetricsToken), c.ReadTimeout)
		defer msrv.Close()
		log.Info("claimdesk serves its metrics", "addr", mln.Addr().String())
		go func() { done <- msrv.Serve(mln) }()
	}
	log.Info("claimdesk is serving", "url", hc.PublicURL, "addr", ln.Addr().String())
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		srv.Close()
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	// Shutdown neither ends nor waits for hijacked connections: closing the
	// hub sends every websocket a going-away close, so the pages reconnect
	// (to another instance) at once, and Drain waits for those frames to go
	// out before Redis and the process go.
	hc.Hub.Close()
	shutCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	err = srv.Shutdown(shutCtx)
	if err := hc.Hub.Drain(shutCtx); err != nil {
		log.Warn("websockets still open at shutdown", "err", err)
	}
	return err
}

// Bounds on how long a client may take (httpServer).
const (
	headerTimeout = 10 * time.Second
	idleTimeout   = 2 * time.Minute
)

// httpServer is an http.Server with claimdesk's bounds on slow clients: a
// request's header must arrive within headerTimeout, and all of it, body
// included, within readTimeout; a kept-alive connection may idle for
// idleTimeout. There is no write timeout: a ?wait answers after up to a
// minute. Websockets outlive all of these: the upgrade clears the
// deadlines of the connection it takes over, and the socket keeps its own.
func httpServer(h http.Handler, readTimeout time.Duration) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: min(headerTimeout, readTimeout), ReadTimeout: readTimeout,
		IdleTimeout: idleTimeout}
}

func seedCmd(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := newFlagSet("seed", getenv)
	reset := fs.Bool("reset", false, "empty the store first")
	ifEmpty := fs.Bool("if-empty", false, "load only when the store has no queues yet")
	_, c, err := fs.parse(args)
	if err != nil {
		return err
	}
	st, hc, stop, err := open(ctx, c, c.commandLogger(), *reset)
	if err != nil {
		return err
	}
	defer stop()
	if *reset {
		if err := seed.Reset(ctx, hc.Redis); err != nil {
			return fmt.Errorf("reset: %w", err)
		}
		if err := checkFormat(ctx, st.tasks); err != nil {
			return err
		}
	}
	if *ifEmpty {
		names, err := st.tasks.QueueNames(ctx)
		if err != nil {
			return err
		}
		if len(names) > 0 {
			fmt.Fprintln(stdout, "The store already has data; demo data not loaded.")
			return printLogins(stdout)
		}
	}
	sum, err := seed.Load(ctx, hc.Redis, st.tasks, st.users)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Demo data: %d queues, %d users, %d jobs added (%d were there already).\n",
		sum.Queues, sum.Users, sum.JobsCreated, sum.JobsExisting)
	if sum.Activity {
		fmt.Fprintf(stdout, "The day before: %d jobs came and were worked. And dana has been at work this morning:\n", sum.DayJobs)
		fmt.Fprintln(stdout, "invoices completed, a moderation job dead after three failures, a photo whose three labels")
		fmt.Fprintln(stdout, "disagree waiting for alice's review, two jobs held, and a batch of address checks under way.")
	}
	return printLogins(stdout)
}

func printLogins(w io.Writer) error {
	us, err := seed.Users()
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "Demo logins:")
	for _, u := range us {
		switch {
		case u.Password != "":
			fmt.Fprintf(w, "  %-12s %-18s %-10s %s\n", u.Name, u.Password, u.Role, strings.Join(u.Queues, ", "))
		case u.Token != "":
			fmt.Fprintf(w, "  %-12s API token %s (%s)\n", u.Name, u.Token, u.Role)
		}
	}
	return nil
}

// addCmd runs `queue add`, `user add`, `user change` and `token add`.
func addCmd(ctx context.Context, what string, args []string, getenv func(string) string, stdin io.Reader, stdout io.Writer) error {
	name := what + " add"
	if what == "user change" {
		name = what
	}
	fs := newFlagSet(name, getenv)
	var q tasks.Queue
	var role, queues string
	var have skills.Set
	var passwordStdin, training bool
	switch what {
	case "queue":
		fs.IntVar(&q.LeaseSeconds, "lease-seconds", 0, "reservation lease (default 300)")
		fs.IntVar(&q.MaxAttempts, "max-attempts", 0, "attempts before a job is dead (default 5)")
		fs.IntVar(&q.MaxExtensions, "max-extensions", 0, "extensions per reservation (default 10)")
		fs.IntVar(&q.AgingSeconds, "aging-seconds", 0, "seconds of waiting worth one priority point (0: strict)")
		fs.IntVar(&q.MaxHeld, "max-held", 0, "jobs of the queue one person may hold at once (0: no cap)")
		fs.BoolVar(&q.RequireReason, "require-reason", false, "every cancel, requeue and force release must say why")
		fs.Func("sla", "how long after its enqueue each job is due, as 4h or 90m (0: no due time)", func(v string) error {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 || d%time.Second != 0 {
				return fmt.Errorf("want a duration of whole seconds, such as 4h or 90m")
			}
			q.SLASeconds = int(d / time.Second)
			return nil
		})
		fs.Float64Var(&q.WarnFraction, "warn-fraction", 0, "share of the time to its due time after which a job is at risk (default 0.8)")
		fs.StringVar(&q.Order, "order", "", "claim order: rank (priority, then age; the default) or due (earliest due first)")
		fs.IntVar(&q.BreachPriority, "breach-priority", 0, "raise a job that misses its due time to this priority (0: no change)")
		fs.StringVar(&q.BreachQueue, "breach-queue", "", "move a job still waiting at its due time to this queue (\"\": it stays)")
		fs.IntVar(&q.Overlap, "overlap", 0, "how many different people answer each job, 1-9 (default 1)")
		fs.BoolVar(&q.OverlapAtOnce, "overlap-at-once", false, "with overlap: as many people as a job still needs hold it at once (default: one after another)")
		fs.Float64Var(&q.ReviewFraction, "review-fraction", 0, "share of completions a reviewer approves before they count, 0-1")
		fs.Float64Var(&q.MinAgreement, "min-agreement", 0, "with overlap: answers that agree less on some field go to review, 0-1")
		fs.Func("outcome", "the queue's outcome form, as JSON (docs/api.md, Outcome forms)", func(v string) (err error) {
			q.Outcome, err = tasks.ParseOutcome(v)
			return err
		})
	case "user", "user change":
		fs.StringVar(&role, "role", "", "operator, supervisor or producer")
		fs.StringVar(&queues, "queues", "", "comma-separated granted queues")
		fs.Func("skills", "comma-separated skills, each with its level 1-5 when above 1: de,contracts:4", func(v string) (err error) {
			if have, err = skills.Parse(v); err != nil {
				return err
			}
			return nil
		})
		fs.BoolVar(&passwordStdin, "password-stdin", false, "read the password from standard input")
		fs.BoolVar(&training, "training", false, "in training: every completion of theirs is reviewed")
	}
	name, c, err := fs.parse(args)
	if err != nil {
		return err
	}
	if name == "" {
		if what == "user change" {
			return usagef("usage: claimdesk user change NAME [--role R] [--queues Q] [--skills S] [--training[=false]] [--password-stdin]")
		}
		return usagef("usage: claimdesk %s add NAME", what)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if (what == "user" || set["role"]) && !users.Role(role).Valid() {
		return usagef("bad role %q: want operator, supervisor or producer", role)
	}
	// An existing queue changes only the settings given (a patch of the
	// flags set); a new one takes the defaults for the rest. Values that
	// no queue could have are refused before Redis is asked.
	var patch tasks.QueuePatch
	if what == "queue" {
		q.Name = name
		if err := q.WithDefaults().Validate(); err != nil {
			return usagef("%v", err)
		}
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "lease-seconds":
				patch.LeaseSeconds = &q.LeaseSeconds
			case "max-attempts":
				patch.MaxAttempts = &q.MaxAttempts
			case "max-extensions":
				patch.MaxExtensions = &q.MaxExtensions
			case "aging-seconds":
				patch.AgingSeconds = &q.AgingSeconds
			case "max-held":
				patch.MaxHeld = &q.MaxHeld
			case "require-reason":
				patch.RequireReason = &q.RequireReason
			case "sla":
				patch.SLASeconds = &q.SLASeconds
			case "warn-fraction":
				patch.WarnFraction = &q.WarnFraction
			case "order":
				patch.Order = &q.Order
			case "breach-priority":
				patch.BreachPriority = &q.BreachPriority
			case "breach-queue":
				patch.BreachQueue = &q.BreachQueue
			case "overlap":
				patch.Overlap = &q.Overlap
			case "overlap-at-once":
				patch.OverlapAtOnce = &q.OverlapAtOnce
			case "review-fraction":
				patch.ReviewFraction = &q.ReviewFraction
			case "min-agreement":
				patch.MinAgreement = &q.MinAgreement
			case "outcome":
				patch.Outcome = cmp.Or(q.Outcome, &tasks.Outcome{})
			}
		})
	}
	st, stop, err := c.openForCommand(ctx)
	if err != nil {
		return err
	}
	defer stop()
	// Whether they are in training changes only when the flag is given.
	var trainingSet *bool
	if set["training"] {
		trainingSet = &training
	}
	if what == "user change" {
		err = changeUser(ctx, st, name, role, queues, have, trainingSet, set, passwordStdin, stdin, stdout)
	} else {
		err = add(ctx, st, what, name, q, patch, role, queues, have, trainingSet, set["skills"], passwordStdin, stdin, stdout)
	}
	if errors.Is(err, users.ErrInvalid) || errors.Is(err, tasks.ErrInvalid) {
		return usagef("%v", err) // a bad value on the command line
	}
	return err
}

// readPassword reads the password from the first line of stdin when asked
// to (--password-stdin), else "".
func readPassword(asked bool, stdin io.Reader) (string, error) {
	if !asked {
		return "", nil
	}
	line, err := bufio.NewReader(stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// changeUser runs `user change`: what the flags set (set) changes, the
// rest stays.
func changeUser(ctx context.Context, st stores, name, role, queues string, have skills.Set, training *bool, set map[string]bool, passwordStdin bool, stdin io.Reader, stdout io.Writer) error {
	password, err := readPassword(passwordStdin, stdin)
	if err != nil {
		return err
	}
	ch := desk.Change{Password: password}
	if set["role"] {
		r := users.Role(role)
		ch.Role = &r
	}
	if set["queues"] {
		list := []string{}
		if queues != "" {
			list = strings.Split(queues, ",")
		}
		ch.Queues = &list
	}
	if set["skills"] {
		ch.Skills = &have
	}
	ch.Training = training
	u, err := st.desk.ChangePerson(ctx, desk.CommandLine, name, ch)
	if err != nil {
		return err
	}
	printUser(stdout, u)
	return nil
}

// printUser says what a user is now, as `user add` and `user change` do.
func printUser(stdout io.Writer, u users.User) {
	fmt.Fprintf(stdout, "user %s: %s %s", u.Name, u.Role, strings.Join(u.Queues, ","))
	if len(u.Skills) > 0 {
		fmt.Fprintf(stdout, " skills %s", strings.Join(u.Skills.List(), ","))
	}
	if u.Training {
		fmt.Fprint(stdout, " in training")
	}
	fmt.Fprintln(stdout)
}

func add(ctx context.Context, st stores, what, name string, q tasks.Queue, patch tasks.QueuePatch, role, queues string, have skills.Set, training *bool, skillsSet, passwordStdin bool, stdin io.Reader, stdout io.Writer) error {
	switch what {
	case "queue":
		made := "created"
		q, err := st.desk.CreateQueue(ctx, desk.CommandLine, q, false)
		if errors.Is(err, tasks.ErrQueueExists) {
			made = "changed"
			if patch == (tasks.QueuePatch{}) {
				made = "unchanged"
				q, err = st.desk.Queue(ctx, desk.CommandLine, name)
			} else {
				q, err = st.desk.ChangeQueue(ctx, desk.CommandLine, name, patch)
			}
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "queue %s %s: %s\n", q.Name, made, audit.SettingsDetail(q))
	case "user":
		password, err := readPassword(passwordStdin, stdin)
		if err != nil {
			return err
		}
		u := users.User{Name: name, Role: users.Role(role), Skills: have, Training: training != nil && *training}
		if queues != "" {
			u.Queues = strings.Split(queues, ",")
		}
		err = st.desk.AddPerson(ctx, desk.CommandLine, u, password)
		if errors.Is(err, users.ErrExists) {
			// An existing user's skills change only when given.
			ch := desk.Change{Role: &u.Role, Queues: &u.Queues, Training: training, Password: password}
			if skillsSet {
				ch.Skills = &have
			}
			u, err = st.desk.ChangePerson(ctx, desk.CommandLine, name, ch)
		}
		if err != nil {
			return err
		}
		printUser(stdout, u)
	case "token":
		token, err := st.desk.NewToken(ctx, desk.CommandLine, name)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, token)
	}
	return nil
}

// adminCmd runs `user disable NAME`, `user enable NAME`, `token list NAME`,
// `token revoke ID`, `queue pause NAME` and `queue resume NAME`.
func adminCmd(ctx context.Context, what string, args []string, getenv func(string) string, stdout io.Writer) error {
	arg, c, err := newFlagSet(what, getenv).parse(args)
	if err != nil {
		return err
	}
	if arg == "" {
		if what == "token revoke" {
			return usagef("usage: claimdesk token revoke ID (an ID that claimdesk token list shows)")
		}
		return usagef("usage: claimdesk %s NAME", what)
	}
	st, stop, err := c.openForCommand(ctx)
	if err != nil {
		return err
	}
	defer stop()
	switch what {
	case "user disable":
		if _, err := st.desk.Disable(ctx, desk.CommandLine, arg); err != nil {
			return fmt.Errorf("user %s: %w", arg, err)
		}
		fmt.Fprintf(stdout, "user %s disabled: sessions ended, websockets closed, tokens refused\n", arg)
	case "user enable":
		if _, err := st.desk.Enable(ctx, desk.CommandLine, arg); err != nil {
			return fmt.Errorf("user %s: %w", arg, err)
		}
		fmt.Fprintf(stdout, "user %s enabled: tokens work again; sessions ended by the disable stay ended\n", arg)
	case "user unlock":
		if err := st.desk.Unlock(ctx, desk.CommandLine, arg); err != nil {
			return fmt.Errorf("user %s: %w", arg, err)
		}
		fmt.Fprintf(stdout, "user %s: logins are no longer delayed\n", arg)
	case "token list":
		tokens, err := st.desk.Tokens(ctx, desk.CommandLine, arg)
		if err != nil {
			return fmt.Errorf("user %s: %w", arg, err)
		}
		for _, t := range tokens {
			fmt.Fprintln(stdout, t.ID, timeOrDash(t.Created), timeOrDash(t.LastUsed))
		}
	case "token revoke":
		if err := st.desk.RevokeToken(ctx, desk.CommandLine, "", arg); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "token %s revoked\n", arg)
	case "queue pause", "queue resume":
		paused := what == "queue pause"
		set := st.desk.ResumeQueue
		if paused {
			set = st.desk.PauseQueue
		}
		if _, err := set(ctx, desk.CommandLine, arg); err != nil {
			return fmt.Errorf("queue %s: %w", arg, err)
		}
		if paused {
			fmt.Fprintf(stdout, "queue %s paused: it takes enqueues, claims answer queue_paused\n", arg)
		} else {
			fmt.Fprintf(stdout, "queue %s resumed\n", arg)
		}
	}
	return nil
}

// timeOrDash shows a time of token list: RFC 3339 in UTC, or "-" when it
// is not known (made before token ids) or never was (not used).
func timeOrDash(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
