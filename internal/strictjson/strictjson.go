// Package strictjson checks JSON text for what encoding/json lets through
// silently and claimdesk refuses: text that is not valid UTF-8 (Go's
// decoder turns it into U+FFFD, json.RawMessage keeps it as it is), escapes
// of half a UTF-16 surrogate pair ("\ud800", which no UTF-8 text can hold),
// an object that names the same key twice (Go's decoder keeps the last,
// other readers the first), and a key that names a known field in other
// letter case (Go's decoder matches field names case-insensitively, so
// {"Title": …} or {"title": …, "TITLE": …} would set the title).
//
// The package is a leaf of the standard library only: the engine checks
// payloads and results with it, the HTTP handlers whole request bodies.
package strictjson

import (
	"cmp"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// Error says where a JSON text is not strict, and how.
type Error struct {
	// Path leads from the top of the text to the value at fault, as keys
	// and indexes: ".customer.name", "[2]", `["first name"]`; "" for the
	// top.
	Path string
	// Problem says what is wrong, e.g. "must be valid UTF-8".
	Problem string
}

func (e *Error) Error() string { return e.In("") + " " + e.Problem }

// In names the value at fault as a field of the given name ("" for a
// text that is itself the request): In("payload") is "payload.customer",
// In("") is "customer". The top of a text with no name is "body".
func (e *Error) In(field string) string {
	switch {
	case field != "":
		return field + e.Path
	case e.Path == "":
		return "body"
	}
	return strings.TrimPrefix(e.Path, ".")
}

// Check reports the first place where data, one JSON value, is not strict:
// a string or key that is not valid UTF-8 or holds an escaped half of a
// surrogate pair; an object that has a key twice (after unescaping, at any
// depth); or, within the objects that t describes, a key that equals a
// field's name only when letter case is ignored. t is the Go type the text
// is decoded into, as encoding/json sees it: a struct's fields by their
// json names (embedded structs' too), followed through pointers, slices,
// arrays and map values; a type that decodes itself (json.RawMessage,
// time.Time) and nil describe nothing, and the keys inside them are data,
// checked only for the rest. It answers nil when data is strict (compare
// the answer with nil before treating it as an error).
func Check(data []byte, t reflect.Type) *Error {
	if !json.Valid(data) {
		return &Error{Problem: "is not valid JSON"}
	}
	w := walker{data: data}
	w.space()
	return w.value(t)
}

// PathAt names, as Error.Path does, the innermost value of data (one JSON
// value) that begins before offset and ends at or after it: the value an
// encoding/json UnmarshalTypeError's Offset points into (it points at the
// end of a literal of the wrong type, or just inside an object or array
// where neither belongs), so a type error names "jobs[1].title" where
// encoding/json says "jobs.title". ok is false when no value is found
// there, or the text is not strict before it.
func PathAt(data []byte, offset int64) (path string, ok bool) {
	if !json.Valid(data) || offset <= 0 {
		return "", false
	}
	w := walker{data: data, at: int(offset)}
	w.space()
	w.value(nil) // stops at the first text not strict, found or not
	if w.hit == nil {
		return "", false
	}
	return w.hit.Path, true
}

// walker reads a text that json.Valid accepted, so it need not check
// the grammar again.
type walker struct {
	data []byte
	i    int
	path []step
	// at, when above 0, is an offset PathAt looks for; hit names the
	// innermost value around it, once read.
	at  int
	hit *Error
}

// step is one key or index of the path to the value being read.
type step struct {
	key   string
	index int // of an array element, when not isKey
	isKey bool
}

func (w *walker) fail(format string, args ...any) *Error {
	var b strings.Builder
	for _, s := range w.path {
		switch {
		case !s.isKey:
			fmt.Fprintf(&b, "[%d]", s.index)
		case plainKey(s.key):
			b.WriteString("." + s.key)
		default:
			fmt.Fprintf(&b, "[%s]", strconv.QuoteToASCII(s.key))
		}
	}
	return &Error{Path: b.String(), Problem: fmt.Sprintf(format, args...)}
}

// plainKey reports whether a key reads well after a dot in a path.
func plainKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func (w *walker) space() {
	for w.i < len(w.data) {
		switch w.data[w.i] {
		case ' ', '\t', '\r', '\n':
			w.i++
		default:
			return
		}
	}
}

// value reads one value, described by t (nil: nothing known).
func (w *walker) value(t reflect.Type) *Error {
	start := w.i
	err := w.read(t)
	if w.hit == nil && start < w.at && w.at <= w.i {
		w.hit = w.fail("")
	}
	return err
}

// read reads the value value does.
func (w *walker) read(t reflect.Type) *Error {
	switch w.data[w.i] {
	case '{':
		return w.object(describe(t))
	case '[':
		return w.array(describe(t))
	case '"':
		_, err := w.str()
		return err
	}
	// A number, true, false or null: up to the next delimiter.
	for w.i < len(w.data) {
		switch w.data[w.i] {
		case ',', ']', '}', ' ', '\t', '\r', '\n':
			return nil
		}
		w.i++
	}
	return nil
}

func (w *walker) object(t reflect.Type) *Error {
	var fields *fieldSet
	var values reflect.Type // of a map
	switch {
	case t == nil:
	case t.Kind() == reflect.Struct:
		fields = fieldsOf(t)
	case t.Kind() == reflect.Map:
		values = t.Elem()
	}
	var seen map[string]bool
	w.i++ // {
	w.space()
	for w.data[w.i] != '}' {
		raw, err := w.str()
		if err != nil {
			return err // named by the object's path: the key is no text
		}
		key := unquote(raw)
		w.path = append(w.path, step{key: key, isKey: true})
		if seen[key] {
			return w.fail("appears twice in its object")
		}
		if seen == nil {
			seen = map[string]bool{}
		}
		seen[key] = true
		child := values
		if fields != nil {
			f, ok := fields.byName[key]
			if !ok {
				if name, ok := fields.fold(key); ok {
					return w.fail("must be written %q: field names are case-sensitive", name)
				}
			}
			child = f.t
		}
		w.space()
		w.i++ // :
		w.space()
		if err := w.value(child); err != nil {
			return err
		}
		w.path = w.path[:len(w.path)-1]
		w.space()
		if w.data[w.i] == ',' {
			w.i++
			w.space()
		}
	}
	w.i++ // }
	return nil
}

func (w *walker) array(t reflect.Type) *Error {
	var elem reflect.Type
	if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		elem = t.Elem()
	}
	w.i++ // [
	w.space()
	for n := 0; w.data[w.i] != ']'; n++ {
		w.path = append(w.path, step{index: n})
		if err := w.value(elem); err != nil {
			return err
		}
		w.path = w.path[:len(w.path)-1]
		w.space()
		if w.data[w.i] == ',' {
			w.i++
			w.space()
		}
	}
	w.i++ // ]
	return nil
}

// str reads a string, quotes included, and returns it as written.
func (w *walker) str() ([]byte, *Error) {
	start := w.i
	w.i++ // "
	for {
		c := w.data[w.i]
		switch {
		case c == '"':
			w.i++
			return w.data[start:w.i], nil
		case c == '\\' && w.data[w.i+1] == 'u':
			r := hex4(w.data[w.i+2:])
			w.i += 6
			switch {
			case r >= 0xdc00 && r <= 0xdfff:
				return nil, w.fail(`must be valid Unicode: \u%04x is the second half of a surrogate pair without its first`, r)
			case r >= 0xd800 && r <= 0xdbff:
				if w.data[w.i] != '\\' || w.data[w.i+1] != 'u' {
					return nil, w.fail(`must be valid Unicode: \u%04x is the first half of a surrogate pair without its second`, r)
				}
				if low := hex4(w.data[w.i+2:]); low < 0xdc00 || low > 0xdfff {
					return nil, w.fail(`must be valid Unicode: \u%04x is the first half of a surrogate pair without its second`, r)
				}
				w.i += 6
			}
		case c == '\\':
			w.i += 2
		case c < utf8.RuneSelf:
			w.i++
		default:
			r, n := utf8.DecodeRune(w.data[w.i:])
			if r == utf8.RuneError && n == 1 {
				return nil, w.fail("must be valid UTF-8")
			}
			w.i += n
		}
	}
}

// hex4 reads the four hex digits of a \u escape (json.Valid saw them).
func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case c <= '9':
			c -= '0'
		case c >= 'a':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// unquote returns the string a JSON string literal stands for.
func unquote(raw []byte) string {
	if !strings.ContainsRune(string(raw), '\\') {
		return string(raw[1 : len(raw)-1])
	}
	var s string
	_ = json.Unmarshal(raw, &s) // str checked it
	return s
}

// fieldSet is the fields a struct type decodes, by their json names.
type fieldSet struct {
	byName map[string]field
}

// field is one field of a struct type: its type, and how deep it is
// promoted from embedded structs (the shallowest of a name wins).
type field struct {
	t     reflect.Type
	depth int
}

// fold returns the field whose name equals key but for letter case, as
// encoding/json folds names.
func (f *fieldSet) fold(key string) (string, bool) {
	for name := range f.byName {
		if strings.EqualFold(name, key) {
			return name, true
		}
	}
	return "", false
}

var (
	fieldSets   sync.Map // reflect.Type → *fieldSet
	unmarshaler = reflect.TypeFor[json.Unmarshaler]()
)

// describe returns the type whose fields or elements a value of type t
// has, as encoding/json decodes it: nil for a type that decodes itself.
func describe(t reflect.Type) reflect.Type {
	for t != nil {
		if reflect.PointerTo(t).Implements(unmarshaler) {
			return nil
		}
		if t.Kind() != reflect.Pointer {
			return t
		}
		t = t.Elem()
	}
	return nil
}

// fieldsOf returns the json fields of struct type t.
func fieldsOf(t reflect.Type) *fieldSet {
	if f, ok := fieldSets.Load(t); ok {
		return f.(*fieldSet)
	}
	f := &fieldSet{byName: map[string]field{}}
	f.add(t, 0)
	fieldSets.Store(t, f)
	return f
}

// add adds the fields of struct type t, promoted depth levels.
func (f *fieldSet) add(t reflect.Type, depth int) {
	for i := range t.NumField() {
		sf := t.Field(i)
		tag, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if tag == "-" {
			continue
		}
		if sf.Anonymous && tag == "" {
			if et := describe(sf.Type); et != nil && et.Kind() == reflect.Struct {
				f.add(et, depth+1)
				continue
			}
		}
		if !sf.IsExported() {
			continue
		}
		name := cmp.Or(tag, sf.Name)
		if old, taken := f.byName[name]; !taken || old.depth > depth {
			f.byName[name] = field{sf.Type, depth}
		}
	}
}
