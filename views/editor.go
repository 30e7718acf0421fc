package views

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/a-h/templ"

	"claimdesk/internal/tasks"
)

// The outcome form's editor is part of a queue's settings form: the
// decisions, one per line, and a row of inputs per field, under names of
// their own (field_name, field_type, … once per field, in order). Its
// buttons (name "edit") add, move and remove fields or switch to the
// form's JSON and back without saving; the page shows the form again with
// the change made. The JSON box ("outcome") is the advanced view of the
// same form; "outcome_view" says which of the two the form sent.

// The views of the outcome form.
const (
	EditorForm = "form"
	EditorJSON = "json"
)

// OutcomeDraft is the outcome form as the editor holds it: as typed,
// right or wrong, to show again.
type OutcomeDraft struct {
	Choices string // one per line
	Fields  []DraftField
}

// DraftField is one field of an OutcomeDraft, as typed.
type DraftField struct {
	Name, Label, Type string
	// Required is "always", "optional" or "some" (for the decisions in
	// RequiredFor, comma separated).
	Required, RequiredFor string
	Options               string // one per line
	Min, Max, Prefill     string
}

// draftColumns are the editor's inputs of a field, by name.
var draftColumns = []struct {
	name string
	of   func(f *DraftField) *string
}{
	{"field_name", func(f *DraftField) *string { return &f.Name }},
	{"field_label", func(f *DraftField) *string { return &f.Label }},
	{"field_type", func(f *DraftField) *string { return &f.Type }},
	{"field_required", func(f *DraftField) *string { return &f.Required }},
	{"field_required_for", func(f *DraftField) *string { return &f.RequiredFor }},
	{"field_options", func(f *DraftField) *string { return &f.Options }},
	{"field_min", func(f *DraftField) *string { return &f.Min }},
	{"field_max", func(f *DraftField) *string { return &f.Max }},
	{"field_prefill", func(f *DraftField) *string { return &f.Prefill }},
}

// DraftOf is a stored form as the editor shows it.
func DraftOf(o *tasks.Outcome) OutcomeDraft {
	var d OutcomeDraft
	if o.Empty() {
		return d
	}
	d.Choices = strings.Join(o.Choices, "\n")
	for _, f := range o.Fields {
		df := DraftField{Name: f.Name, Label: f.Label, Type: f.Type, Required: "optional",
			Options: strings.Join(f.Options, "\n"), Prefill: f.Prefill}
		switch {
		case f.Required:
			df.Required = "always"
		case len(f.RequiredFor) > 0:
			df.Required, df.RequiredFor = "some", strings.Join(f.RequiredFor, ", ")
		}
		if f.Min != nil {
			df.Min = strconv.FormatFloat(*f.Min, 'f', -1, 64)
		}
		if f.Max != nil {
			df.Max = strconv.FormatFloat(*f.Max, 'f', -1, 64)
		}
		d.Fields = append(d.Fields, df)
	}
	return d
}

// OutcomeFromSettings reads the outcome form that a queue's settings form
// sent, from the editor or its JSON (outcome_view; a form from before
// the editor sends only "outcome"): the form (empty to remove it), or
// every problem of it at once, each at its input. sent is false when the
// settings form sent no outcome form, which then stays as it is.
func OutcomeFromSettings(form url.Values) (o *tasks.Outcome, sent bool, problem SettingsProblem) {
	if form.Get("outcome_view") == EditorForm {
		o, problems := readDraft(form).Outcome()
		if len(problems) > 0 {
			return nil, true, SettingsProblem{Field: "outcome", Outcome: problems,
				Message: "The outcome form has " + Plural(len(problems), "problem") + ": each is said at its place below."}
		}
		if o.Empty() {
			o = &tasks.Outcome{}
		}
		return o, true, SettingsProblem{}
	}
	if form["outcome"] == nil {
		return nil, false, SettingsProblem{}
	}
	o, err := tasks.ParseOutcome(form.Get("outcome"))
	var v *tasks.ValidationError
	if errors.As(err, &v) {
		return nil, true, SettingProblem(v)
	}
	if o == nil {
		o = &tasks.Outcome{}
	}
	return o, true, SettingsProblem{}
}

// readDraft is the editor's form as sent.
func readDraft(form url.Values) OutcomeDraft {
	d := OutcomeDraft{Choices: form.Get("outcome_choices")}
	n := len(form["field_name"])
	d.Fields = make([]DraftField, n)
	for _, c := range draftColumns {
		for i, v := range form[c.name] {
			if i < n {
				*c.of(&d.Fields[i]) = v
			}
		}
	}
	return d
}

// write puts the draft into form, as the editor sends it.
func (d OutcomeDraft) write(form url.Values) {
	form.Set("outcome_choices", d.Choices)
	for _, c := range draftColumns {
		form[c.name] = nil
		for i := range d.Fields {
			form[c.name] = append(form[c.name], *c.of(&d.Fields[i]))
		}
	}
}

// lines are the non-blank lines (or, with commas, items) of s, trimmed.
func lines(s string, seps string) []string {
	var out []string
	for _, l := range strings.FieldsFunc(s, func(r rune) bool { return strings.ContainsRune(seps, r) }) {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// Outcome is the form the draft describes, and every problem of it at
// once, by the editor's input (OutcomeProblemKey) in words.
func (d OutcomeDraft) Outcome() (*tasks.Outcome, map[string]string) {
	problems := map[string]string{}
	o := tasks.Outcome{Choices: lines(d.Choices, "\n,")}
	for i, df := range d.Fields {
		f := tasks.OutcomeField{Name: strings.TrimSpace(df.Name), Label: strings.TrimSpace(df.Label), Type: df.Type,
			Prefill: strings.TrimSpace(df.Prefill)}
		switch df.Required {
		case "always":
			f.Required = true
		case "some":
			if f.RequiredFor = lines(df.RequiredFor, ",\n"); len(f.RequiredFor) == 0 {
				problems[fmt.Sprintf("fields[%d].required_for", i)] = "Name the decisions that need it, separated by commas."
			}
		}
		if f.Type == tasks.FieldOneOf {
			f.Options = lines(df.Options, "\n")
		}
		if f.Type == tasks.FieldNumber {
			for _, b := range []struct {
				key, typed string
				to         **float64
			}{{"min", df.Min, &f.Min}, {"max", df.Max, &f.Max}} {
				if t := strings.TrimSpace(b.typed); t != "" {
					n, err := strconv.ParseFloat(t, 64)
					if err != nil {
						problems[fmt.Sprintf("fields[%d].%s", i, b.key)] = "Enter a number, like 0 or 2500.50."
						continue
					}
					*b.to = &n
				}
			}
		}
		o.Fields = append(o.Fields, f)
	}
	for _, v := range o.Problems() {
		key := OutcomeProblemKey(v.Field)
		if _, ok := problems[key]; !ok {
			problems[key] = editorWords(key, v.Message)
		}
	}
	return &o, problems
}

// problemPath matches the path of a problem of a form: the part of the
// form, a field's part, and an item of a list.
var problemPath = regexp.MustCompile(`^outcome\.(choices|fields)(?:\[(\d+)\](?:\.([a-z_]+))?)?`)

// OutcomeProblemKey is the editor's input that a problem's path
// ("outcome.fields[2].options[1]") is about: "choices", "fields",
// "fields[2].options".
func OutcomeProblemKey(path string) string {
	m := problemPath.FindStringSubmatch(path)
	switch {
	case m == nil:
		return "outcome"
	case m[1] == "choices" || m[2] == "":
		return m[1]
	case m[3] == "":
		return "fields[" + m[2] + "].name"
	}
	return "fields[" + m[2] + "]." + m[3]
}

// editorWords says a problem at an editor's input in a sentence: the
// part, then what is wrong.
func editorWords(key, message string) string {
	part := key[strings.LastIndexByte(key, '.')+1:]
	subject := map[string]string{
		"choices": "Decisions", "fields": "Fields", "name": "Name", "label": "Label", "type": "Type",
		"required_for": "Required for", "options": "Options", "min": "Lowest", "max": "Highest", "prefill": "Start from",
	}[part]
	if subject == "" {
		subject = "This"
	}
	message, _, _ = strings.Cut(message, " (^") // the pattern is the API's, not the page's
	message = strings.Replace(message, "and max are for numbers only", "and highest are for numbers only", 1)
	message = strings.Replace(message, "must not be below min", "must not be below the lowest", 1)
	message = strings.Replace(message, "choices", "decisions", 1)
	return subject + " " + message + "."
}

// EditOutcome makes the change an editor's button asks for (form's
// "edit": "add", "up:2", "down:2", "remove:2", "json" or "form") in what
// the settings form sent, and answers the form to show again; a change it
// cannot make leaves the form as it was. Switching to JSON writes the
// draft as JSON; back to the form, JSON that is no form says why.
func EditOutcome(form url.Values) (url.Values, SettingsProblem) {
	out := url.Values{}
	for k, v := range form {
		out[k] = slices.Clone(v)
	}
	op, arg, _ := strings.Cut(form.Get("edit"), ":")
	i, err := strconv.Atoi(arg)
	if form.Get("outcome_view") == EditorJSON {
		if op == EditorForm {
			o, err := tasks.ParseOutcome(form.Get("outcome"))
			var v *tasks.ValidationError
			if errors.As(err, &v) {
				return out, SettingProblem(v)
			}
			DraftOf(o).write(out)
			out.Set("outcome_view", EditorForm)
		}
		return out, SettingsProblem{}
	}
	d := readDraft(form)
	switch {
	case op == "add" && len(d.Fields) < tasks.MaxOutcomeFields:
		d.Fields = append(d.Fields, DraftField{Type: tasks.FieldText, Required: "optional"})
	case op == EditorJSON:
		o, _ := d.Outcome()
		out.Set("outcome", o.Indent())
		out.Set("outcome_view", EditorJSON)
		return out, SettingsProblem{}
	case err != nil || i < 0 || i >= len(d.Fields):
	case op == "remove":
		d.Fields = slices.Delete(d.Fields, i, i+1)
	case op == "up" && i > 0:
		d.Fields[i-1], d.Fields[i] = d.Fields[i], d.Fields[i-1]
	case op == "down" && i+1 < len(d.Fields):
		d.Fields[i+1], d.Fields[i] = d.Fields[i], d.Fields[i+1]
	}
	d.write(out)
	return out, SettingsProblem{}
}

// editorDraft is the draft the settings form shows: as sent, else the
// queue's form.
func editorDraft(q tasks.Queue, typed url.Values) OutcomeDraft {
	if typed.Get("outcome_view") == EditorForm {
		return readDraft(typed)
	}
	return DraftOf(q.Outcome)
}

// editorView is the view of the outcome form the settings form shows:
// the one it was sent from (JSON from a form from before the editor).
func editorView(typed url.Values) string {
	if v := typed.Get("outcome_view"); v == EditorJSON || v == "" && typed["outcome"] != nil {
		return EditorJSON
	}
	return EditorForm
}

// fieldTypes are the types of a field, in words.
var fieldTypes = []option{
	{tasks.FieldText, "Text"}, {tasks.FieldNumber, "Number"}, {tasks.FieldYesNo, "Yes or no"}, {tasks.FieldOneOf, "One of a list"},
}

// requiredKinds are when a field must be given, in words.
var requiredKinds = []option{{"optional", "Optional"}, {"always", "Always"}, {"some", "For some decisions"}}

// editorInput is the id of an editor's input, for its label and problem.
func editorInput(i int, part string) string { return "field-" + strconv.Itoa(i) + "-" + part }

// editorProblem is what is wrong with an editor's input, "" when nothing.
func editorProblem(problem SettingsProblem, key string) string { return problem.Outcome[key] }

// editorInvalid marks an editor's input whose value has a problem.
func editorInvalid(problem SettingsProblem, key, id string) templ.Attributes {
	if problem.Outcome[key] == "" {
		return nil
	}
	return templ.Attributes{"aria-invalid": "true", "aria-describedby": id + "-problem"}
}
