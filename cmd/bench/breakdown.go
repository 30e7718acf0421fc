package main

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"
)

// breakdown is where one operation's time inside Redis goes, per call,
// from the INFO commandstats of a phase that made only its calls (Redis
// counts the commands a script runs under their own names, and the
// script's call, FCALL, for the whole of it).
type breakdown struct {
	Op    string `json:"op"`
	Calls int    `json:"calls"`
	// Commands are the commands the scripts ran, by name: calls and
	// microseconds per operation call.
	Commands map[string]commandCost `json:"commands"`
	// CommandsPerCall and CommandsUsec sum them up.
	CommandsPerCall float64 `json:"commands_per_call"`
	CommandsUsec    float64 `json:"commands_usec"`
	// ScriptUsec is the scripts' own work per call: the FCALLs' time less
	// that of the commands they ran.
	ScriptUsec float64 `json:"script_usec"`
}

type commandCost struct {
	Calls float64 `json:"calls"`
	Usec  float64 `json:"usec"`
}

// scriptCalls are the commands that run a script, whose time includes the
// commands the script runs.
var scriptCalls = []string{"fcall", "fcall_ro", "eval", "eval_ro", "evalsha", "evalsha_ro"}

// notScripts are commands no script runs: a client's, as it connects, and
// the bench's own reading of the stats.
var notScripts = []string{"info", "hello", "client|setinfo", "client|setname", "select", "auth", "ping"}

// breakdownOf reads a phase's commandstats (callsSince's per command) as
// calls of one operation, leaving out notScripts.
func breakdownOf(op string, calls int, per map[string][2]int64) breakdown {
	b := breakdown{Op: op, Calls: calls, Commands: map[string]commandCost{}}
	n := float64(max(calls, 1))
	var scripts, inside float64
	for name, d := range per {
		switch {
		case slices.Contains(notScripts, name):
		case slices.Contains(scriptCalls, name):
			scripts += float64(d[1])
		default:
			b.Commands[name] = commandCost{Calls: float64(d[0]) / n, Usec: float64(d[1]) / n}
			b.CommandsPerCall += float64(d[0]) / n
			inside += float64(d[1])
		}
	}
	b.CommandsUsec, b.ScriptUsec = inside/n, (scripts-inside)/n
	return b
}

// perJob is the breakdown of an operation whose calls handled jobs jobs
// in all, per job.
func (b breakdown) perJob(jobs int) breakdown {
	n := float64(jobs) / float64(max(b.Calls, 1)) // jobs per call
	out := breakdown{Op: b.Op + ", per job", Calls: jobs, Commands: map[string]commandCost{},
		CommandsPerCall: b.CommandsPerCall / n, CommandsUsec: b.CommandsUsec / n, ScriptUsec: b.ScriptUsec / n}
	for name, c := range b.Commands {
		out.Commands[name] = commandCost{Calls: c.Calls / n, Usec: c.Usec / n}
	}
	return out
}

// commandList is the commands by calls, most first, in lines of about
// width characters: "hset 2 (0.8 µs), zadd 2 (1.1 µs), …".
func (b breakdown) commandList(width int) []string {
	names := slices.SortedFunc(maps.Keys(b.Commands), func(x, y string) int {
		return cmp.Or(cmp.Compare(b.Commands[y].Calls, b.Commands[x].Calls), strings.Compare(x, y))
	})
	var lines []string
	line := ""
	for i, name := range names {
		part := fmt.Sprintf("%s %s (%s µs)", name, num(b.Commands[name].Calls), num(b.Commands[name].Usec))
		if i < len(names)-1 {
			part += ","
		}
		if line != "" && utf8.RuneCountInString(line)+1+utf8.RuneCountInString(part) > width {
			lines, line = append(lines, line), ""
		}
		line = strings.TrimPrefix(line+" "+part, " ")
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}
