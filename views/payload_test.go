package views

import "testing"

// Keys read as words; addresses, times and numbers are told from text.
func TestPayloadReadable(t *testing.T) {
	for key, want := range map[string]string{
		"vat_rate": "Vat rate", "accountAgeDays": "Account age days", "scan-url": "Scan url",
		"1": "1", "ID": "Id", "__": "__", "déjà_vu": "Déjà vu",
	} {
		if got := (Field{Key: key}).Label(); got != want {
			t.Errorf("Label(%q) = %q, want %q", key, got, want)
		}
	}
	fields := ParsePayload([]byte(`{"scan_url":"https://files.example.com/a.pdf","js":"javascript:alert(1)",` +
		`"text":"see https://x.example now","at":"2026-11-23T08:03:00Z","net":2273.80,"ok":true}`))
	kinds := map[string]string{}
	for _, f := range fields {
		kinds[f.Key] = f.Kind
	}
	want := map[string]string{"scan_url": "url", "js": "string", "text": "string", "at": "time", "net": "number", "ok": "bool"}
	for k, kind := range want {
		if kinds[k] != kind {
			t.Errorf("%s is a %q, want %q", k, kinds[k], kind)
		}
	}
}
