package numfmt

import (
	"errors"
	"testing"
)

func TestFromAcceptLanguage(t *testing.T) {
	for _, tc := range []struct {
		header string
		want   Locale
	}{
		{"", Locale{}},
		{"de-DE,de;q=0.9,en;q=0.8", Locale{Tag: "de-DE", Comma: true, Known: true}},
		{"en-US,en;q=0.9", Locale{Tag: "en-US", Known: true}},
		{"en;q=0.5, fr-FR", Locale{Tag: "fr-FR", Comma: true, Known: true}},
		{"de-CH", Locale{Tag: "de-CH", Known: true}},
		{"en-ZA", Locale{Tag: "en-ZA", Comma: true, Known: true}},
		{"*", Locale{}},
		{"<script>", Locale{}},
		{"pt-BR;q=0", Locale{}},
	} {
		if got := FromAcceptLanguage(tc.header); got != tc.want {
			t.Errorf("FromAcceptLanguage(%q) = %+v, want %+v", tc.header, got, tc.want)
		}
	}
}

func TestRead(t *testing.T) {
	en, de, none := Locale{Tag: "en", Known: true}, Locale{Tag: "de", Comma: true, Known: true}, Locale{}
	for _, tc := range []struct {
		name string
		l    Locale
		in   string
		want float64
		err  error
	}{
		{"plain", none, "1250", 1250, nil},
		{"negative", none, "-12.5", -12.5, nil},
		{"point decimals, comma thousands, any locale", de, "1,188.00", 1188, nil},
		{"comma decimals, point thousands, any locale", en, "1.188,00", 1188, nil},
		{"spaces between thousands", de, "1 188,5", 1188.5, nil},
		{"apostrophes between thousands", en, "1'188.50", 1188.5, nil},
		{"a comma before two digits is decimal", en, "12,50", 12.5, nil},
		{"a point before one digit is decimal", de, "12.5", 12.5, nil},
		{"thousands twice", en, "1.250.000", 1250000, nil},
		{"en reads 1,188 as thousands", en, "1,188", 1188, nil},
		{"de reads 1,188 as decimals", de, "1,188", 1.188, nil},
		{"de reads 1.188 as thousands", de, "1.188", 1188, nil},
		{"no locale: 1,188 is ambiguous", none, "1,188", 0, ErrAmbiguous},
		{"no locale: 1.188 is ambiguous", none, "1.188", 0, ErrAmbiguous},
		{"groups of three only", en, "11,88.00", 0, ErrNotNumber},
		{"the decimal separator once", en, "1.188,00,5", 0, ErrNotNumber},
		{"words", en, "a lot", 0, ErrNotNumber},
		{"empty", en, "", 0, ErrNotNumber},
		{"trailing separator", en, "12.", 0, ErrNotNumber},
		{"mixed groups", en, "1 188,000.5", 0, ErrNotNumber},
		{"too large", en, "1e999", 0, ErrNotNumber},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.l.Read(tc.in)
			if !errors.Is(err, tc.err) || err == nil && got != tc.want {
				t.Errorf("Read(%q) = %v, %v; want %v, %v", tc.in, got, err, tc.want, tc.err)
			}
		})
	}
}

func TestFormat(t *testing.T) {
	en, de := Locale{Known: true}, Locale{Comma: true, Known: true}
	for _, tc := range []struct {
		l        Locale
		in, want string
	}{
		{en, "1188.0", "1,188.00"}, {de, "1188.0", "1.188,00"}, {en, "-1234567.125", "-1,234,567.125"},
		{de, "12", "12"}, {en, "1e3", "1e3"}, {en, "abc", "abc"}, {Locale{}, "1188.5", "1188.50"},
	} {
		if got := tc.l.Format(tc.in); got != tc.want {
			t.Errorf("Format(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if en.Example() != "1,188.00" || de.Example() != "1.188,00" {
		t.Errorf("examples %q and %q", en.Example(), de.Example())
	}
}
