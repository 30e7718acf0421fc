package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"claimdesk/internal/storeerr"

	"github.com/redis/go-redis/v9"
)

// privateRedisDir holds the private redis-server's data, log and socket.
const privateRedisDir = "var/redis"

// connectRedis returns a client for the configured Redis. With none it
// uses the private redis-server under ./var/redis, starting it if no other
// claimdesk process already has; stop (never nil) stops what was started.
func connectRedis(ctx context.Context, target redisTarget, log *slog.Logger) (rdb redis.UniversalClient, stop func(), err error) {
	redis.SetLogger(redisLog{storeerr.NewBurst(log, "redis client messages")})
	if target.private() {
		return startPrivateRedis(ctx, log)
	}
	rdb = target.client()
	return rdb, func() { rdb.Close() }, nil
}

// The Redis client's settings, where the URL sets none (docs/redis.md).
const (
	// dialTimeout bounds opening a connection: on a working network one
	// opens in milliseconds, and a server that is gone should cost a
	// request a 503 soon, not a long hang.
	dialTimeout = 2 * time.Second
	// ioTimeout bounds a command's send and answer. claimdesk's scripts
	// are bounded and run in milliseconds, and a change waits at most
	// replicaTimeout (1 s) for its replicas; blocking reads (the notice
	// listener's BLMPOP) get their own timeout added by the client.
	ioTimeout = 2 * time.Second
	// noRetries: the client never sends a command again by itself. A
	// command whose connection broke may have run; sending it again could
	// apply it twice. The caller gets 503 and retries under claimdesk's
	// retry contracts (idempotency keys, tokens), which make a repeat safe.
	noRetries = -1
	// clusterRedirects is how often a cluster call follows MOVED, ASK or
	// waits out TRYAGAIN and CLUSTERDOWN (with a backoff growing from 8 ms
	// to 512 ms): enough to ride out a slot's failover of a second or two.
	clusterRedirects = 8
)

// redisTarget is the Redis that CLAIMDESK_REDIS_URL names, with
// claimdesk's client settings where the URL gives none: the options of
// one server, of a master that Sentinels watch, or of a cluster. The zero
// target is the private redis-server under ./var/redis.
type redisTarget struct {
	server   *redis.Options
	failover *redis.FailoverOptions
	cluster  *redis.ClusterOptions
}

// redisURLs is what CLAIMDESK_REDIS_URL accepts.
const redisURLs = "a redis://, rediss:// or unix:// URL (with ?master_name=…&addr=… the addresses are Sentinels), or host:port,host:port,… for a cluster"

// parseRedisURL reads CLAIMDESK_REDIS_URL: redis:// or rediss:// for one
// server; with ?master_name=…&addr=… the addresses are Sentinels; or a
// comma-separated host:port list for a cluster. Empty: the private
// redis-server.
func parseRedisURL(s string) (redisTarget, error) {
	switch {
	case s == "":
		return redisTarget{}, nil
	case strings.Contains(s, "master_name="):
		opt, err := redis.ParseFailoverURL(s)
		if err != nil {
			return redisTarget{}, badURL(s, err)
		}
		settle(&opt.DialTimeout, &opt.ReadTimeout, &opt.WriteTimeout, &opt.MaxRetries)
		return redisTarget{failover: opt}, nil
	case strings.HasPrefix(s, "redis://") || strings.HasPrefix(s, "rediss://") || strings.HasPrefix(s, "unix://"):
		opt, err := redis.ParseURL(s)
		if err != nil {
			return redisTarget{}, badURL(s, err)
		}
		return redisTarget{server: tuned(opt)}, nil
	}
	addrs := strings.Split(s, ",")
	for _, a := range addrs {
		if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
			return redisTarget{}, badValue{value: a, want: redisURLs}
		}
	}
	if len(addrs) == 1 {
		return redisTarget{server: tuned(&redis.Options{Addr: addrs[0]})}, nil
	}
	return redisTarget{cluster: &redis.ClusterOptions{
		Addrs: addrs, DialTimeout: dialTimeout, ReadTimeout: ioTimeout, WriteTimeout: ioTimeout,
		MaxRetries: noRetries, MaxRedirects: clusterRedirects,
	}}, nil
}

// badURL says what is wrong with a Redis URL without its password, which
// neither the URL shown nor the parser's message repeats.
func badURL(s string, err error) badValue {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err
	}
	shown := ""
	if u, perr := url.Parse(s); perr == nil {
		shown = u.Redacted()
	}
	return badValue{value: shown, want: redisURLs + " (" + err.Error() + ")"}
}

// private reports whether the target is the private redis-server.
func (t redisTarget) private() bool { return t == redisTarget{} }

// client returns a new client of the target, which is not the private
// redis-server.
func (t redisTarget) client() redis.UniversalClient {
	switch {
	case t.failover != nil:
		return redis.NewFailoverClient(t.failover)
	case t.cluster != nil:
		return redis.NewClusterClient(t.cluster)
	}
	return redis.NewClient(t.server)
}

// tuned gives one server's options claimdesk's settings where they have
// none.
func tuned(opt *redis.Options) *redis.Options {
	settle(&opt.DialTimeout, &opt.ReadTimeout, &opt.WriteTimeout, &opt.MaxRetries)
	return opt
}

// settle sets claimdesk's settings where the options have none.
func settle(dial, read, write *time.Duration, retries *int) {
	*dial = cmp.Or(*dial, dialTimeout)
	*read = cmp.Or(*read, ioTimeout)
	*write = cmp.Or(*write, ioTimeout)
	*retries = cmp.Or(*retries, noRetries)
}

// startPrivateRedis serves Redis on a unix socket under ./var/redis (TCP
// bound to 127.0.0.1 only, on no port), with the append-only file on, so
// data survives restarts. A second claimdesk process (say `claimdesk user
// add` while the server runs) finds the socket answering and shares it.
// While claimdesk runs, a redis-server that dies is started again.
func startPrivateRedis(ctx context.Context, log *slog.Logger) (redis.UniversalClient, func(), error) {
	dir, err := filepath.Abs(privateRedisDir)
	if err != nil {
		return nil, nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, err
	}
	// One claimdesk process at a time looks for a running server and starts
	// one: two starting together share one redis-server.
	lock, err := os.OpenFile(filepath.Join(dir, "start.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, nil, err
	}
	defer lock.Close() // closing releases the lock
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return nil, nil, fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	socket := filepath.Join(dir, "redis.sock")
	if _, err := os.Stat(socket); err == nil {
		rdb := redis.NewClient(tuned(&redis.Options{Network: "unix", Addr: socket}))
		if rdb.Ping(ctx).Err() == nil {
			return rdb, func() { rdb.Close() }, nil
		}
		rdb.Close()
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, nil, errors.New("redis-server is not installed: install it with `apt-get install redis-server` (make run does this), or set CLAIMDESK_REDIS_URL")
	}
	p := &privateRedis{bin: bin, dir: dir, log: log, quit: make(chan struct{}), done: make(chan struct{})}
	rdb := redis.NewClient(tuned(&redis.Options{Network: "unix", Addr: socket}))
	exited, err := p.start(ctx, rdb)
	if err != nil {
		rdb.Close()
		return nil, nil, err
	}
	go p.supervise(ctx, rdb, exited)
	stop := func() {
		rdb.Close()
		close(p.quit)
		<-p.done
	}
	return rdb, stop, nil
}

// privateRedis is a redis-server process that claimdesk owns.
type privateRedis struct {
	bin, dir string
	log      *slog.Logger
	cmd      *exec.Cmd
	quit     chan struct{} // closed to stop the server
	done     chan struct{} // closed when the server is stopped for good
}

// start launches redis-server and waits until it answers; the channel is
// closed when the process exits.
func (p *privateRedis) start(ctx context.Context, rdb *redis.Client) (<-chan struct{}, error) {
	logPath := filepath.Join(p.dir, "redis.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(p.bin,
		"--bind", "127.0.0.1", "--port", "0", "--unixsocket", "redis.sock", "--unixsocketperm", "700",
		"--dir", p.dir, "--appendonly", "yes", "--save", "", "--daemonize", "no")
	// The socket path is relative to the server's directory, which keeps it
	// short (unix socket paths are limited to about 100 bytes).
	cmd.Dir = p.dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own process group: a Ctrl-C in the terminal reaches claimdesk,
	// which then stops Redis after the last request, not before.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start redis-server: %w", err)
	}
	p.cmd = cmd
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); logFile.Close(); close(exited) }()

	deadline := time.Now().Add(10 * time.Second)
	for !socketReady(filepath.Join(p.dir, "redis.sock")) || rdb.Ping(ctx).Err() != nil {
		select {
		case <-exited:
			return nil, fmt.Errorf("redis-server exited at start: %s", tail(logPath))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.kill(exited)
			return nil, fmt.Errorf("redis-server did not answer within 10s: %s", tail(logPath))
		}
	}
	p.log.Info("started private redis-server", "dir", privateRedisDir, "pid", cmd.Process.Pid)
	return exited, nil
}

// supervise restarts the server when it dies, and stops it on quit.
func (p *privateRedis) supervise(ctx context.Context, rdb *redis.Client, exited <-chan struct{}) {
	defer close(p.done)
	backoff := time.Second
	for {
		select {
		case <-p.quit:
			p.kill(exited)
			return
		case <-exited:
		}
		p.log.Error("private redis-server exited; starting it again", "log", tail(filepath.Join(p.dir, "redis.log")))
		for {
			select {
			case <-p.quit:
				return
			case <-time.After(backoff):
			}
			var err error
			if exited, err = p.start(ctx, rdb); err == nil {
				backoff = time.Second
				break
			}
			p.log.Error("restart redis-server", "err", err)
			backoff = min(2*backoff, 30*time.Second)
		}
	}
}

// kill stops the server: SIGTERM (it finishes writing its append-only
// file), then SIGKILL after 10 seconds.
func (p *privateRedis) kill(exited <-chan struct{}) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-exited
	}
}

// tail returns the last line of a log file, for error messages.
func tail(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	b, _ := io.ReadAll(f)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

func socketReady(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// redisLog sends the Redis client's own messages (dial failures while Redis
// is away) to the structured log instead of stderr, once per burst.
type redisLog struct{ burst *storeerr.Burst }

func (l redisLog) Printf(_ context.Context, format string, v ...any) {
	l.burst.Add("redis client", fmt.Errorf(format, v...))
}
