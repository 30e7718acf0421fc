package tasks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"claimdesk/internal/numfmt"
	"claimdesk/internal/strictjson"
)

// Outcome is a queue's outcome form: what completing one of its jobs must
// say. A completed job's result is then one flat JSON object: the decision
// (one of Choices), each field by its name, typed, and the holder's notes.
// A queue without a form takes any result object.
type Outcome struct {
	// Choices, when given, are the decisions of which the holder picks
	// exactly one, stored as the result's "decision" (approve, reject,
	// escalate). 2 to 10, each a name (^[a-z0-9][a-z0-9_-]{0,39}$).
	Choices []string `json:"choices,omitempty"`
	// Fields are the named values the holder fills in; at most 20.
	Fields []OutcomeField `json:"fields,omitempty"`
}

// OutcomeField is one value of an outcome form.
type OutcomeField struct {
	// Name is the field's key in the result: ^[a-z][a-z0-9_]{0,39}$, not
	// "decision" or "notes".
	Name string `json:"name"`
	// Label is what the form shows; the name in words when empty. At most
	// 80 characters.
	Label string `json:"label,omitempty"`
	// Type is text (a string of at most 2000 characters), number (a JSON
	// number), yes_no (true or false) or one_of (one of Options).
	Type string `json:"type"`
	// Options are one_of's values: 2 to 20, each at most 80 characters.
	Options []string `json:"options,omitempty"`
	// Required fields must be given; RequiredFor, only when the decision
	// is one of those choices (a reason to reject).
	Required    bool     `json:"required,omitempty"`
	RequiredFor []string `json:"required_for,omitempty"`
	// Min and Max, for a number, bound its value (inclusive).
	Min *float64 `json:"min,omitempty"`
	Max *float64 `json:"max,omitempty"`
	// Prefill names a value of the job's payload that the form starts
	// with (PayloadPath): "invoice.gross", "lines[0].sku".
	Prefill string `json:"prefill,omitempty"`
}

// The types of an outcome field.
const (
	FieldText   = "text"
	FieldNumber = "number"
	FieldYesNo  = "yes_no"
	FieldOneOf  = "one_of"
)

// Limits of an outcome form, and of its text values.
const (
	maxChoices       = 10
	MaxOutcomeFields = 20
	maxOptions       = 20
	maxLabel         = 80
	MaxOutcomeText   = 2000
)

// Empty reports whether the form asks for nothing: the queue has none.
func (o *Outcome) Empty() bool {
	return o == nil || len(o.Choices) == 0 && len(o.Fields) == 0
}

// outcomeName reports whether s is a choice or field name: a lowercase
// letter or digit (a field: a letter), then up to 39 of them or _ (a
// choice: or -).
func outcomeName(s string, choice bool) bool {
	if len(s) == 0 || len(s) > 40 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := 'a' <= c && c <= 'z'
		digit := '0' <= c && c <= '9'
		switch {
		case letter:
		case digit && (i > 0 || choice):
		case (c == '_' || c == '-' && choice) && i > 0:
		default:
			return false
		}
	}
	return true
}

// Validate checks the form itself: its first problem (Problems).
func (o Outcome) Validate() error {
	if p := o.Problems(); len(p) > 0 {
		return p[0]
	}
	return nil
}

// Problems are every problem of the form itself, in its order, each at
// its path ("outcome.fields[2].options") and at most one a path.
func (o Outcome) Problems() []*ValidationError {
	var all []*ValidationError
	add := func(at, format string, args ...any) {
		if slices.ContainsFunc(all, func(v *ValidationError) bool { return v.Field == at }) {
			return // the first problem of a part is the one to mend first
		}
		all = append(all, &ValidationError{Field: at, Message: fmt.Sprintf(format, args...)})
	}
	if len(o.Choices) == 1 || len(o.Choices) > maxChoices {
		add("outcome.choices", "must be 2 to %d choices, or none", maxChoices)
	}
	for i, c := range o.Choices {
		switch at := fmt.Sprintf("outcome.choices[%d]", i); {
		case !outcomeName(c, true):
			add(at, "must be lowercase letters, digits, - and _, starting with a letter or digit, at most 40 (^[a-z0-9][a-z0-9_-]{0,39}$)")
		case slices.Index(o.Choices, c) < i:
			add(at, "repeats %q: give each choice once", c)
		}
	}
	if len(o.Fields) > MaxOutcomeFields {
		add("outcome.fields", "must be at most %d fields", MaxOutcomeFields)
	}
	for i, f := range o.Fields {
		at := fmt.Sprintf("outcome.fields[%d]", i)
		switch {
		case !outcomeName(f.Name, false):
			add(at+".name", "must be lowercase letters, digits and _, starting with a letter, at most 40 (^[a-z][a-z0-9_]{0,39}$)")
		case f.Name == "decision" || f.Name == "notes":
			add(at+".name", "%q is taken by the result itself: choose another", f.Name)
		case slices.IndexFunc(o.Fields, func(g OutcomeField) bool { return g.Name == f.Name }) < i:
			add(at+".name", "repeats %q: give each field its own", f.Name)
		}
		if utf8.RuneCountInString(f.Label) > maxLabel || !utf8.ValidString(f.Label) {
			add(at+".label", "must be at most %d characters of UTF-8", maxLabel)
		}
		if f.Required && len(f.RequiredFor) > 0 {
			add(at+".required_for", "is for a field not always required")
		}
		for j, c := range f.RequiredFor {
			if !slices.Contains(o.Choices, c) {
				add(fmt.Sprintf("%s.required_for[%d]", at, j), "%q is not one of the choices", c)
			}
		}
		if (f.Min != nil || f.Max != nil) && f.Type != FieldNumber {
			add(at+".min", "and max are for numbers only")
		} else if f.Min != nil && f.Max != nil && *f.Min > *f.Max {
			add(at+".max", "must not be below min")
		}
		if f.Prefill != "" && !PayloadPath(f.Prefill) {
			add(at+".prefill", `must be a path into the payload: keys joined by dots, list positions in brackets from 0, like invoice.total or lines[0].sku`)
		}
		switch f.Type {
		case FieldText, FieldNumber, FieldYesNo:
			if len(f.Options) > 0 {
				add(at+".options", "are for one_of only")
			}
		case FieldOneOf:
			if len(f.Options) < 2 || len(f.Options) > maxOptions {
				add(at+".options", "must be 2 to %d options", maxOptions)
			}
			for j, opt := range f.Options {
				switch at := fmt.Sprintf("%s.options[%d]", at, j); {
				case strings.TrimSpace(opt) != opt || opt == "" || utf8.RuneCountInString(opt) > maxLabel || !utf8.ValidString(opt):
					add(at, "must be 1 to %d characters, without spaces around", maxLabel)
				case slices.Index(f.Options, opt) < j:
					add(at, "repeats %q: give each option once", opt)
				}
			}
		default:
			add(at+".type", "must be text, number, yes_no or one_of")
		}
	}
	return all
}

// maxPath is the longest prefill path.
const maxPath = 200

// PayloadPath reports whether s is a path into a payload: keys joined by
// dots, each key letters, digits, _ or -, and after a key any number of
// list positions in brackets, from 0 ("invoice.total", "lines[0].sku",
// "matrix[1][2]"); at most 200 characters.
func PayloadPath(s string) bool {
	_, ok := pathSteps(s)
	return ok
}

// pathStep is one step of a payload path: a key, or a list position.
type pathStep struct {
	key   string
	index int // when key is ""
}

func pathSteps(s string) ([]pathStep, bool) {
	if s == "" || len(s) > maxPath {
		return nil, false
	}
	var steps []pathStep
	for _, part := range strings.Split(s, ".") {
		key, rest, _ := strings.Cut(part, "[")
		if key == "" || strings.TrimLeft(key, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != "" {
			return nil, false
		}
		steps = append(steps, pathStep{key: key})
		if rest == "" && !strings.Contains(part, "[") {
			continue
		}
		for _, idx := range strings.Split(rest, "[") {
			digits, ok := strings.CutSuffix(idx, "]")
			n, err := strconv.Atoi(digits)
			if !ok || err != nil || n < 0 || digits != strconv.Itoa(n) {
				return nil, false
			}
			steps = append(steps, pathStep{index: n})
		}
	}
	return steps, true
}

// PrefillValue is the value of the payload at the field's Prefill path,
// when it is one the field can take: a number for a number (or text that
// is a plain number), text for text (or a number, as written), true or
// false for yes_no, one of its options for one_of. ok is false else, and
// for a field without a path.
func (f OutcomeField) PrefillValue(payload json.RawMessage) (v any, ok bool) {
	steps, ok := pathSteps(f.Prefill)
	if !ok {
		return nil, false
	}
	raw := payload
	for _, st := range steps {
		if st.key != "" {
			var obj map[string]json.RawMessage
			if json.Unmarshal(raw, &obj) != nil {
				return nil, false
			}
			raw, ok = obj[st.key]
		} else {
			var list []json.RawMessage
			if json.Unmarshal(raw, &list) != nil {
				return nil, false
			}
			ok = st.index < len(list)
			if ok {
				raw = list[st.index]
			}
		}
		if !ok {
			return nil, false
		}
	}
	var val any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&val) != nil {
		return nil, false
	}
	switch x := val.(type) {
	case json.Number:
		switch f.Type {
		case FieldNumber:
			return x, true
		case FieldText:
			return x.String(), true
		}
	case string:
		switch {
		case f.Type == FieldText && strings.TrimSpace(x) != "" && utf8.RuneCountInString(x) <= MaxOutcomeText:
			return x, true
		case f.Type == FieldOneOf && slices.Contains(f.Options, x):
			return x, true
		case f.Type == FieldNumber:
			if _, err := strconv.ParseFloat(x, 64); err == nil && !strings.ContainsAny(x, "eEinfINFxX_ ") {
				return json.Number(x), true
			}
		}
	case bool:
		if f.Type == FieldYesNo {
			return x, true
		}
	}
	return nil, false
}

// ParseOutcome reads a form from its JSON (strict: no unknown or repeated
// keys); empty text is no form.
func ParseOutcome(raw string) (*Outcome, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" || raw == "null" {
		return nil, nil
	}
	if e := strictjson.Check([]byte(raw), reflect.TypeOf(Outcome{})); e != nil {
		return nil, invalid(e.In("outcome"), "%s", e.Problem)
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.DisallowUnknownFields()
	var o Outcome
	if err := dec.Decode(&o); err != nil {
		return nil, invalid("outcome", "must be an outcome form: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Empty() {
		return nil, nil
	}
	return &o, nil
}

// String is the form as stored: its JSON, or "" for none.
func (o *Outcome) String() string {
	if o.Empty() {
		return ""
	}
	b, _ := json.Marshal(o)
	return string(b)
}

// Indent is the form as a person edits it: indented JSON, or "" for none.
func (o *Outcome) Indent() string {
	if o.Empty() {
		return ""
	}
	b, _ := json.MarshalIndent(o, "", "  ")
	return string(b)
}

// OutcomeError says which parts of a result do not fit its queue's
// outcome form, in the form's order. It matches ErrInvalid with
// errors.Is.
type OutcomeError struct {
	// Fields maps "decision", a field's name or another key of the result
	// to what is wrong with it, in a few words for the API ("must be one
	// of resolved, refund, escalate").
	Fields map[string]string
	// Problems are the same problems as data, for a page to say in its
	// own words.
	Problems map[string]Problem
	order    []string
}

// Problem is what is wrong with one value of a result.
type Problem struct {
	Kind ProblemKind
	// Options are the values to choose from (a decision, a one_of).
	Options []string
	// Min and Max bound a number (ProblemRange).
	Min, Max *float64
}

// ProblemKind is the kind of a Problem.
type ProblemKind string

// The kinds of problems of a result's values.
const (
	ProblemRequired  ProblemKind = "required"  // missing, and needed
	ProblemChoose    ProblemKind = "choose"    // not one of Options
	ProblemNumber    ProblemKind = "number"    // not a number
	ProblemAmbiguous ProblemKind = "ambiguous" // typed as a number that reads two ways
	ProblemRange     ProblemKind = "range"     // a number out of Min to Max
	ProblemYesNo     ProblemKind = "yes_no"    // not yes or no
	ProblemText      ProblemKind = "text"      // not text
	ProblemBlank     ProblemKind = "blank"     // only spaces
	ProblemTooLong   ProblemKind = "too_long"  // over MaxOutcomeText
	ProblemUnknown   ProblemKind = "unknown"   // no field of the form
)

// words says the problem for the API.
func (p Problem) words() string {
	switch p.Kind {
	case ProblemRequired:
		if p.Options != nil {
			return "is required: one of " + strings.Join(p.Options, ", ")
		}
		return "is required"
	case ProblemChoose:
		return "must be one of " + strings.Join(p.Options, ", ")
	case ProblemNumber:
		return "must be a number"
	case ProblemAmbiguous:
		return "must be a number written unambiguously"
	case ProblemRange:
		switch {
		case p.Min != nil && p.Max != nil:
			return fmt.Sprintf("must be between %s and %s", formatFloat(*p.Min), formatFloat(*p.Max))
		case p.Min != nil:
			return "must be at least " + formatFloat(*p.Min)
		}
		return "must be at most " + formatFloat(*p.Max)
	case ProblemYesNo:
		return "must be true or false"
	case ProblemText:
		return "must be text"
	case ProblemBlank:
		return "must not be blank"
	case ProblemTooLong:
		return fmt.Sprintf("must be at most %d characters", MaxOutcomeText)
	}
	return "is not a field of the outcome form"
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func (e *OutcomeError) Error() string {
	parts := make([]string, len(e.order))
	for i, k := range e.order {
		parts[i] = k + " " + e.Fields[k]
	}
	return "result does not fit the queue's outcome form: " + strings.Join(parts, "; ")
}

// Is makes an OutcomeError an ErrInvalid.
func (e *OutcomeError) Is(target error) bool { return target == ErrInvalid }

func (e *OutcomeError) add(key string, p Problem) {
	if e.Fields == nil {
		e.Fields, e.Problems = map[string]string{}, map[string]Problem{}
	}
	if _, ok := e.Fields[key]; ok {
		return // the first problem of a value is the one to mend first
	}
	e.order = append(e.order, key)
	e.Fields[key], e.Problems[key] = p.words(), p
}

// Check checks a result (a JSON object, or empty) against the form: the
// decision is one of its choices, each field has its type (and a number
// its bounds), the required ones are there, and nothing else is but
// "notes" (text). A queue without a form takes any result. The error is
// an *OutcomeError, or a *ValidationError when the result is not a JSON
// object.
func (o *Outcome) Check(result json.RawMessage) error {
	if o.Empty() {
		return nil
	}
	var got map[string]json.RawMessage
	if trimmed := bytes.TrimSpace(result); len(trimmed) > 0 && string(trimmed) != "null" {
		if trimmed[0] != '{' || json.Unmarshal(trimmed, &got) != nil {
			return invalid("result", "must be a JSON object")
		}
	}
	var e OutcomeError
	decision := ""
	if len(o.Choices) > 0 {
		raw, ok := got["decision"]
		switch {
		case !ok || string(raw) == "null":
			e.add("decision", Problem{Kind: ProblemRequired, Options: o.Choices})
		case json.Unmarshal(raw, &decision) != nil || !slices.Contains(o.Choices, decision):
			e.add("decision", Problem{Kind: ProblemChoose, Options: o.Choices})
			decision = ""
		}
	}
	for _, f := range o.Fields {
		raw, ok := got[f.Name]
		if !ok || string(raw) == "null" {
			if f.Required || decision != "" && slices.Contains(f.RequiredFor, decision) {
				e.add(f.Name, Problem{Kind: ProblemRequired})
			}
			continue
		}
		if p, bad := f.check(raw); bad {
			e.add(f.Name, p)
		}
	}
	if raw, ok := got["notes"]; ok {
		var notes string
		if json.Unmarshal(raw, &notes) != nil {
			e.add("notes", Problem{Kind: ProblemText})
		}
	}
	extra := make([]string, 0)
	for k := range got {
		if k != "notes" && (k != "decision" || len(o.Choices) == 0) && !slices.ContainsFunc(o.Fields, func(f OutcomeField) bool { return f.Name == k }) {
			extra = append(extra, k)
		}
	}
	slices.Sort(extra)
	for _, k := range extra {
		e.add(k, Problem{Kind: ProblemUnknown})
	}
	if len(e.order) > 0 {
		return &e
	}
	return nil
}

// check says what is wrong with a field's value (JSON, not null), if
// anything.
func (f OutcomeField) check(raw json.RawMessage) (Problem, bool) {
	switch f.Type {
	case FieldNumber:
		var n float64
		if raw[0] == '"' || json.Unmarshal(raw, &n) != nil {
			return Problem{Kind: ProblemNumber}, true
		}
		if f.Min != nil && n < *f.Min || f.Max != nil && n > *f.Max {
			return Problem{Kind: ProblemRange, Min: f.Min, Max: f.Max}, true
		}
	case FieldYesNo:
		var b bool
		if json.Unmarshal(raw, &b) != nil {
			return Problem{Kind: ProblemYesNo}, true
		}
	default:
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return Problem{Kind: ProblemText}, true
		}
		switch {
		case f.Type == FieldOneOf && !slices.Contains(f.Options, s):
			return Problem{Kind: ProblemChoose, Options: f.Options}, true
		case strings.TrimSpace(s) == "":
			return Problem{Kind: ProblemBlank}, true
		case utf8.RuneCountInString(s) > MaxOutcomeText:
			return Problem{Kind: ProblemTooLong}, true
		}
	}
	return Problem{}, false
}

// FromForm builds a result from what a person typed in the form (each
// value by its field's name; "decision" and "notes" too): text trimmed,
// numbers read in the viewer's locale (numfmt.Locale.Read), yes/no from
// "yes" or "no", blanks left out. What cannot be read as its type, or
// does not pass Check, is an *OutcomeError (all of it at once, in the
// form's order); the result is then not built.
func (o *Outcome) FromForm(get func(name string) string, loc numfmt.Locale) (json.RawMessage, error) {
	result := map[string]any{}
	var e OutcomeError
	if d := strings.TrimSpace(get("decision")); d != "" {
		result["decision"] = d
	}
	for _, f := range o.Fields {
		v := strings.TrimSpace(get(f.Name))
		if v == "" {
			continue
		}
		switch f.Type {
		case FieldNumber:
			n, err := loc.Read(v)
			switch {
			case errors.Is(err, numfmt.ErrAmbiguous):
				e.add(f.Name, Problem{Kind: ProblemAmbiguous})
			case err != nil:
				e.add(f.Name, Problem{Kind: ProblemNumber})
			default:
				result[f.Name] = n
			}
		case FieldYesNo:
			switch v {
			case "yes":
				result[f.Name] = true
			case "no":
				result[f.Name] = false
			default:
				e.add(f.Name, Problem{Kind: ProblemYesNo})
			}
		default:
			result[f.Name] = v
		}
	}
	if notes := strings.TrimSpace(get("notes")); notes != "" {
		result["notes"] = notes
	}
	var b json.RawMessage
	if len(result) > 0 {
		var err error
		if b, err = json.Marshal(result); err != nil {
			return nil, errors.New("outcome: " + err.Error())
		}
	}
	var ce *OutcomeError
	if err := o.Check(b); errors.As(err, &ce) {
		for _, k := range ce.order {
			e.add(k, ce.Problems[k])
		}
	} else if err != nil {
		return nil, err
	}
	if len(e.order) > 0 {
		// In the form's order: the decision, then the fields.
		at := func(k string) int {
			if k == "decision" {
				return -1
			}
			return slices.IndexFunc(o.Fields, func(f OutcomeField) bool { return f.Name == k })
		}
		slices.SortStableFunc(e.order, func(a, b string) int { return at(a) - at(b) })
		return nil, &e
	}
	return b, nil
}
