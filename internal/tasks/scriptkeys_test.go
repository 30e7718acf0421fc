package tasks

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"claimdesk/internal/keys"

	"github.com/redis/go-redis/v9"
)

// luaCode is the text of a Lua file without its comments (no string of
// the scripts holds "--").
func luaCode(t *testing.T, file string) string {
	t.Helper()
	b, err := luaFiles.ReadFile("lua/" + file + ".lua")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		l, _, _ = strings.Cut(l, "--")
		lines[i] = l
	}
	return strings.Join(lines, "\n")
}

var (
	libFunction = regexp.MustCompile(`(?ms)^(?:local )?function (\w+)\(.*?^end$`)
	keyRef      = regexp.MustCompile(`\b(?:K|INDEX)\.(\w+)`)
	stateIndex  = regexp.MustCompile(`\bINDEX\[`)
	allKeys     = regexp.MustCompile(`\bPART\b`)
)

// reachedParts returns the parts of a queue's keys that the code can touch,
// by what it names and what it calls of lib.lua (functions, by name): K.<part>
// and INDEX.<state> name one each, INDEX[...] any state's index, PART every
// key handed.
func reachedParts(code string, lib map[string]string) []keys.Part {
	seen := map[string]bool{}
	found := map[keys.Part]bool{}
	var walk func(code string)
	walk = func(code string) {
		for _, m := range keyRef.FindAllStringSubmatch(code, -1) {
			found[keys.Part(m[1])] = true
		}
		if stateIndex.MatchString(code) {
			for _, st := range States {
				found[keys.Part(st)] = true
			}
		}
		if allKeys.MatchString(code) {
			for _, p := range keys.Parts {
				found[p] = true
			}
		}
		for name, body := range lib {
			if !seen[name] && regexp.MustCompile(`(?:^|[^\w.:])`+name+`\s*\(`).MatchString(code) {
				seen[name] = true
				walk(body)
			}
		}
	}
	walk(code)
	var out []keys.Part
	for _, p := range keys.Parts {
		if found[p] {
			out = append(out, p)
		}
	}
	return out
}

// libFunctions returns lib.lua's top-level functions by name, and fails
// the test if any key is named outside them.
func libFunctions(t *testing.T) map[string]string {
	t.Helper()
	code := luaCode(t, "lib")
	lib := map[string]string{}
	for _, m := range libFunction.FindAllStringSubmatch(code, -1) {
		lib[m[1]] = m[0]
	}
	if rest := libFunction.ReplaceAllString(code, ""); keyRef.MatchString(rest) || stateIndex.MatchString(rest) {
		t.Fatalf("lib.lua names a key outside its functions: %q", keyRef.FindString(rest))
	}
	return lib
}

// Every script is declared with exactly the keys its code can reach: the
// keys its own text names and those of every lib.lua function it calls,
// however deep. A key it could reach undeclared would be nil there (and
// the call fail); one declared but never reached is a stale declaration.
func TestScriptKeysDeclared(t *testing.T) {
	lib := libFunctions(t)
	for file := range library.names {
		got := reachedParts(luaCode(t, file), lib)
		if want := scriptKeys[file]; !slices.Equal(got, want) {
			t.Errorf("%s.lua reaches %v; scriptKeys declares %v", file, got, want)
		}
	}
}

// header returns the parts a script file's KEYS header lists: "-- KEYS
// -> part, part, ..." and its continued lines.
func header(t *testing.T, file string) []keys.Part {
	t.Helper()
	b, err := luaFiles.ReadFile("lua/" + file + ".lua")
	if err != nil {
		t.Fatal(err)
	}
	var list string
	in := false
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "-- KEYS    -> "); ok {
			list, in = rest, true
		} else if rest, ok := strings.CutPrefix(l, "--            "); ok && in {
			list += " " + rest
		} else {
			in = false
		}
	}
	var parts []keys.Part
	for _, p := range strings.Split(list, ",") {
		if p = strings.TrimSpace(p); p != "" {
			parts = append(parts, keys.Part(p))
		}
	}
	return parts
}

// keysWritten finds an assignment to a script's keys by part: K.<part> =,
// INDEX.<state> =, INDEX[...] =, PART... =.
var keysWritten = regexp.MustCompile(`\b(?:K|INDEX|PART)\s*(?:\.\s*\w+|\[[^\]]*\])?\s*=[^=]`)

// No script or helper writes into the keys it is handed: a joined call
// hands each change of a script the same table (many, lib.lua), so a
// write would reach the changes after it, and only in a joined call. The
// helper that starts a body (begin) sets K and INDEX, and only it.
func TestScriptsLeaveTheirKeys(t *testing.T) {
	files := append([]string{"lib"}, library.files...)
	for _, file := range files {
		code := luaCode(t, file)
		if file == "lib" {
			code = libFunction.ReplaceAllStringFunc(code, func(fn string) string {
				if strings.HasPrefix(fn, "local function begin(") {
					return ""
				}
				return fn
			})
		}
		if m := keysWritten.FindString(code); m != "" {
			t.Errorf("%s.lua writes into its keys: %q", file, m)
		}
	}
	if keysWritten.FindString("K.meta = 'x'") == "" || keysWritten.FindString("INDEX[state] = k") == "" ||
		keysWritten.FindString("if K.meta == x then") != "" {
		t.Error("keysWritten does not tell writes from reads")
	}
}

// Each script file's KEYS header lists the keys it is declared with, in
// the order it is handed them.
func TestScriptHeaders(t *testing.T) {
	for file := range library.names {
		if got, want := header(t, file), scriptKeys[file]; !slices.Equal(got, want) {
			t.Errorf("%s.lua's header lists KEYS %v; scriptKeys declares %v", file, got, want)
		}
	}
}

// checkedLibrary is the library l with every redis.call of its scripts
// checked: a call that touches a key (as COMMAND GETKEYS finds its keys)
// that is not among the keys the script was handed fails the script. Its
// functions have the names of l's.
func checkedLibrary(l functionLibrary) functionLibrary {
	const check = `
local HANDED
local function checked_call(cmd, ...)
  local touched = redis.pcall('COMMAND', 'GETKEYS', cmd, ...)
  if type(touched) == 'table' and not touched.err then
    for _, k in ipairs(touched) do
      local handed = false
      for _, h in pairs(HANDED) do handed = handed or h == k end
      if not handed then error(cmd .. ' touched the key ' .. k .. ', not handed to the script') end
    end
  end
  return redis.call(cmd, ...)
end
`
	const entry = "function(PART, ARGV)\n"
	first, rest, _ := strings.Cut(strings.ReplaceAll(l.code, "redis.call(", "checked_call("), "\n")
	if strings.Count(rest, entry) != len(l.names) {
		panic("checkedLibrary: the library's functions are not as expected")
	}
	l.code = first + check + strings.ReplaceAll(rest, entry, entry+"HANDED = PART\n")
	return l
}

// The check catches a script that touches a key it was not handed, and
// lets one that touches only its own keys be.
func TestCheckedLibrary(t *testing.T) {
	t.Parallel()
	rdb := backends[0].rdb
	ctx := t.Context()
	l := checkedLibrary(functionLibrary{
		code:  "#!lua name=keycheck_test\nredis.register_function('touch', function(PART, ARGV)\nreturn redis.call('GET', ARGV[1])\nend)\n",
		names: map[string]string{"touch": "touch"},
	})
	if err := rdb.FunctionLoadReplace(ctx, l.code).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.FCall(ctx, "touch", []string{"cd:{keycheck}:a"}, "cd:{keycheck}:a").Err(); err != nil && err != redis.Nil {
		t.Errorf("touching a key handed: %v", err)
	}
	err := rdb.FCall(ctx, "touch", []string{"cd:{keycheck}:a"}, "cd:{keycheck}:b").Err()
	if err == nil || err == redis.Nil || !strings.Contains(err.Error(), "touched the key cd:{keycheck}:b, not handed") {
		t.Errorf("touching a key not handed: %v, want it refused", err)
	}
}

// scriptsRan is a client hook that notes the library's functions called
// through the client.
type scriptsRan struct {
	mu     sync.Mutex
	called map[string]bool
}

func (s *scriptsRan) note(cmds ...redis.Cmder) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.called == nil {
		s.called = map[string]bool{}
	}
	for _, c := range cmds {
		if args := c.Args(); len(args) > 1 && args[0] == "fcall" {
			s.called[fmt.Sprint(args[1])] = true
		}
	}
}

// missing lists the script files none of whose calls the hook saw.
func (s *scriptsRan) missing() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for file, fn := range library.names {
		if !s.called[fn] {
			out = append(out, file)
		}
	}
	slices.Sort(out)
	return out
}
