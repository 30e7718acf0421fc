package main

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// result is what one scenario reports: its operations, other figures, and
// its targets checked.
type result struct {
	Scenario string    `json:"scenario"`
	Ops      []summary `json:"ops,omitempty"`
	// Figures are other measured numbers, by name.
	Figures []figure `json:"figures,omitempty"`
	Targets []target `json:"targets,omitempty"`
	// Checks are correctness checks (every job done exactly once, …).
	Checks []check `json:"checks,omitempty"`
	// Breakdown is where some operations' time inside Redis goes.
	Breakdown []breakdown `json:"breakdown,omitempty"`
}

type figure struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
}

type target struct {
	Name string  `json:"name"`
	Got  float64 `json:"got"`
	// Want is the bound: Got must be at least Want (AtLeast) or at most it.
	Want    float64 `json:"want"`
	AtLeast bool    `json:"at_least"`
	Unit    string  `json:"unit"`
	Pass    bool    `json:"pass"`
}

type check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
}

func (r *result) fig(name string, v float64, unit string) {
	r.Figures = append(r.Figures, figure{name, v, unit})
}

func (r *result) atLeast(name string, got, want float64, unit string) {
	r.Targets = append(r.Targets, target{Name: name, Got: got, Want: want, AtLeast: true, Unit: unit, Pass: got >= want})
}

func (r *result) atMost(name string, got, want float64, unit string) {
	r.Targets = append(r.Targets, target{Name: name, Got: got, Want: want, Unit: unit, Pass: got <= want})
}

func (r *result) check(name string, ok bool, detail string, args ...any) {
	r.Checks = append(r.Checks, check{Name: name, OK: ok, Detail: fmt.Sprintf(detail, args...)})
}

// printResults writes the results as plain-text tables.
func printResults(w io.Writer, results []result) {
	// Column widths over every scenario, so all tables line up.
	var opW, figW, checkW, targetW int
	for _, r := range results {
		for _, s := range r.Ops {
			opW = max(opW, len("operation"), utf8.RuneCountInString(s.Op))
		}
		for _, f := range r.Figures {
			figW = max(figW, utf8.RuneCountInString(f.Name))
		}
		for _, c := range r.Checks {
			checkW = max(checkW, utf8.RuneCountInString(c.Name))
		}
		for _, t := range r.Targets {
			targetW = max(targetW, utf8.RuneCountInString(t.Name))
		}
	}
	for _, r := range results {
		fmt.Fprintf(w, "\n== %s\n", r.Scenario)
		if len(r.Ops) > 0 {
			fmt.Fprintf(w, "%s %9s %11s %9s %9s %9s %9s\n", pad("operation", opW), "calls", "calls/s", "p50 ms", "p95 ms", "p99 ms", "max ms")
			for _, s := range r.Ops {
				fmt.Fprintf(w, "%s %9d %11.0f %9.2f %9.2f %9.2f %9.2f\n", pad(s.Op, opW), s.Calls, s.PerSecond, s.P50, s.P95, s.P99, s.Max)
			}
		}
		printBreakdown(w, r.Breakdown)
		for _, f := range r.Figures {
			fmt.Fprintf(w, "%s %12s %s\n", pad(f.Name, figW), num(f.Value), f.Unit)
		}
		for _, c := range r.Checks {
			fmt.Fprintf(w, "check %s %s %s\n", pad(c.Name, checkW), okWord(c.OK, "ok", "FAILED"), c.Detail)
		}
		for _, t := range r.Targets {
			op := "≤"
			if t.AtLeast {
				op = "≥"
			}
			fmt.Fprintf(w, "%-4s %s %10s %s (target %s %s)\n", okWord(t.Pass, "PASS", "FAIL"), pad(t.Name, targetW), num(t.Got), t.Unit, op, num(t.Want))
		}
	}
	pass, total := 0, 0
	for _, r := range results {
		for _, t := range r.Targets {
			total++
			if t.Pass {
				pass++
			}
		}
	}
	fmt.Fprintf(w, "\n%d of %d targets met.\n", pass, total)
}

// printBreakdown writes the breakdowns as a table, each row followed by
// its commands.
func printBreakdown(w io.Writer, bs []breakdown) {
	if len(bs) == 0 {
		return
	}
	const head = "per operation, inside Redis (INFO commandstats)"
	opW := utf8.RuneCountInString(head)
	for _, b := range bs {
		opW = max(opW, utf8.RuneCountInString(b.Op))
	}
	fmt.Fprintf(w, "%s %9s %9s %s %s\n", pad(head, opW), "ops", "commands", padLeft("µs in them", 11), padLeft("µs script's own", 16))
	for _, b := range bs {
		fmt.Fprintf(w, "%s %9d %9s %11s %16s\n", pad(b.Op, opW), b.Calls, num(b.CommandsPerCall), num(b.CommandsUsec), num(b.ScriptUsec))
		for _, line := range b.commandList(100) {
			fmt.Fprintf(w, "    %s\n", line)
		}
	}
}

// pad fills s with spaces to width characters (not bytes: names hold
// arrows and the like).
func pad(s string, width int) string {
	return s + strings.Repeat(" ", max(0, width-utf8.RuneCountInString(s)))
}

// padLeft is pad on the left: a right-aligned column.
func padLeft(s string, width int) string {
	return strings.Repeat(" ", max(0, width-utf8.RuneCountInString(s))) + s
}

func okWord(ok bool, yes, no string) string {
	if ok {
		return yes
	}
	return no
}

// num prints a number with at most 3 significant decimals.
func num(v float64) string {
	s := fmt.Sprintf("%.3f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}
