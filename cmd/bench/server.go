package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"claimdesk/internal/tasks"
	"claimdesk/internal/tasks/taskstest"
	"claimdesk/internal/users"

	"github.com/redis/go-redis/v9"
)

// Timing of the claimdesk process the bench starts.
const (
	appStartTimeout = 15 * time.Second
	appStopTimeout  = 5 * time.Second
	appStartTries   = 3
)

// errPortTaken: another process took the free port first; try another.
var errPortTaken = errors.New("port taken")

// webhookKey seals the webhooks' secrets of every claimdesk the bench
// starts (CLAIMDESK_WEBHOOK_KEY), and of the webhooks a scenario registers
// itself: 32 zero bytes, for the bench's data is thrown away.
var webhookKey = make([]byte, 32)

// app is a real claimdesk server process on loopback, over its own private
// redis-server. The bench makes queues, users and tokens straight through
// the Go stores (as `claimdesk user add` would) and talks HTTP to the
// process.
type app struct {
	url   string // http://127.0.0.1:port, also the public URL (websocket Origin)
	redis *taskstest.Server
	rdb   *redis.Client
	tasks *tasks.Store
	users *users.Store

	bin  string   // the claimdesk binary
	env  []string // settings of the scenario's own, CLAIMDESK_…=…
	dir  string
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	out  *tailBuffer   // the process's stdout and stderr, last bytes
}

// startApp starts a private redis-server and the claimdesk binary c.claimdesk
// serving on a free loopback port, with the settings env besides the
// bench's own, and waits until /healthz and /readyz answer 200. The caller
// must call close.
func startApp(ctx context.Context, c config, env ...string) (*app, error) {
	// Absolute: the process runs in a temporary directory.
	bin, err := filepath.Abs(c.claimdesk)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(bin); err != nil || st.IsDir() {
		return nil, fmt.Errorf("claimdesk binary %q not found: run `make build` (or `go build -o bin/claimdesk ./cmd/web`), or pass -claimdesk", c.claimdesk)
	}
	redisSrv, err := taskstest.NewServer()
	if err != nil {
		return nil, err
	}
	a := &app{redis: redisSrv, bin: bin, env: env}
	a.rdb = redis.NewClient(&redis.Options{Addr: redisSrv.Addr()})
	a.tasks, a.users = tasks.New(a.rdb), users.New(a.rdb)
	if a.dir, err = os.MkdirTemp("", "claimdesk-bench-"); err != nil {
		a.close()
		return nil, err
	}
	if err = a.begin(ctx); err == nil {
		return a, nil
	}
	a.close()
	return nil, err
}

// begin starts the process, on another free port while the one tried was
// taken.
func (a *app) begin(ctx context.Context) error {
	var err error
	for range appStartTries {
		if err = a.start(ctx); !errors.Is(err, errPortTaken) {
			break
		}
	}
	return err
}

// restart stops the process and starts it again, on a new port (url
// changes), over the same Redis.
func (a *app) restart(ctx context.Context) error {
	a.stop()
	return a.begin(ctx)
}

// start runs the binary once on a fresh free port.
func (a *app) start(ctx context.Context) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	a.url = "http://" + addr
	cmd := exec.Command(a.bin, "serve", "--addr", addr)
	cmd.Dir = a.dir
	cmd.Env = append(withoutClaimdeskEnv(os.Environ()),
		"CLAIMDESK_REDIS_URL=redis://"+a.redis.Addr(),
		"CLAIMDESK_LOG_LEVEL=warn",
		"CLAIMDESK_PUBLIC_URL="+a.url,
		// Webhooks' secrets sealed, as claimdesk is meant to run: without
		// a key, serve warns, and a warning fails the run's checks.
		"CLAIMDESK_WEBHOOK_KEY="+hex.EncodeToString(webhookKey),
		// The whole load comes from one address and, for the websockets,
		// a few people: no caps on websockets, and rates more than any
		// floor sends.
		"CLAIMDESK_WS_PER_USER=1000000",
		"CLAIMDESK_WS_PER_ADDRESS=1000000",
		"CLAIMDESK_RATE_USER=100000/s",
		"CLAIMDESK_RATE_ADDRESS=100000/s",
		"CLAIMDESK_RATE_LOGIN=100000/s",
		"CLAIMDESK_RATE_LOGIN_USER=100000/s",
	)
	cmd.Env = append(cmd.Env, a.env...)
	a.out = &tailBuffer{max: 64 << 10}
	cmd.Stdout, cmd.Stderr = a.out, a.out
	setParentDeathSignal(cmd)

	// The parent-death signal fires when the thread that forked the child
	// exits, not the process: start and wait on one locked thread that
	// lives as long as the child. Once the child is gone the thread is
	// unlocked and lives on: a locked thread ends with its goroutine, and
	// would take with it whatever else it had forked, such as a
	// redis-server (taskstest forks it on its caller's thread), killing
	// Redis whenever claimdesk stopped before it.
	started := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = cmd.Wait()
		close(done)
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("start %s: %w", a.bin, err)
	}
	a.cmd, a.done = cmd, done

	deadline := time.Now().Add(appStartTimeout)
	probe := &http.Client{Transport: &http.Transport{}, Timeout: time.Second}
	defer probe.CloseIdleConnections()
	for {
		okHealth := statusOf(ctx, probe, a.url+"/healthz") == http.StatusOK
		if okHealth && statusOf(ctx, probe, a.url+"/readyz") == http.StatusOK {
			return nil
		}
		select {
		case <-done:
			if strings.Contains(a.out.String(), "address already in use") {
				return errPortTaken
			}
			return fmt.Errorf("claimdesk exited before it was ready (%s); its output:\n%s", cmd.ProcessState, a.out.String())
		case <-ctx.Done():
			a.stop()
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			a.stop()
			return fmt.Errorf("claimdesk on %s not ready after %s; its output:\n%s", addr, appStartTimeout, a.out.String())
		}
	}
}

func statusOf(ctx context.Context, cl *http.Client, url string) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0
	}
	resp, err := cl.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// stop ends the process: SIGTERM, then SIGKILL if it lingers.
func (a *app) stop() {
	if a.cmd == nil || a.cmd.Process == nil {
		return
	}
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.done:
	case <-time.After(appStopTimeout):
		_ = a.cmd.Process.Kill()
		<-a.done
	}
	a.cmd = nil
}

// close stops claimdesk and Redis and removes the temporary directory.
func (a *app) close() {
	a.stop()
	if a.rdb != nil {
		a.rdb.Close()
	}
	if a.redis != nil {
		a.redis.Close()
	}
	if a.dir != "" {
		os.RemoveAll(a.dir)
	}
}

// pid is the claimdesk process's id.
func (a *app) pid() int { return a.cmd.Process.Pid }

// redisPID is the redis-server's process id, from INFO.
func redisPID(ctx context.Context, rdb redis.Cmdable) (int, error) {
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "process_id:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, errors.New("redis INFO has no process_id")
}

// checkQuiet adds a check that the server logged nothing (it runs at log
// level warn: anything it wrote is a warning or an error).
func (a *app) checkQuiet(r *result) {
	out := strings.TrimSpace(a.out.String())
	if out == "" {
		r.check("claimdesk logged no warning or error", true, "")
		return
	}
	first, _, _ := strings.Cut(out, "\n")
	r.check("claimdesk logged no warning or error", false, "%d lines, the first: %s", strings.Count(out, "\n")+1, first)
}

// queue creates a queue with default settings.
func (a *app) queue(ctx context.Context, name string) error {
	_, err := a.tasks.PutQueue(ctx, tasks.Queue{Name: name})
	return err
}

// user creates a user; password may be empty for producers.
func (a *app) user(ctx context.Context, name string, role users.Role, password string, queues ...string) error {
	return a.users.Put(ctx, users.User{Name: name, Role: role, Queues: queues}, password)
}

// userWithToken creates a user and returns a new API token for it.
func (a *app) userWithToken(ctx context.Context, name string, role users.Role, queues ...string) (string, error) {
	password := ""
	if role != users.Producer {
		password = name + "-bench-pass"
	}
	if err := a.user(ctx, name, role, password, queues...); err != nil {
		return "", err
	}
	return a.users.NewToken(ctx, name)
}

// rssBytes is a process's resident set size, from VmRSS in
// /proc/<pid>/status (Linux).
func rssBytes(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("read RSS (Linux only): %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse VmRSS %q: %w", v, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// clockTicks is USER_HZ, the unit of the CPU times in /proc/<pid>/stat; 100
// on every Linux architecture Go supports.
const clockTicks = 100

// cpuTime is the CPU time (user + system) a process has used so far, from
// /proc/<pid>/stat (Linux).
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("read CPU time (Linux only): %w", err)
	}
	// The command name (field 2) may hold spaces: count from after its ")".
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64) // field 14
	stime, err2 := strconv.ParseInt(fields[12], 10, 64) // field 15
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// cpuMeter measures the CPU time some processes use over a span.
type cpuMeter struct {
	pids  []int
	start []time.Duration
	t0    time.Time
}

func startCPU(pids ...int) *cpuMeter {
	m := &cpuMeter{pids: pids, t0: time.Now()}
	for _, p := range pids {
		t, _ := cpuTime(p)
		m.start = append(m.start, t)
	}
	return m
}

// used returns, per process, the CPU time used since the start (0 where
// it cannot be read).
func (m *cpuMeter) used() []time.Duration {
	out := make([]time.Duration, len(m.pids))
	for i, p := range m.pids {
		if t, err := cpuTime(p); err == nil {
			out[i] = t - m.start[i]
		}
	}
	return out
}

// cores returns, per process, the CPU time used since the start divided by
// the wall time: 1 is one core busy all along.
func (m *cpuMeter) cores() []float64 {
	wall := time.Since(m.t0)
	out := make([]float64, len(m.pids))
	for i, t := range m.used() {
		if wall > 0 {
			out[i] = float64(t) / float64(wall)
		}
	}
	return out
}

// withoutClaimdeskEnv drops CLAIMDESK_* variables from the bench's own
// environment, so only what the bench sets configures the server.
func withoutClaimdeskEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "CLAIMDESK_") {
			out = append(out, kv)
		}
	}
	return out
}

// freePort asks the kernel for a free loopback port. Another process may
// take it before claimdesk binds it; startApp then tries again.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// newHTTPClient is a keep-alive client with its own connections, no proxy.
func newHTTPClient(idle int) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy:               nil,
			MaxIdleConnsPerHost: idle,
			MaxIdleConns:        idle,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
		},
		Timeout: 30 * time.Second,
	}
}

// statusError is an HTTP answer the bench did not expect.
type statusError struct {
	method, path string
	status       int
	body         string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("%s %s: %d %s", e.method, e.path, e.status, e.body)
}

// call sends a JSON request with an API token and decodes a 2xx JSON
// answer into out (if not nil). It returns the status; any status but 2xx
// is a *statusError.
func call(ctx context.Context, cl *http.Client, base, method, path, token string, in, out any) (int, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, body)
	if err != nil {
		return 0, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := cl.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, &statusError{method, path, resp.StatusCode, strings.TrimSpace(string(b))}
	}
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: decode answer: %w", method, path, err)
		}
	}
	return resp.StatusCode, nil
}

// fetchMetrics returns the server's /metrics page (Prometheus text).
func fetchMetrics(ctx context.Context, base string) ([]byte, error) {
	cl := newHTTPClient(1)
	defer cl.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := cl.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

// goStats reads the Go runtime's gauges from the server's /metrics
// (Prometheus text format): go_goroutines, go_memstats_heap_inuse_bytes,
// go_memstats_stack_inuse_bytes and the like, by name.
func goStats(ctx context.Context, base string) (map[string]float64, error) {
	b, err := fetchMetrics(ctx, base)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		name, v, ok := strings.Cut(line, " ")
		if !ok || !strings.HasPrefix(name, "go_") || strings.Contains(name, "{") {
			continue
		}
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			out[name] = f
		}
	}
	return out, nil
}

// redisCalls returns, per command, how many calls Redis has served and
// the microseconds it spent in them (INFO commandstats).
func redisCalls(ctx context.Context, rdb redis.Cmdable) (map[string][2]int64, error) {
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, err
	}
	out := map[string][2]int64{}
	for _, line := range strings.Split(info, "\r\n") {
		name, rest, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":")
		if !ok || !strings.HasPrefix(line, "cmdstat_") {
			continue
		}
		var v [2]int64
		for _, kv := range strings.Split(rest, ",") {
			k, n, _ := strings.Cut(kv, "=")
			switch k {
			case "calls":
				v[0], _ = strconv.ParseInt(n, 10, 64)
			case "usec":
				v[1], _ = strconv.ParseInt(n, 10, 64)
			}
		}
		out[name] = v
	}
	return out, nil
}

// usedMemory is the Redis server's used_memory (INFO memory), in bytes.
func usedMemory(ctx context.Context, rdb redis.Cmdable) (int64, error) {
	info, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, errors.New("INFO memory has no used_memory")
}

// callsSince sums the calls and microseconds since an earlier
// redisCalls, and lists them per command.
func callsSince(before, after map[string][2]int64) (calls, usec int64, per map[string][2]int64) {
	per = map[string][2]int64{}
	for k, v := range after {
		d := [2]int64{v[0] - before[k][0], v[1] - before[k][1]}
		if d[0] > 0 {
			per[k] = d
			calls += d[0]
			usec += d[1]
		}
	}
	return calls, usec, per
}

// histogram is one series of a Prometheus histogram: cumulative counts by
// upper bound, bounds ascending.
type histogram struct {
	le     []float64
	counts []float64
}

// quantile estimates the q-quantile as Prometheus's histogram_quantile
// does: linear within the bucket where it falls.
func (h histogram) quantile(q float64) float64 {
	if len(h.counts) == 0 || h.counts[len(h.counts)-1] == 0 {
		return 0
	}
	rank := q * h.counts[len(h.counts)-1]
	lower, below := 0.0, 0.0
	for i, le := range h.le {
		if h.counts[i] >= rank {
			if math.IsInf(le, 1) {
				return lower
			}
			in := h.counts[i] - below
			if in == 0 {
				return le
			}
			return lower + (le-lower)*(rank-below)/in
		}
		lower, below = le, h.counts[i]
	}
	return lower
}

// serverHistograms reads claimdesk_http_request_seconds from the server's
// /metrics, by "METHOD route".
func serverHistograms(ctx context.Context, base string) (map[string]histogram, error) {
	b, err := fetchMetrics(ctx, base)
	if err != nil {
		return nil, err
	}
	labelRE := regexp.MustCompile(`(\w+)="([^"]*)"`)
	out := map[string]histogram{}
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, "claimdesk_http_request_seconds_bucket{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		l := map[string]string{}
		for _, m := range labelRE.FindAllStringSubmatch(labels, -1) {
			l[m[1]] = m[2]
		}
		le, err1 := strconv.ParseFloat(l["le"], 64)
		n, err2 := strconv.ParseFloat(value, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		key := l["method"] + " " + l["route"]
		h := out[key]
		h.le, h.counts = append(h.le, le), append(h.counts, n)
		out[key] = h
	}
	return out, nil
}
