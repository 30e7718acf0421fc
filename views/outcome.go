package views

import (
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/a-h/templ"

	"claimdesk/internal/numfmt"
	"claimdesk/internal/tasks"
)

// Humanize says a name for people: "needs_review" as "Needs review".
func Humanize(name string) string { return Field{Key: name}.Label() }

// fieldLabel is what the outcome form shows for a field: its label, or
// its name in words.
func fieldLabel(f tasks.OutcomeField) string {
	if f.Label != "" {
		return f.Label
	}
	return Humanize(f.Name)
}

// requiredWords marks a field the holder must fill in, always or for some
// decisions.
func requiredWords(f tasks.OutcomeField) string {
	switch {
	case f.Required:
		return "(required)"
	case len(f.RequiredFor) > 0:
		return "(required for " + orList(f.RequiredFor) + ")"
	}
	return "(optional)"
}

// orList says names as choices: "Resolved, Refund or Escalate".
func orList(names []string) string {
	words := ""
	for i, c := range names {
		switch {
		case i == 0:
		case i == len(names)-1:
			words += " or "
		default:
			words += ", "
		}
		words += Humanize(c)
	}
	return words
}

// OutcomeProblems says each problem of a result refused by its queue's
// outcome form in a sentence, by the value's name, in one voice: what to
// do, with the choices or an example in the viewer's way of writing
// numbers ("Choose one: Resolved, Refund or Escalate.", "Enter an amount
// like 1,188.00.").
func OutcomeProblems(o *tasks.Outcome, e *tasks.OutcomeError, loc numfmt.Locale) map[string]string {
	said := make(map[string]string, len(e.Problems))
	for name, p := range e.Problems {
		f := tasks.OutcomeField{Name: name, Type: tasks.FieldText}
		if i := slices.IndexFunc(o.Fields, func(f tasks.OutcomeField) bool { return f.Name == name }); i >= 0 {
			f = o.Fields[i]
		}
		said[name] = problemWords(f, p, loc)
	}
	return said
}

// problemWords says one problem of a value of type f.
func problemWords(f tasks.OutcomeField, p tasks.Problem, loc numfmt.Locale) string {
	enter := "Enter a number like " + loc.Format("1250") + "."
	if amountField(f) {
		enter = "Enter an amount like " + loc.Example() + "."
	}
	switch p.Kind {
	case tasks.ProblemRequired, tasks.ProblemChoose:
		switch {
		case p.Options != nil && f.Name == "decision" || f.Type == tasks.FieldOneOf && len(f.Options) <= 6:
			if p.Options == nil {
				p.Options = f.Options
			}
			if f.Type == tasks.FieldOneOf {
				return "Choose one: " + strings.Join(p.Options[:len(p.Options)-1], ", ") + " or " + p.Options[len(p.Options)-1] + "."
			}
			return "Choose one: " + orList(p.Options) + "."
		case f.Type == tasks.FieldOneOf:
			return "Choose one from the list."
		case f.Type == tasks.FieldYesNo:
			return "Choose Yes or No."
		case f.Type == tasks.FieldNumber:
			return enter
		}
		return "Fill this in."
	case tasks.ProblemNumber:
		return enter
	case tasks.ProblemAmbiguous:
		return "This reads two ways: write it like " + loc.Example() + ", or without separators, like 1188."
	case tasks.ProblemRange:
		switch {
		case p.Min != nil && p.Max != nil:
			return "Enter a number from " + formatBound(*p.Min, loc) + " to " + formatBound(*p.Max, loc) + "."
		case p.Min != nil:
			return "Enter a number of at least " + formatBound(*p.Min, loc) + "."
		}
		return "Enter a number of at most " + formatBound(*p.Max, loc) + "."
	case tasks.ProblemYesNo:
		return "Choose Yes or No."
	case tasks.ProblemBlank, tasks.ProblemText:
		return "Fill this in with words."
	case tasks.ProblemTooLong:
		return "Shorten this to " + loc.Format(strconv.Itoa(tasks.MaxOutcomeText)) + " characters or fewer."
	}
	return "This is not a field of the form."
}

// amountField reports whether an outcome field is an amount of money: a
// word of its name is one of money's ("refund_amount", "total_to_pay"),
// or it ends in a currency ("credit_eur").
func amountField(f tasks.OutcomeField) bool {
	return f.Type == tasks.FieldNumber && (slices.ContainsFunc(keyWords(f.Name), func(w string) bool { return moneyWords[w] }) ||
		keyCurrency(f.Name) != "")
}

// formatBound writes a number's bound as the viewer does.
func formatBound(n float64, loc numfmt.Locale) string {
	return loc.Format(strconv.FormatFloat(n, 'f', -1, 64))
}

// startValue is what a field of the complete form shows: what the holder
// typed, when the form comes back refused; else the job's payload at the
// field's prefill path, written as the viewer writes it ("yes" or "no"
// for yes_no); else nothing.
func startValue(p Page, w Work, f tasks.OutcomeField) string {
	if w.Typed != nil {
		return w.typed(f.Name)
	}
	v, ok := f.PrefillValue(w.Job.Payload)
	if !ok {
		return ""
	}
	switch v := v.(type) {
	case json.Number:
		n := v.String()
		if amountField(f) && !strings.ContainsAny(n, ".eE") {
			n += ".00" // an amount in whole units, as amounts are written
		}
		return p.Locale.Format(n)
	case bool:
		if v {
			return "yes"
		}
		return "no"
	case string:
		return v
	}
	return ""
}

type option struct{ value, label string }

// fieldOptions are the buttons of a yes/no or short one-of field.
func fieldOptions(f tasks.OutcomeField) []option {
	if f.Type == tasks.FieldYesNo {
		return []option{{"yes", "Yes"}, {"no", "No"}}
	}
	opts := make([]option, len(f.Options))
	for i, o := range f.Options {
		opts[i] = option{o, o}
	}
	return opts
}

// FreeRows is how many name/value rows the complete form offers where the
// queue has no outcome form.
const FreeRows = 3

// FreeRowKey names the problem of free row i (from 0) in Work.Problems.
func FreeRowKey(i int) string { return "row-" + strconv.Itoa(i+1) }

// problemID is the id of the problem shown for the named value, for its
// control's aria-describedby; "" when there is none.
func problemID(w Work, name string) string {
	if w.Problems[name] == "" {
		return ""
	}
	return "problem-" + name
}

// invalid marks a control whose value has a problem, and points to it.
func invalid(w Work, name string) templ.Attributes {
	if w.Problems[name] == "" {
		return nil
	}
	return templ.Attributes{"aria-invalid": "true", "aria-describedby": "problem-" + name}
}

// typedAt is the i-th value typed as name (a refused complete's free
// rows), "" else.
func typedAt(v url.Values, name string, i int) string {
	if i < len(v[name]) {
		return v[name][i]
	}
	return ""
}

// unsaved is what a holder sent with an action refused because their
// reservation had ended, to copy: the notes, then every other value they
// typed ("name: value"), the free rows' too.
func unsaved(w Work) string {
	return strings.Join(typedLines(w.Typed), "\n")
}
