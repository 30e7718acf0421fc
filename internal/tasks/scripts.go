package tasks

import (
	"context"
	"crypto/sha1"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"claimdesk/internal/keys"
	"claimdesk/internal/storeerr"

	"github.com/redis/go-redis/v9"
)

//go:embed lua/*.lua
var luaFiles embed.FS

// The scripts of lua/ run as one Redis function library: lib.lua's helpers
// are loaded once per server, and each script file's text becomes the body
// of one registered function, called with FCALL. Unlike EVALSHA, nothing
// but the script's own work runs per call. Library and function names carry
// a hash of the sources, so instances of different versions sharing one
// Redis each call their own code, as EVALSHA would.
var library = newLibrary()

// script is one Lua file of lua/, run as a function of the library.
type script struct {
	fn string
	// at is the script's place among the library's, and so among a
	// queue's key lists (queueKeys).
	at int
	// reads is set for scripts that change nothing: they need no replica
	// to confirm them.
	reads bool
	// joins is set for scripts whose calls may go with others of their
	// queue in one call (joined).
	joins bool
}

// joined are the scripts whose calls may run several in one call of the
// library's function "many" (lib.lua), each a change of its own with its
// own answer, the effects of them all answered once: the changes of a
// queue that arrive together (Store.sendChanges). Each reads and writes
// jobs only through the call's shared view of them (load and store, in
// lib.lua) and answers through answer; none changes the queue's settings
// or deletes a job.
var joined = map[string]bool{
	"claim": true, "complete": true, "complete_next": true, "release": true, "extend": true,
	"fail": true, "cancel": true, "requeue": true, "reclaim": true, "promote": true,
}

// scriptKeys declares, for each script file of lua/, the keys of its queue
// that the script may touch, by part: it is handed exactly these as KEYS,
// in this order, and knows each as K.<part> (a state's index also as
// INDEX.<state>, lib.lua). A key it was not handed is nil there, so the
// script cannot touch it: a call that tried would fail. Each file's KEYS
// header lists the same parts; the tests hold every script to its list
// (TestScriptKeysDeclared, and the key check every test runs under).
var scriptKeys = map[string][]keys.Part{
	"batch_cancel": {keys.PartConf, keys.PartReady, keys.PartScheduled, keys.PartReserved, keys.PartCompleted,
		keys.PartDead, keys.PartCanceled, keys.PartMeta, keys.PartPayload, keys.PartResult, keys.PartSkips,
		keys.PartSkipCount, keys.PartBatches, keys.PartBatchDone, keys.PartParked, keys.PartMembers,
		keys.PartClaims, keys.PartHolding, keys.PartPeople, keys.PartWaiting, keys.PartOutbox,
		keys.PartDrafts, keys.PartSLA, keys.PartLate, keys.PartReadyDue, keys.PartMoving, keys.PartReturns,
		keys.PartRouted, keys.PartRoutes, keys.PartFallback, keys.PartHeads},
	"batch_seal": {keys.PartConf, keys.PartReady, keys.PartScheduled, keys.PartReserved, keys.PartDead, keys.PartMeta,
		keys.PartPayload, keys.PartResult, keys.PartBatches, keys.PartBatchDone, keys.PartParked, keys.PartWaiting,
		keys.PartOutbox, keys.PartReadyDue, keys.PartRouted, keys.PartRoutes, keys.PartHeads},
	"cancel": {keys.PartConf, keys.PartReady, keys.PartScheduled, keys.PartReserved, keys.PartCompleted,
		keys.PartDead, keys.PartCanceled, keys.PartMeta, keys.PartPayload, keys.PartResult, keys.PartSkips,
		keys.PartSkipCount, keys.PartBatches, keys.PartBatchDone, keys.PartParked, keys.PartClaims,
		keys.PartHolding, keys.PartPeople, keys.PartWaiting, keys.PartOutbox, keys.PartDrafts, keys.PartSLA,
		keys.PartLate, keys.PartReadyDue, keys.PartMoving, keys.PartReturns, keys.PartRouted,
		keys.PartRoutes, keys.PartFallback, keys.PartHeads},
	"claim": {keys.PartConf, keys.PartReady, keys.PartScheduled, keys.PartReserved, keys.PartCompleted,
		keys.PartDead, keys.PartCanceled, keys.PartMeta, keys.PartPayload, keys.PartResult, keys.PartSkips,
		keys.PartSkipCount, keys.PartBatches, keys.PartBatchDone, keys.PartParked, keys.PartClaims,
		keys.PartHolding, keys.PartPeople, keys.PartWaiting, keys.PartOutbox, keys.PartDrafts, keys.PartSLA,
		keys.PartLate, keys.PartReadyDue, keys.PartReturns, keys.PartRouted, keys.PartRoutes,
		keys.PartFallback, keys.PartHeads},
	"complete": {keys.PartConf, keys.PartReady, keys.PartScheduled, keys.PartReserved, keys.PartCompleted,
		keys.PartDead, keys.PartCanceled, keys.PartMeta, keys.PartPayload, keys.PartResult, keys.PartSkips,
		keys.PartSkipCount, keys.PartBatches, keys.PartBatchDone, keys.PartParked, keys.PartClaims,
		keys.PartHolding, keys.PartPeople, keys.PartWaiting, keys.PartOutbox, keys.PartDrafts, keys.PartSLA,
		keys.PartLate, keys.PartReadyDue, keys.PartReturns, keys.PartRouted, keys.PartRoutes,
		keys.PartFallback, keys.PartHeads},
	"complete_next": {keys.PartConf, keys.PartReady, keys.PartScheduled, keys.PartReserved, keys.PartCompleted,
		keys.PartDead, keys.PartCanceled, keys.PartMeta, keys.PartPayload, keys.PartResult, keys.PartSkips,
		keys.PartSkipCount, keys.PartBatches, keys.PartBatchDone, keys.PartParked, keys.PartClaims,
		keys.PartHolding, keys.PartPeople, keys.PartWaiting, keys.PartOutbox, keys.PartDrafts, keys.PartSLA,
		keys.PartLate, keys.PartReadyDue, keys.PartReturns, keys.PartRouted, keys.PartRoutes,
		keys.PartFallback, keys.PartHeads},
	"draft": {keys.PartConf, keys.PartMeta, keys.PartDrafts, keys.PartRouted, keys.PartRoutes, keys.PartHeads},
	"enqueue": {keys.PartConf, keys.PartReady, keys.PartScheduled, keys.PartReserved, keys.PartCompleted,
		keys.PartDead, keys.PartCanceled, keys.PartMeta, keys.PartPayload, keys.PartResult, keys.PartIdem,
		keys.PartBatches, keys.PartBatchIndex, keys.PartBatchDone, keys.PartParked, keys.PartMembers,
		keys.PartWaiting, keys.PartOutbox, keys.PartSLA, keys.PartReadyDue, keys.PartMoved, keys.PartRouted,
		keys.PartRoutes, keys.PartFallback, keys.PartHeads},
	"extend": {keys.PartConf, keys.PartReady, keys.PartScheduled, keys.PartReserved, keys.PartDead, keys.PartMeta,
		keys.PartPayload, keys.PartResult, keys.PartBatches, keys.PartParked, keys.PartOutbox,
		keys.PartRouted, keys.PartRoutes, keys.PartHeads},
	"fail": {keys.PartConf, keys.PartReady, keys.PartScheduled, keys.PartReserved, keys.PartCompleted,
		keys.PartDead, keys.PartCanceled, keys.PartMeta, keys.PartPayload, keys.PartResult, keys.PartSkips,
		keys.PartSkipCount, keys.PartBatches, keys.PartBatchDone, keys.PartParked, keys.PartClaims,
		keys.PartHolding, keys.PartPeople, keys.PartWaiting, keys.PartOutbox, keys.PartDrafts, keys.PartSLA,
		keys.PartLate, keys.PartReadyDue, keys.PartReturns, keys.PartRouted, keys.PartRoutes,
		keys.PartFallback, keys.PartHeads},
	"head":    {keys.PartConf, keys.PartReady, keys.PartMeta, keys.PartReadyDue, keys.PartRouted, keys.PartHeads},
	"holding": {keys.PartConf, keys.PartReady, keys.PartMeta, keys.PartHolding, keys.PartRouted},
	"lines":   {keys.PartRouted, keys.PartHeads},
	"list": {keys.PartConf, keys.PartReady, keys.PartScheduled, keys.PartReserved, keys.PartCompleted,
		keys.PartDead, keys.PartCanceled, keys.PartMeta, keys.PartPayload, keys.PartResult, keys.PartLate},
	"outbox": {keys.PartConf, keys.PartOutbox},
	"numbers": {keys.PartConf, keys.PartReady, keys.PartCompleted, keys.PartDead, keys.PartParked,
		keys.PartNumbers, keys.PartWaiting},
	"promote": {keys.PartConf, keys.PartReady, keys.PartScheduled, keys.PartReserved, keys.PartCompleted,
		keys.PartDead, keys.PartCanceled, keys.PartMeta, keys.PartPayload, keys.PartResult, keys.PartSkips,
		keys.PartSkipCount, keys.PartBatches, keys.PartBatchDone, keys.PartParked, keys.PartClaims,
		keys.PartHolding, keys.PartPeople, keys.PartWaiting, keys.PartOutbox, keys.PartDrafts, keys.PartSLA,
		keys.PartLate, keys.PartReadyDue, keys.PartReturns, keys.PartRouted, keys.PartRoutes,
		keys.PartFallback, keys.PartHeads},
	"purge": {keys.PartConf, keys.PartCompleted, keys.PartDead, keys.PartCanceled, keys.PartMeta,
		keys.PartPayload, keys.PartResult, keys.PartIdem, keys.PartBatches, keys.PartBatchIndex,
		keys.PartBatchDone, keys.PartMembers, keys.PartDrafts, keys.PartMoved, keys.PartMovedAt, keys.PartAway},
	"queue_delete": keys.Parts,
	"queue_put":    {keys.PartConf},
	"reclaim": {keys.PartConf, keys.PartReady, keys.PartScheduled, keys.PartReserved, keys.PartCompleted,
		keys.PartDead, keys.PartCanceled, keys.PartMeta, keys.PartPayload, keys.PartResult, keys.PartSkips,
		keys.PartSkipCount, keys.PartBatches, keys.PartBatchDone, keys.PartParked, keys.PartClaims,
		keys.PartHolding, keys.PartPeople, keys.PartWaiting, keys.PartOutbox, keys.PartDrafts, keys.PartSLA,
		keys.PartLate, keys.PartReadyDue, keys.PartReturns, keys.PartRouted, keys.PartRoutes,
		keys.PartFallback, keys.PartHeads},
	"release": {keys.PartConf, keys.PartReady, keys.PartScheduled, keys.PartReserved, keys.PartCompleted,
		keys.PartDead, keys.PartCanceled, keys.PartMeta, keys.PartPayload, keys.PartResult, keys.PartSkips,
		keys.PartSkipCount, keys.PartBatches, keys.PartBatchDone, keys.PartParked, keys.PartClaims,
		keys.PartHolding, keys.PartPeople, keys.PartWaiting, keys.PartOutbox, keys.PartDrafts, keys.PartSLA,
		keys.PartLate, keys.PartReadyDue, keys.PartReturns, keys.PartRouted, keys.PartRoutes,
		keys.PartFallback, keys.PartHeads},
	"send_back": {keys.PartConf, keys.PartReady, keys.PartScheduled, keys.PartReserved, keys.PartCompleted,
		keys.PartDead, keys.PartCanceled, keys.PartMeta, keys.PartPayload, keys.PartResult, keys.PartSkips,
		keys.PartSkipCount, keys.PartBatches, keys.PartBatchDone, keys.PartParked, keys.PartClaims,
		keys.PartHolding, keys.PartPeople, keys.PartWaiting, keys.PartOutbox, keys.PartDrafts, keys.PartSLA,
		keys.PartLate, keys.PartReadyDue, keys.PartReturns, keys.PartRouted, keys.PartRoutes,
		keys.PartFallback, keys.PartHeads},
	"assign": {keys.PartConf, keys.PartReady, keys.PartScheduled, keys.PartReserved, keys.PartCompleted,
		keys.PartDead, keys.PartCanceled, keys.PartMeta, keys.PartPayload, keys.PartResult, keys.PartSkips,
		keys.PartSkipCount, keys.PartBatches, keys.PartBatchDone, keys.PartParked, keys.PartClaims,
		keys.PartHolding, keys.PartPeople, keys.PartWaiting, keys.PartOutbox, keys.PartDrafts, keys.PartSLA,
		keys.PartLate, keys.PartReadyDue, keys.PartMoving, keys.PartReturns, keys.PartRouted,
		keys.PartRoutes, keys.PartFallback, keys.PartHeads},
	"requeue": {keys.PartConf, keys.PartReady, keys.PartScheduled, keys.PartReserved, keys.PartCompleted,
		keys.PartDead, keys.PartCanceled, keys.PartMeta, keys.PartPayload, keys.PartResult, keys.PartSkips,
		keys.PartSkipCount, keys.PartBatches, keys.PartBatchDone, keys.PartParked, keys.PartClaims,
		keys.PartHolding, keys.PartPeople, keys.PartWaiting, keys.PartOutbox, keys.PartDrafts, keys.PartSLA,
		keys.PartLate, keys.PartReadyDue, keys.PartReturns, keys.PartRouted, keys.PartRoutes,
		keys.PartFallback, keys.PartHeads},
	"sla": {keys.PartConf, keys.PartReady, keys.PartScheduled, keys.PartReserved, keys.PartCompleted,
		keys.PartDead, keys.PartCanceled, keys.PartMeta, keys.PartPayload, keys.PartResult,
		keys.PartBatches, keys.PartBatchDone, keys.PartParked, keys.PartWaiting, keys.PartOutbox,
		keys.PartSLA, keys.PartLate, keys.PartReadyDue, keys.PartMoving, keys.PartRouted, keys.PartRoutes,
		keys.PartHeads},
	"move_in": {keys.PartConf, keys.PartReady, keys.PartScheduled, keys.PartReserved, keys.PartCompleted,
		keys.PartDead, keys.PartCanceled, keys.PartMeta, keys.PartPayload, keys.PartResult, keys.PartSkips,
		keys.PartSkipCount, keys.PartBatches, keys.PartParked, keys.PartWaiting, keys.PartOutbox,
		keys.PartDrafts, keys.PartSLA, keys.PartLate, keys.PartReadyDue, keys.PartRouted, keys.PartRoutes,
		keys.PartFallback, keys.PartHeads},
	"batch_return": {keys.PartConf, keys.PartReady, keys.PartScheduled, keys.PartReserved, keys.PartDead, keys.PartMeta,
		keys.PartPayload, keys.PartResult, keys.PartBatches, keys.PartBatchDone, keys.PartParked, keys.PartWaiting,
		keys.PartOutbox, keys.PartReadyDue, keys.PartAway, keys.PartRouted, keys.PartRoutes, keys.PartHeads},
	"returned": {keys.PartReturns},
	"move_out": {keys.PartConf, keys.PartReady, keys.PartScheduled, keys.PartReserved, keys.PartCompleted,
		keys.PartDead, keys.PartCanceled, keys.PartMeta, keys.PartPayload, keys.PartResult, keys.PartSkips,
		keys.PartSkipCount, keys.PartBatches, keys.PartBatchDone, keys.PartParked, keys.PartClaims,
		keys.PartHolding, keys.PartPeople, keys.PartWaiting, keys.PartOutbox, keys.PartDrafts, keys.PartSLA,
		keys.PartLate, keys.PartReadyDue, keys.PartMoving, keys.PartMoved, keys.PartMovedAt, keys.PartAway,
		keys.PartReturns, keys.PartRouted, keys.PartRoutes, keys.PartFallback, keys.PartHeads},
	"stats": {keys.PartConf, keys.PartReady, keys.PartScheduled, keys.PartReserved, keys.PartCompleted,
		keys.PartDead, keys.PartCanceled, keys.PartMeta, keys.PartParked, keys.PartWaiting, keys.PartLate,
		keys.PartReadyDue},
	"tally":         {keys.PartPeople},
	"waiting_index": {keys.PartConf, keys.PartMeta, keys.PartWaiting},
}

var (
	enqueueScript      = library.script("enqueue")
	claimScript        = library.script("claim")
	completeScript     = library.script("complete")
	completeNextScript = library.script("complete_next")
	draftScript        = library.script("draft")
	releaseScript      = library.script("release")
	sendBackScript     = library.script("send_back")
	extendScript       = library.script("extend")
	failScript         = library.script("fail")
	reclaimScript      = library.script("reclaim")
	promoteScript      = library.script("promote")
	cancelScript       = library.script("cancel")
	requeueScript      = library.script("requeue")
	assignScript       = library.script("assign")
	purgeScript        = library.script("purge")
	listScript         = library.reader("list")
	statsScript        = library.reader("stats")
	batchSealScript    = library.script("batch_seal")
	batchCancelScript  = library.script("batch_cancel")
	headScript         = library.reader("head")
	holdingScript      = library.reader("holding")
	linesScript        = library.reader("lines")
	queuePutScript     = library.script("queue_put")
	queueDeleteScript  = library.script("queue_delete")
	numbersScript      = library.script("numbers")
	tallyScript        = library.reader("tally")
	waitingIndexScript = library.script("waiting_index")
	outboxScript       = library.script("outbox")
	slaScript          = library.script("sla")
	moveInScript       = library.script("move_in")
	moveOutScript      = library.script("move_out")
	batchReturnScript  = library.script("batch_return")
	returnedScript     = library.script("returned")
)

// luaGlobals heads the library: the globals its functions use, as locals.
// A function finds a global through the functions' global table, an
// empty table whose metatable looks it up among those Redis gives a call:
// two lookups and a metamethod for each use of redis.call, string.sub and
// the like, which a local spares. Loading the library sees only
// redis.register_function, so the locals are bound at the start of the
// first call (lib.lua's fresh, with bind_globals), and stay: every
// function the library registers reaches fresh before any other of its
// code. (Lua 5.1 allows a chunk 200 locals: the library has about 160.)
var luaGlobals = func() string {
	const names = "redis, string, math, table, cmsgpack, cjson, tonumber, tostring, unpack, ipairs, pairs, type, pcall, next"
	return "local function globals() return " + names + " end\n" +
		"local " + names + " = redis\n" +
		"local function bind_globals() " + names + " = globals() end\n"
}()

// functionLibrary is the text of the library and its functions' names.
type functionLibrary struct {
	code  string
	names map[string]string // script file → function name
	many  string            // the name of the function of joined calls
	files []string          // the script files, in their places (script.at)
	// parts are each script's keys, by its place: their places in
	// keys.Parts, in the order the script is handed them.
	parts [][]int
}

// newLibrary makes the library of every script file in lua/ (all but
// lib.lua, which comes first), each declared in scriptKeys.
func newLibrary() functionLibrary {
	entries, err := luaFiles.ReadDir("lua")
	if err != nil {
		panic(err)
	}
	var files []string
	for _, e := range entries {
		if name := strings.TrimSuffix(e.Name(), ".lua"); name != "lib" {
			files = append(files, name)
		}
	}
	if len(files) != len(scriptKeys) {
		panic(fmt.Sprintf("%d script files, %d declared in scriptKeys", len(files), len(scriptKeys)))
	}
	read := func(name string) string {
		b, err := luaFiles.ReadFile("lua/" + name + ".lua")
		if err != nil {
			panic(err)
		}
		return string(b)
	}
	lib := luaGlobals + luaConstants() + read("lib")
	l := functionLibrary{names: map[string]string{}, files: files, parts: make([][]int, len(files))}
	bodies := make([]string, len(files))
	sum := sha1.New()
	sum.Write([]byte(lib))
	for i, f := range files {
		declared, ok := scriptKeys[f]
		if !ok {
			panic("script " + f + " is not declared in scriptKeys")
		}
		for j, p := range declared {
			at := slices.Index(keys.Parts, p)
			if at < 0 || slices.Index(declared, p) < j {
				panic(fmt.Sprintf("script %s declares %q, not a part or twice", f, p))
			}
			l.parts[i] = append(l.parts[i], at)
		}
		// Each body is handed its keys by part (begin) and its arguments
		// as ARGV, as a script would see them.
		bodies[i] = "begin(PART)\n" + read(f)
		sum.Write([]byte(fmt.Sprint(f, "\x00", declared, "\x00", bodies[i])))
		if joined[f] {
			sum.Write([]byte("joined"))
		}
	}
	version := hex.EncodeToString(sum.Sum(nil))[:16]
	var b strings.Builder
	fmt.Fprintf(&b, "#!lua name=claimdesk_%s\n%s\n", version, lib)
	for i, f := range files {
		name := "cd_" + version + "_" + f
		l.names[f] = name
		fmt.Fprintf(&b, "BODY[%d] = function(PART, ARGV)\n%s\nend\n", i+1, bodies[i])
		// The keys by part, from the call's own (a call of its own) or
		// from all of the queue's (PARTS, a joined call). Each body
		// begins with begin, and so fresh (luaGlobals).
		own := make([]string, len(l.parts[i]))
		all := make([]string, len(l.parts[i]))
		for j, at := range l.parts[i] {
			own[j] = fmt.Sprintf("%s = keys[%d]", keys.Parts[at], j+1)
			all[j] = fmt.Sprintf("%s = keys[%d]", keys.Parts[at], at+1)
		}
		if joined[f] {
			fmt.Fprintf(&b, "PARTS[%d] = function(keys) return {%s} end\n", i+1, strings.Join(all, ", "))
		}
		// A call of its own: one that a joined call left unfinished (an
		// error) is not joined.
		fmt.Fprintf(&b, "redis.register_function('%s', function(keys, args) JOINED = false; return BODY[%d]({%s}, args) end)\n",
			name, i+1, strings.Join(own, ", "))
	}
	l.many = "cd_" + version + "_many"
	fmt.Fprintf(&b, "redis.register_function('%s', many)\n", l.many)
	l.code = b.String()
	return l
}

func (l functionLibrary) script(file string) script {
	name, ok := l.names[file]
	if !ok {
		panic("no script " + file)
	}
	return script{fn: name, at: slices.Index(l.files, file), joins: joined[file]}
}

// reader is script for a file that only reads.
func (l functionLibrary) reader(file string) script {
	sc := l.script(file)
	sc.reads = true
	return sc
}

// load puts the library on every server that may run it: each master of a
// cluster, else the one server (replicas receive it from their master).
func (l functionLibrary) load(ctx context.Context, rdb redis.UniversalClient) error {
	loadOn := func(ctx context.Context, c *redis.Client) error {
		err := c.FunctionLoad(ctx, l.code).Err()
		if err != nil && strings.Contains(err.Error(), "already exists") {
			return nil // another instance loaded it meanwhile
		}
		return err
	}
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, loadOn)
	case *redis.Client:
		return loadOn(ctx, c)
	}
	return fmt.Errorf("cannot load functions through a %T", rdb)
}

// keyLists caches the key lists of every queue a script found
// (queueKeys): they are asked for on every call. Names no script found are
// not kept, so requests for made-up queues cannot grow it.
var keyLists sync.Map // queue name → queueKeys

// queueKeys are the keys of one queue: all of them, as a joined call is
// handed them (many), and those each script is handed, by the script's
// place (script.at).
type queueKeys struct {
	all    []string
	handed [][]string
}

// keysOf returns the queue's keys of every script of the library.
func (l functionLibrary) keysOf(queue string) queueKeys {
	qk := queueKeys{all: keysFor(queue).All(), handed: make([][]string, len(l.parts))}
	for i, parts := range l.parts {
		qk.handed[i] = make([]string, len(parts))
		for j, at := range parts {
			qk.handed[i][j] = qk.all[at]
		}
	}
	return qk
}

// queueAllKeys returns every key of the queue, in the order of keys.Parts.
func queueAllKeys(queue string) []string {
	if cached, ok := keyLists.Load(queue); ok {
		return cached.(queueKeys).all
	}
	return keysFor(queue).All()
}

// handed returns the keys of the queue that the script is handed: those
// it declares (scriptKeys), in that order.
func (sc script) handed(queue string) []string {
	if cached, ok := keyLists.Load(queue); ok {
		return cached.(queueKeys).handed[sc.at]
	}
	q := keysFor(queue)
	parts := library.parts[sc.at]
	ks := make([]string, len(parts))
	for i, at := range parts {
		ks[i] = q.Key(keys.Parts[at])
	}
	return ks
}

// run calls the script on the queue's keys (FCALL, loading the library
// first where a server lacks it), tells the Store's observers what the call
// changed, and turns its status code into an error. It returns the values
// after the status and the effects, for the caller to read.
func (s *Store) run(ctx context.Context, sc script, queue string, args ...any) (*reply, error) {
	keys := sc.handed(queue)
	res, unconfirmed, err := s.fcall(ctx, sc, queue, keys, args)
	if err != nil && functionMissing(err) {
		if err := s.loadLibrary(ctx); err != nil {
			return nil, err
		}
		res, unconfirmed, err = s.fcall(ctx, sc, queue, keys, args)
	}
	if err != nil {
		return nil, redisErr(err)
	}
	return s.outcome(ctx, queue, res, unconfirmed)
}

// readEach calls a script that only reads once per queue, all in one
// round trip, and returns each call's values after the status and the
// effects; a queue whose call failed has no values and its error.
func (s *Store) readEach(ctx context.Context, sc script, queues []string, args ...any) ([]*reply, []error, error) {
	return s.readEachWith(ctx, sc, queues, func(string) []any { return args })
}

// readEachWith is readEach with each queue's own arguments.
func (s *Store) readEachWith(ctx context.Context, sc script, queues []string, args func(queue string) []any) ([]*reply, []error, error) {
	cmds := make([]*redis.Cmd, len(queues))
	call := func() error {
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, q := range queues {
				cmds[i] = p.FCall(ctx, sc.fn, sc.handed(q), args(q)...)
			}
			return nil
		})
		return err
	}
	err := call()
	if err != nil && functionMissing(err) {
		if err := s.loadLibrary(ctx); err != nil {
			return nil, nil, err
		}
		err = call()
	}
	if err != nil && !isReply(err) {
		return nil, nil, redisErr(err)
	}
	values, errs := make([]*reply, len(queues)), make([]error, len(queues))
	for i, cmd := range cmds {
		res, err := cmd.Slice()
		if err != nil {
			errs[i] = redisErr(err)
			continue
		}
		values[i], errs[i] = s.outcome(ctx, queues[i], res, nil)
	}
	return values, errs, nil
}

// functionMissing reports whether a server answered that it lacks the
// library's function: it restarted empty, or is new to the cluster.
func functionMissing(err error) bool { return strings.Contains(err.Error(), "Function not found") }

// loadLibrary puts the library on every server that may run it.
func (s *Store) loadLibrary(ctx context.Context) error {
	if err := library.load(ctx, s.rdb); err != nil {
		return fmt.Errorf("load functions: %w", redisErr(err))
	}
	return nil
}

// outcome reads a script's answer on the queue, {status, effects,
// values...}: it tells the Store's observers what the call changed, and
// turns its status code into an error (unconfirmed, when replicas did not
// confirm the change): the one place where they are. It returns the values
// after the status and the effects.
func (s *Store) outcome(ctx context.Context, queue string, res []any, unconfirmed error) (*reply, error) {
	if len(res) < 2 {
		return nil, errors.New("script answered no status and effects")
	}
	// Whatever the status, what the call changed stands (Redis does not
	// roll a script back): it is told first.
	if err := s.tell(ctx, queue, res[1]); err != nil {
		return nil, err
	}
	if unconfirmed != nil {
		return nil, redisErr(unconfirmed)
	}
	code, _ := res[0].(string)
	r := &reply{queue: queue, values: res[2:], now: s.now()}
	switch code {
	case "ok", "empty":
		if _, ok := keyLists.Load(queue); !ok {
			keyLists.Store(queue, library.keysOf(queue))
		}
		return r, nil
	case "form":
		changed := &formChanged{stored: r.str("outcome form")}
		if err := r.done(); err != nil {
			return nil, err
		}
		return nil, changed
	case "answers":
		last := &toAgree{answers: r.str("answers")}
		if err := r.done(); err != nil {
			return nil, err
		}
		return nil, last
	}
	if err, ok := statusErrors[code]; ok {
		return nil, err
	}
	return nil, fmt.Errorf("%w: unknown status %q", errReply, code)
}

// tell tells the Store's observers what a call on the queue changed, as
// its answer's effects say.
func (s *Store) tell(ctx context.Context, queue string, effects any) error {
	fx, changed, err := decodeEffects(queue, effects)
	if err != nil {
		return err
	}
	if os := s.observers.Load(); changed && os != nil {
		for _, o := range *os {
			o(ctx, fx)
		}
	}
	return nil
}

// fcall runs the script: a script that changes something durably (see
// Store.durably), so unconfirmed tells when replicas did not confirm its
// change; err is what kept the script from answering. Changes of one
// queue that arrive while another is under way go together, as one
// pipeline of their calls (lines), each still its own atomic call.
func (s *Store) fcall(ctx context.Context, sc script, queue string, keys []string, args []any) (res []any, unconfirmed, err error) {
	if sc.reads {
		res, err = s.rdb.FCall(ctx, sc.fn, keys, args...).Slice()
		return res, nil, err
	}
	c := &scriptCall{sc: sc, queue: queue, keys: keys, args: args, done: make(chan struct{})}
	if !s.changes.call(ctx, keys[0], c, pipelined, s.sendChanges) {
		return nil, nil, ctx.Err()
	}
	if t := c.told; t != nil {
		// A joined call's effects are told apart from the send (answerJoined):
		// the change is answered once they are, as a call of its own is.
		<-t.done
		if t.err != nil {
			return nil, nil, t.err
		}
	}
	return c.res, c.unconfirmed, c.err
}

// scriptCall is one call of a script that changes a queue, and its answer
// once done is closed.
type scriptCall struct {
	sc               script
	queue            string
	keys             []string
	args             []any
	done             chan struct{}
	res              []any
	unconfirmed, err error
	// told, for a call made joined with others, is the telling of their
	// effects to the Store's observers.
	told *telling
}

// telling is the Store's observers being told the effects of a joined
// call: err is what kept them from being told, once done is closed.
type telling struct {
	done chan struct{}
	err  error
}

func (c *scriptCall) answered() chan struct{} { return c.done }

func (c *scriptCall) fail(err error) {
	c.err = err
	close(c.done)
}

// maxPipeline bounds how many calls go in one round trip.
const maxPipeline = 64

func pipelined(waiting []*scriptCall) int { return min(len(waiting), maxPipeline) }

// sendChanges sends the calls, all of one queue, in one round trip to the
// slot's master, followed by one WAIT for them all when the Store waits
// for replicas, and answers each. The calls of scripts that may be joined,
// when there are several, go as one call of the library's "many" (lib.lua):
// each is still its own change with its own answer, made in turn, and
// their effects are told once, here. The others go each as its own call.
func (s *Store) sendChanges(ctx context.Context, calls []*scriptCall) {
	var joins, alone []*scriptCall
	for _, c := range calls {
		if c.sc.joins {
			joins = append(joins, c)
		} else {
			alone = append(alone, c)
		}
	}
	if len(joins) < 2 {
		alone, joins = calls, nil
	}
	cmds := make([]*redis.Cmd, len(alone))
	var many *redis.Cmd
	err := s.durably(ctx, calls[0].keys[0], func(p redis.Pipeliner) {
		if joins != nil {
			args := []any{len(joins)}
			for _, c := range joins {
				args = append(args, c.sc.at+1, len(c.args))
				args = append(args, c.args...)
			}
			many = p.FCall(ctx, library.many, queueAllKeys(joins[0].queue), args...)
		}
		for i, c := range alone {
			cmds[i] = p.FCall(ctx, c.sc.fn, c.keys, c.args...)
		}
	})
	answer := func(c *scriptCall, res []any, cmdErr error) {
		switch {
		case errors.Is(err, storeerr.ErrNotReplicated):
			c.unconfirmed = err
			c.res, c.err = res, cmdErr
		case err != nil && !isReply(err):
			c.err = err
		default: // each call's error reply, if any, is its own
			c.res, c.err = res, cmdErr
		}
		close(c.done)
	}
	var again []*scriptCall
	if joins != nil {
		again = s.answerJoined(ctx, joins, many, err, answer)
	}
	for i, c := range alone {
		res, cmdErr := cmds[i].Slice()
		answer(c, res, cmdErr)
	}
	if len(again) > 0 {
		// Not made: a change before them in the joined call failed. Each
		// send makes at least its first call, so this ends.
		s.sendChanges(ctx, again)
	}
}

// answerJoined answers each call of a joined call (many) with its own
// answer, {status, "", values...}, or its own error, and returns those
// not made (a change before them failed, which ends the call), to be sent
// again. The effects of them all are told to the Store's observers once,
// apart from the send, which the next changes of the queue wait for: each
// call returns once they are told (fcall).
func (s *Store) answerJoined(ctx context.Context, joins []*scriptCall, many *redis.Cmd, err error, answer func(*scriptCall, []any, error)) (again []*scriptCall) {
	res, cmdErr := many.Slice()
	if cmdErr == nil && len(res) != len(joins)+2 {
		cmdErr = fmt.Errorf("%w: %d answers to %d joined calls", errReply, len(res)-2, len(joins))
	}
	var t *telling
	if cmdErr == nil && (err == nil || errors.Is(err, storeerr.ErrNotReplicated)) {
		t = &telling{done: make(chan struct{})}
		go s.tellJoined(ctx, joins[0].queue, res[1], t)
	}
	for i, c := range joins {
		if cmdErr != nil {
			answer(c, nil, cmdErr)
			continue
		}
		own, _ := res[i+2].([]any)
		if len(own) > 0 && own[0] == "not_made" {
			again = append(again, c)
			continue
		}
		c.told = t
		switch e := res[i+2].(type) {
		case []any:
			answer(c, own, nil)
		case error:
			answer(c, nil, e)
		default:
			answer(c, nil, fmt.Errorf("%w: a joined call answered %T", errReply, e))
		}
	}
	return again
}

// tellJoined tells the Store's observers the effects of a joined call; a
// panic of theirs is each call's error, as it would be on its own path.
func (s *Store) tellJoined(ctx context.Context, queue string, effects any, t *telling) {
	defer close(t.done)
	defer func() {
		if p := recover(); p != nil {
			t.err = fmt.Errorf("tasks: panic while telling: %v", p)
		}
	}()
	t.err = s.tell(ctx, queue, effects)
}

// redisErr wraps an error of the Redis client.
func redisErr(err error) error { return fmt.Errorf("redis: %w", err) }
