// Package taskstest starts private, real Redis servers and Redis Clusters for
// tests. Every server is its own redis-server process listening on a free
// loopback port with its own temporary directory, so tests and test packages
// can run in parallel without sharing state.
package taskstest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	startTimeout   = 10 * time.Second
	stopTimeout    = 5 * time.Second
	clusterTimeout = 20 * time.Second
	pollInterval   = 50 * time.Millisecond
	startAttempts  = 5
	totalSlots     = 16384
	maxPort        = 65535 - 10000 // redis-server's cluster bus port is port+10000
)

var (
	errExited    = errors.New("redis-server exited")
	errAddrInUse = errors.New("address already in use")
)

// Server is one private standalone redis-server process.
type Server struct {
	bin     string
	extra   []string
	port    int
	dir     string
	cmd     *exec.Cmd
	done    chan struct{} // closed when cmd has exited
	clients closers
	closed  bool
}

// NewServer starts a redis-server on a free loopback port with a fresh
// temporary directory and persistence disabled, and waits until it answers.
// The extraArgs are appended to the command line, so they can override the
// defaults, for example "--appendonly", "yes".
func NewServer(extraArgs ...string) (*Server, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, errors.New("redis-server not found on PATH: install it with `apt-get install redis-server` (or `make test`, which installs it)")
	}
	dir, err := os.MkdirTemp("", "taskstest-redis-")
	if err != nil {
		return nil, fmt.Errorf("create redis dir: %w", err)
	}
	s := &Server{bin: bin, extra: extraArgs, dir: dir}
	for range startAttempts {
		if s.port, err = freePort(); err != nil {
			break
		}
		if err = s.start(); !errors.Is(err, errAddrInUse) {
			break
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// Addr returns the host:port address the server listens on.
func (s *Server) Addr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
}

// Client returns a new client for the server. The caller may close it;
// Close closes any client that is still open.
func (s *Server) Client() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr()})
	s.clients.add(c)
	return c
}

// Restart stops the server and starts it again on the same port and
// directory, waiting until it answers again. Clients created before the
// restart reconnect on their next command.
func (s *Server) Restart() error {
	s.stop()
	var err error
	for range startAttempts {
		if err = s.start(); !errors.Is(err, errAddrInUse) {
			return err
		}
		time.Sleep(200 * time.Millisecond) // the old socket may linger briefly
	}
	return err
}

// Kill ends the server with SIGKILL, as a crash would: it writes nothing
// more. Restart starts it again on the same port and directory.
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

// Close closes the server's clients, stops the process and removes its
// temporary directory. Calling Close more than once is harmless.
func (s *Server) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	s.clients.closeAll()
	s.stop()
	if err := os.RemoveAll(s.dir); err != nil {
		return fmt.Errorf("remove redis dir: %w", err)
	}
	return nil
}

// start launches redis-server on s.port and waits until it answers.
func (s *Server) start() error {
	logPath := filepath.Join(s.dir, "redis.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("create redis log: %w", err)
	}
	args := append([]string{
		"--bind", "127.0.0.1", "--port", strconv.Itoa(s.port), "--dir", s.dir,
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--protected-mode", "yes",
	}, s.extra...)
	cmd := exec.Command(s.bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	DieWithParent(cmd)
	err = cmd.Start()
	logFile.Close()
	if err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	go func(done chan struct{}) {
		cmd.Wait()
		close(done)
	}(s.done)

	err = waitFor(startTimeout, s.ready)
	if err == nil {
		return nil
	}
	s.stop()
	out, _ := os.ReadFile(logPath)
	if bytes.Contains(out, []byte("Address already in use")) {
		err = errAddrInUse
	}
	return fmt.Errorf("redis-server on %s did not start: %w; log:\n%s", s.Addr(), err, out)
}

// ready reports whether our own process (not some other one that grabbed the
// port first) answers on s.port.
func (s *Server) ready() error {
	select {
	case <-s.done:
		return errExited
	default:
	}
	// Dial once by hand first: go-redis logs every failed dial.
	conn, err := net.DialTimeout("tcp", s.Addr(), time.Second)
	if err != nil {
		return err
	}
	conn.Close()
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1, DialerRetries: 1,
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second})
	defer c.Close()
	ctx := context.Background()
	if err := c.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return fmt.Errorf("info: %w", err)
	}
	if !strings.Contains(info, fmt.Sprintf("process_id:%d\r\n", s.cmd.Process.Pid)) {
		return errors.New("port answered by another process")
	}
	return nil
}

// stop terminates the process, if running: SIGTERM, then SIGKILL if it has
// not exited after stopTimeout.
func (s *Server) stop() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(stopTimeout):
		s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd = nil
}

// Cluster is a private Redis Cluster, each node a separate redis-server
// process.
type Cluster struct {
	nodes   []*Server // the masters first, then the replicas
	clients closers
}

// ClusterConfig describes a cluster to start.
type ClusterConfig struct {
	// Masters share the hash slots evenly.
	Masters int
	// Replicas is how many replicas each master has.
	Replicas int
	// NodeTimeout is the cluster-node-timeout: how long a master may be
	// unreachable before its replica takes over. Default 5 s.
	NodeTimeout time.Duration
	// Args are appended to every node's command line, for example
	// "--appendonly", "yes".
	Args []string
}

// NewCluster starts masters redis-server nodes in cluster mode without
// replicas, assigns each an even share of the hash slots, joins them into
// one cluster and waits until the cluster serves keys on every node.
func NewCluster(masters int) (*Cluster, error) {
	return StartCluster(ClusterConfig{Masters: masters})
}

// StartCluster starts the cluster cfg describes and waits until it serves
// keys on every master and every replica has caught up with its master.
func StartCluster(cfg ClusterConfig) (*Cluster, error) {
	if cfg.Masters < 1 || cfg.Masters > totalSlots || cfg.Replicas < 0 {
		return nil, fmt.Errorf("invalid cluster of %d masters with %d replicas each", cfg.Masters, cfg.Replicas)
	}
	if cfg.NodeTimeout == 0 {
		cfg.NodeTimeout = 5 * time.Second
	}
	c := &Cluster{}
	err := c.start(cfg)
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Addrs returns the host:port addresses of the cluster's nodes.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = n.Addr()
	}
	return addrs
}

// Nodes returns the cluster's nodes: the masters it started with, then
// their replicas.
func (c *Cluster) Nodes() []*Server { return slices.Clone(c.nodes) }

// Client returns a new cluster client seeded with all node addresses. The
// caller may close it; Close closes any client that is still open.
func (c *Cluster) Client() *redis.ClusterClient {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	c.clients.add(cc)
	return cc
}

// MasterOf returns the node that is now the master of key's hash slot, as
// the cluster itself reports it.
func (c *Cluster) MasterOf(ctx context.Context, key string) (*Server, error) {
	client := c.Client()
	defer client.Close()
	m, err := client.MasterForKey(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("master for %s: %w", key, err)
	}
	for _, n := range c.nodes {
		if n.Addr() == m.Options().Addr {
			return n, nil
		}
	}
	return nil, fmt.Errorf("master for %s is %s, not a node of this cluster", key, m.Options().Addr)
}

// Close closes the cluster's clients and stops all of its nodes.
func (c *Cluster) Close() error {
	c.clients.closeAll()
	var errs []error
	for _, n := range c.nodes {
		errs = append(errs, n.Close())
	}
	return errors.Join(errs...)
}

// start launches the nodes, forms the cluster and waits until it works.
func (c *Cluster) start(cfg ClusterConfig) error {
	ctx := context.Background()
	total := cfg.Masters * (1 + cfg.Replicas)
	for i := range total {
		args := append([]string{"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf", // relative to --dir
			"--cluster-node-timeout", strconv.FormatInt(cfg.NodeTimeout.Milliseconds(), 10)}, cfg.Args...)
		n, err := NewServer(args...)
		if err != nil {
			return fmt.Errorf("start cluster node %d: %w", i, err)
		}
		c.nodes = append(c.nodes, n)
	}
	nodeClients := make([]*redis.Client, total)
	for i, n := range c.nodes {
		nodeClients[i] = n.Client()
	}
	for i := range cfg.Masters {
		first, last := i*totalSlots/cfg.Masters, (i+1)*totalSlots/cfg.Masters-1
		if err := nodeClients[i].Do(ctx, "cluster", "addslotsrange", first, last).Err(); err != nil {
			return fmt.Errorf("assign slots %d-%d to %s: %w", first, last, c.nodes[i].Addr(), err)
		}
	}
	for _, n := range c.nodes[1:] {
		if err := nodeClients[0].ClusterMeet(ctx, "127.0.0.1", strconv.Itoa(n.port)).Err(); err != nil {
			return fmt.Errorf("cluster meet %s: %w", n.Addr(), err)
		}
	}
	if err := waitFor(clusterTimeout, func() error { return checkInfo(ctx, nodeClients) }); err != nil {
		return fmt.Errorf("cluster of %d nodes did not form: %w", total, err)
	}
	// Replica r of master m is node Masters + m*Replicas + r.
	for m := range cfg.Masters {
		id, err := nodeClients[m].Do(ctx, "cluster", "myid").Text()
		if err != nil {
			return fmt.Errorf("cluster myid on %s: %w", c.nodes[m].Addr(), err)
		}
		for r := range cfg.Replicas {
			i := cfg.Masters + m*cfg.Replicas + r
			err := waitFor(clusterTimeout, func() error {
				return nodeClients[i].Do(ctx, "cluster", "replicate", id).Err()
			})
			if err != nil {
				return fmt.Errorf("make %s a replica of %s: %w", c.nodes[i].Addr(), c.nodes[m].Addr(), err)
			}
		}
	}
	client := c.Client()
	err := waitFor(clusterTimeout, func() error {
		if err := checkInfo(ctx, nodeClients); err != nil {
			return err
		}
		if err := checkReplicas(ctx, nodeClients[:cfg.Masters], cfg.Replicas); err != nil {
			return err
		}
		if err := checkKeys(ctx, client); err != nil {
			client.ReloadState(ctx)
			return err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("cluster of %d masters with %d replicas each not ready: %w", cfg.Masters, cfg.Replicas, err)
	}
	return nil
}

// checkReplicas verifies that every master has its replicas connected and
// caught up.
func checkReplicas(ctx context.Context, masters []*redis.Client, replicas int) error {
	for _, m := range masters {
		info, err := m.Info(ctx, "replication").Result()
		if err != nil {
			return fmt.Errorf("info replication on %s: %w", m.Options().Addr, err)
		}
		if want := fmt.Sprintf("connected_slaves:%d\r\n", replicas); !strings.Contains(info, want) {
			return fmt.Errorf("master %s: want %q in %s", m.Options().Addr, want, info)
		}
		if replicas > 0 {
			if n, err := m.Wait(ctx, replicas, time.Second).Result(); err != nil || n < int64(replicas) {
				return fmt.Errorf("master %s: %d of %d replicas caught up (%v)", m.Options().Addr, n, replicas, err)
			}
		}
	}
	return nil
}

// checkInfo verifies that every node reports a healthy cluster that knows
// all nodes.
func checkInfo(ctx context.Context, nodes []*redis.Client) error {
	want := fmt.Sprintf("cluster_known_nodes:%d", len(nodes))
	for _, n := range nodes {
		info, err := n.ClusterInfo(ctx).Result()
		if err != nil {
			return fmt.Errorf("cluster info on %s: %w", n.Options().Addr, err)
		}
		fields := strings.Fields(info)
		if !slices.Contains(fields, "cluster_state:ok") || !slices.Contains(fields, want) {
			state := slices.DeleteFunc(fields, func(f string) bool {
				return !strings.HasPrefix(f, "cluster_state:") &&
					!strings.HasPrefix(f, "cluster_slots_assigned:") &&
					!strings.HasPrefix(f, "cluster_known_nodes:")
			})
			return fmt.Errorf("node %s reports %s", n.Options().Addr, strings.Join(state, " "))
		}
	}
	return nil
}

// checkKeys writes and reads keys whose hash tags map to different slots.
func checkKeys(ctx context.Context, client *redis.ClusterClient) error {
	for _, tag := range "abcdef" {
		key := "{" + string(tag) + "}x"
		if err := client.Set(ctx, key, "ok", 0).Err(); err != nil {
			return fmt.Errorf("set %s: %w", key, err)
		}
		if err := client.Get(ctx, key).Err(); err != nil {
			return fmt.Errorf("get %s: %w", key, err)
		}
	}
	return nil
}

// Redis starts a private Redis server for the test, fails the test if it
// cannot, and stops the server when the test ends.
func Redis(tb testing.TB) *Server {
	tb.Helper()
	return mustStart(tb, func() (*Server, error) { return NewServer() })
}

// Replica starts a private Redis server for the test as a replica of
// master, with args appended to its command line, and waits until it has
// caught up (Follow); it stops the server when the test ends.
func Replica(tb testing.TB, master *Server, args ...string) *Server {
	tb.Helper()
	host, port, _ := net.SplitHostPort(master.Addr())
	replica := mustStart(tb, func() (*Server, error) { return NewServer(append([]string{"--replicaof", host, port}, args...)...) })
	Follow(tb, master, replica)
	return replica
}

// Follow makes replica replicate master and waits until it has caught
// up: a write on the master is confirmed by the replica (WAIT on the
// connection that made it). It fails the test after 10 s.
func Follow(tb testing.TB, master, replica *Server) {
	tb.Helper()
	ctx := context.Background()
	host, port, _ := net.SplitHostPort(master.Addr())
	if err := replica.Client().Do(ctx, "replicaof", host, port).Err(); err != nil {
		tb.Fatalf("taskstest: replicaof: %v", err)
	}
	c := master.Client()
	deadline := time.Now().Add(startTimeout)
	for {
		var wait *redis.Cmd
		_, _ = c.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, "taskstest:caught-up", time.Now().String(), 0)
			wait = p.Do(ctx, "wait", 1, 100)
			return nil
		})
		if n, err := wait.Int64(); err == nil && n == 1 {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("taskstest: the replica did not catch up within %v", startTimeout)
		}
	}
}

// Detach makes replica a master of its own, as a failover promotes it: it
// keeps what it had and confirms nothing more.
func Detach(tb testing.TB, replica *Server) {
	tb.Helper()
	if err := replica.Client().Do(context.Background(), "replicaof", "no", "one").Err(); err != nil {
		tb.Fatalf("taskstest: replicaof no one: %v", err)
	}
}

// RedisCluster starts a private Redis Cluster of masters nodes for the test,
// fails the test if it cannot, and stops the cluster when the test ends.
func RedisCluster(tb testing.TB, masters int) *Cluster {
	tb.Helper()
	return mustStart(tb, func() (*Cluster, error) { return NewCluster(masters) })
}

// mustStart calls start, failing tb on error, and registers Close as cleanup.
func mustStart[T io.Closer](tb testing.TB, start func() (T, error)) T {
	tb.Helper()
	v, err := start()
	if err != nil {
		tb.Fatalf("taskstest: %v", err)
	}
	tb.Cleanup(func() {
		if err := v.Close(); err != nil {
			tb.Errorf("taskstest: %v", err)
		}
	})
	return v
}

// waitFor calls check every pollInterval until it succeeds, the process it
// watches exits, or timeout elapses; it returns the last error.
func waitFor(timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil || errors.Is(err, errExited) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v: %w", timeout, err)
		}
		time.Sleep(pollInterval)
	}
}

// freePort returns a loopback TCP port that was free a moment ago. The port is
// at most maxPort, as a cluster node also listens on port+10000; rejected
// ports stay open until it returns so they are not offered again.
func freePort() (int, error) {
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("pick free port: %w", err)
		}
		defer l.Close()
		if port := l.Addr().(*net.TCPAddr).Port; port <= maxPort {
			return port, nil
		}
	}
	return 0, fmt.Errorf("pick free port: none free at or below %d", maxPort)
}

// closers closes clients on behalf of their owner.
type closers struct {
	mu   sync.Mutex
	list []io.Closer
}

func (c *closers) add(x io.Closer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.list = append(c.list, x)
}

// closeAll closes every client, ignoring errors from clients the caller has
// already closed.
func (c *closers) closeAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, x := range c.list {
		x.Close()
	}
	c.list = nil
}
