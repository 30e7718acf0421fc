// Package numfmt reads and writes numbers the way a viewer's locale does:
// the locale comes from the request's Accept-Language, and says whether
// decimals follow a comma (1.188,00) or a point (1,188.00). It is the one
// home of that choice: the pages show numbers in it, and the outcome forms
// read what people type with it.
package numfmt

import (
	"errors"
	"math"
	"strconv"
	"strings"
)

// Locale is how a viewer writes numbers.
type Locale struct {
	// Tag is the language tag the viewer asked for first ("de-CH"), for
	// the page's script; "" when none was asked for.
	Tag string
	// Comma reports whether the decimals follow a comma (1.188,00).
	Comma bool
	// Known reports whether the tag said which: without it, a number with
	// one separator before three digits (1,188 or 1.188) is refused.
	Known bool
}

// commaLanguages are the languages whose numbers take a decimal comma.
var commaLanguages = map[string]bool{
	"af": true, "az": true, "be": true, "bg": true, "bs": true, "ca": true, "cs": true, "da": true, "de": true,
	"el": true, "es": true, "et": true, "eu": true, "fi": true, "fo": true, "fr": true, "gl": true, "hr": true,
	"hu": true, "hy": true, "id": true, "is": true, "it": true, "ka": true, "kk": true, "ky": true, "lt": true,
	"lv": true, "mk": true, "mn": true, "nb": true, "nl": true, "nn": true, "no": true, "pl": true, "pt": true,
	"ro": true, "ru": true, "sk": true, "sl": true, "sq": true, "sr": true, "sv": true, "tr": true, "uk": true,
	"uz": true, "vi": true,
}

// pointRegions are the regions whose numbers take a decimal point though
// their language mostly takes a comma (de-CH), and commaRegions the
// reverse (en-ZA).
var (
	pointRegions = map[string]bool{"CH": true, "LI": true, "MX": true, "US": true, "PR": true, "GT": true, "HN": true, "NI": true, "PA": true, "SV": true, "DO": true}
	commaRegions = map[string]bool{"ZA": true}
)

// FromAcceptLanguage is the locale of an Accept-Language header: its
// first language by preference (q), "en" rules when it names none.
func FromAcceptLanguage(header string) Locale {
	best, bestQ := "", -1.0
	for _, part := range strings.Split(header, ",") {
		tag, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		tag = strings.TrimSpace(tag)
		q := 1.0
		if v, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			if n, err := strconv.ParseFloat(v, 64); err == nil {
				q = n
			}
		}
		if tag == "" || tag == "*" || !validTag(tag) || q <= bestQ || q <= 0 {
			continue
		}
		best, bestQ = tag, q
	}
	if best == "" {
		return Locale{}
	}
	lang, region, _ := strings.Cut(best, "-")
	lang = strings.ToLower(lang)
	region, _, _ = strings.Cut(region, "-")
	region = strings.ToUpper(region)
	comma := commaLanguages[lang]
	if pointRegions[region] {
		comma = false
	} else if commaRegions[region] {
		comma = true
	}
	return Locale{Tag: best, Comma: comma, Known: true}
}

// validTag reports whether s looks like a language tag: letters, digits
// and hyphens, at most 35 of them, starting with a letter.
func validTag(s string) bool {
	if len(s) > 35 || s[0] < 'A' || s[0] > 'z' {
		return false
	}
	for _, r := range s {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

// separators are the locale's decimal and group separators.
func (l Locale) separators() (decimal, group byte) {
	if l.Comma {
		return ',', '.'
	}
	return '.', ','
}

// Example is an amount as the locale writes it: "1,188.00" or "1.188,00".
func (l Locale) Example() string { return l.Format("1188.00") }

// Format writes a JSON number (or any plain decimal: -1188.5) as the
// locale does, its thousands grouped (not without a known locale, where
// 1,188 would read two ways), a single decimal padded to two (an amount:
// 1,188.50); what is not such a number comes back as it was.
func (l Locale) Format(plain string) string {
	dec, grp := l.separators()
	sign := ""
	if strings.HasPrefix(plain, "-") {
		sign, plain = "-", plain[1:]
	}
	whole, frac, hasFrac := strings.Cut(plain, ".")
	if whole == "" || strings.Trim(whole, "0123456789") != "" || strings.Trim(frac, "0123456789") != "" || hasFrac && frac == "" {
		return sign + plain
	}
	var b strings.Builder
	b.WriteString(sign)
	for i := range len(whole) {
		if l.Known && i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(grp)
		}
		b.WriteByte(whole[i])
	}
	if hasFrac {
		if len(frac) == 1 {
			frac += "0"
		}
		b.WriteByte(dec)
		b.WriteString(frac)
	}
	return b.String()
}

// ErrNotNumber is a text that is no number at all; ErrAmbiguous, one that
// could be read two ways (1,188 without a locale that says which).
var (
	ErrNotNumber = errors.New("not a number")
	ErrAmbiguous = errors.New("ambiguous number")
)

// Read reads a number as a person types it, with or without thousands
// separators: "1250", "-12.5", "1,188.00" and "1.188,00" whatever the
// locale (with both separators, the last one is the decimal one), "1 188"
// with spaces between thousands. With one kind of separator:
//   - used more than once, it separates thousands (1,250,000);
//   - used once before other than three digits, it is the decimal one
//     (12,5 and 12.50);
//   - used once before three digits (1,188 or 1.188), the locale says
//     which; without one, it is ErrAmbiguous.
//
// Thousands must come in groups of three. What is not a finite number is
// ErrNotNumber.
func (l Locale) Read(s string) (float64, error) {
	s = strings.TrimSpace(s)
	s = strings.NewReplacer("\u00a0", " ", "\u202f", " ", "'", " ", "’", " ").Replace(s)
	sign := ""
	if s != "" && (s[0] == '-' || s[0] == '+') {
		sign, s = s[:1], strings.TrimSpace(s[1:])
	}
	if s == "" || strings.Trim(s, "0123456789., ") != "" {
		return 0, ErrNotNumber
	}
	commas, points := strings.Count(s, ","), strings.Count(s, ".")
	var decimal, group string
	switch {
	case commas > 0 && points > 0:
		decimal = s[strings.LastIndexAny(s, ",."):][:1]
		group = map[string]string{",": ".", ".": ","}[decimal]
		if strings.Count(s, decimal) > 1 {
			return 0, ErrNotNumber
		}
	case commas+points == 0:
	case commas > 1 || points > 1:
		group = map[bool]string{true: ",", false: "."}[commas > 1]
	default:
		sep := map[bool]string{true: ",", false: "."}[commas == 1]
		after := s[strings.Index(s, sep)+1:]
		switch {
		case len(after) != 3 || strings.ContainsRune(after, ' '):
			decimal = sep
		case !l.Known:
			return 0, ErrAmbiguous
		case (sep == ",") == l.Comma:
			decimal = sep
		default:
			group = sep
		}
	}
	whole, frac := s, ""
	if decimal != "" {
		i := strings.LastIndex(s, decimal)
		whole, frac = s[:i], s[i+1:]
		if frac == "" || strings.ContainsAny(frac, " ,.") {
			return 0, ErrNotNumber
		}
	}
	if group != "" && strings.Contains(whole, " ") {
		return 0, ErrNotNumber
	}
	if !grouped(whole, group) {
		return 0, ErrNotNumber
	}
	digits := strings.NewReplacer(",", "", ".", "", " ", "").Replace(whole)
	if frac != "" {
		digits += "." + frac
	}
	n, err := strconv.ParseFloat(sign+digits, 64)
	if err != nil || math.IsInf(n, 0) || math.IsNaN(n) {
		return 0, ErrNotNumber
	}
	return n, nil
}

// grouped reports whether whole is digits in groups of three after the
// first (1 to 3 digits), split by sep (or by spaces), or digits alone.
func grouped(whole, sep string) bool {
	if sep == "" {
		sep = " "
	}
	parts := strings.Split(whole, sep)
	if len(parts) == 1 {
		return whole != "" && strings.Trim(whole, "0123456789") == ""
	}
	for i, p := range parts {
		if p == "" || strings.Trim(p, "0123456789") != "" || len(p) > 3 || i > 0 && len(p) != 3 {
			return false
		}
	}
	return true
}
