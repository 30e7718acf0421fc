package tasks

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// refused checks that err is a *ValidationError of field whose message
// has want.
func refused(t *testing.T, what string, err error, field, want string) {
	t.Helper()
	var v *ValidationError
	if !errors.As(err, &v) || !errors.Is(err, ErrInvalid) || v.Field != field || !strings.Contains(v.Message, want) {
		t.Errorf("%s: error %v, want field %s refused with %q", what, err, field, want)
	}
}

// spoofing lists characters a title refuses, each with how it misleads.
var spoofing = []struct {
	r    rune
	what string
}{
	{0x202A, "left-to-right embedding"},
	{0x202B, "right-to-left embedding"},
	{0x202C, "pop directional formatting"},
	{0x202D, "left-to-right override"},
	{0x202E, "right-to-left override"},
	{0x2066, "left-to-right isolate"},
	{0x2067, "right-to-left isolate"},
	{0x2068, "first strong isolate"},
	{0x2069, "pop directional isolate"},
	{0x200E, "left-to-right mark"},
	{0x200F, "right-to-left mark"},
	{0x061C, "Arabic letter mark"},
	{0x200B, "zero-width space"},
	{0x200C, "zero-width non-joiner"},
	{0x200D, "zero-width joiner"},
	{0x2060, "word joiner"},
	{0x2062, "invisible times"},
	{0xFEFF, "zero-width no-break space (BOM)"},
	{0x00AD, "soft hyphen"},
	{0xE0041, "tag letter A"},
	{0x2028, "line separator"},
	{0x2029, "paragraph separator"},
}

func TestTitlesRefuseInvisibleFormatting(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		for _, sp := range spoofing {
			// "Approve refund of $10" that reads otherwise (an override
			// turns "10" around), or differs invisibly from an honest one.
			title := "Approve refund of $" + string(sp.r) + "10"
			want := fmt.Sprintf("%U", sp.r)
			_, err := e.store.Enqueue(e.ctx, e.queue, "pat", []NewJob{{Title: title}})
			refused(t, sp.what+" in a job title", err, "title", want)
			_, _, err = e.store.CreateBatch(e.ctx, e.queue, "pat", NewBatch{Title: title, Jobs: []NewJob{{Title: "job"}}})
			refused(t, sp.what+" in a batch title", err, "title", want)
			_, _, err = e.store.CreateBatch(e.ctx, e.queue, "pat", NewBatch{Title: "batch", Jobs: []NewJob{{Title: "ok"}, {Title: title}}})
			refused(t, sp.what+" in a batch's job title", err, "jobs[1].title", want)
		}
		if s := e.stats(); s != (Stats{Queue: e.queue}) {
			t.Fatalf("refused titles changed the queue: %+v", s)
		}
		if list, err := e.store.ListBatches(e.ctx, e.queue, 0); err != nil || len(list) != 0 {
			t.Fatalf("refused batch titles made batches: %v %v", list, err)
		}

		// Text in any script, emoji and long words are titles like any.
		for _, title := range []string{
			"مراجعة الفاتورة رقم 4711", "בדיקת חשבונית 4711", "请检查发票 4711", "Prüfe Rechnung Nr. 4711",
			"Check 🧾 invoice 4711 ✅", "Check Donaudampfschifffahrtsgesellschaftskapitänsmütze" + strings.Repeat("x", 120),
		} {
			out, err := e.store.Enqueue(e.ctx, e.queue, "pat", []NewJob{{Title: title}})
			if err != nil {
				t.Fatalf("title %q: %v", title, err)
			}
			if got := e.get(out[0].Job.ID).Title; got != title {
				t.Fatalf("title stored as %q, want %q", got, title)
			}
		}
	})
}

func TestTextMustBeUTF8(t *testing.T) {
	eachBackend(t, func(t *testing.T, e *env) {
		// Payloads and results are JSON objects of valid UTF-8 text (escapes
		// included) with each key once per object; these are not.
		bad := []struct {
			name, json, field, want string
		}{
			{"invalid UTF-8", "{\"note\":\"caf\xe9\"}", ".note", "must be valid UTF-8"},
			{"invalid UTF-8 in a key", "{\"n\xffte\":1}", "", "must be valid UTF-8"},
			{"a UTF-8 encoded surrogate", "{\"a\":[\"\xed\xa0\xbd\"]}", ".a[0]", "must be valid UTF-8"},
			{"a lone escaped surrogate", `{"emoji":"\ud83d"}`, ".emoji", `\ud83d is the first half`},
			{"a duplicate key", `{"amount":10,"amount":1000}`, ".amount", "appears twice"},
			{"a duplicate key deep down", `{"lines":[{"sku":"a"},{"sku":"b","sku":"c"}]}`, ".lines[1].sku", "appears twice"},
		}
		for _, b := range bad {
			_, err := e.store.Enqueue(e.ctx, e.queue, "pat", []NewJob{{Title: "x", Payload: json.RawMessage(b.json)}})
			refused(t, "payload with "+b.name, err, "payload"+b.field, b.want)
		}
		if s := e.stats(); s != (Stats{Queue: e.queue}) {
			t.Fatalf("refused payloads changed the queue: %+v", s)
		}

		j := e.add("review", 50)
		r := e.claim("ann")
		for _, b := range bad {
			_, err := e.store.Complete(e.ctx, j.ID, r.Hold(), json.RawMessage(b.json))
			refused(t, "result with "+b.name, err, "result"+b.field, b.want)
		}
		_, err := e.store.Fail(e.ctx, j.ID, r.Hold(), "unreadable \xff scan")
		refused(t, "reason not UTF-8", err, "reason", "UTF-8")
		if got := e.get(j.ID); got.State != StateReserved || got.Result != nil || got.LastError != "" {
			t.Fatalf("refused results and reasons changed the job: %+v", got)
		}

		// Names of who acts, as the engine stores them.
		_, err = e.store.Enqueue(e.ctx, e.queue, "p\xffat", []NewJob{{Title: "x"}})
		refused(t, "producer name not UTF-8", err, "actor", "UTF-8")
		_, _, err = e.store.Cancel(e.ctx, j.ID, "s\xe9m", true)
		refused(t, "canceling supervisor's name not UTF-8", err, "actor", "UTF-8")
		_, _, err = e.store.Requeue(e.ctx, j.ID, "")
		refused(t, "requeue by nobody", err, "actor", "UTF-8")
		_, _, err = e.store.CreateBatch(e.ctx, e.queue, "pat", NewBatch{Title: "b", Open: true})
		if err != nil {
			t.Fatal(err)
		}
		batches, _ := e.store.ListBatches(e.ctx, e.queue, 0)
		_, err = e.store.CancelBatch(e.ctx, batches[0].ID, "s\xe9m")
		refused(t, "batch canceled by a name not UTF-8", err, "actor", "UTF-8")
		if got := e.get(j.ID); got.State != StateReserved {
			t.Fatalf("refused actors changed the job: %+v", got)
		}
		if b, _ := e.store.GetBatch(e.ctx, batches[0].ID); b.State != BatchOpen {
			t.Fatalf("a refused actor canceled the batch: %+v", b)
		}

		// Hostile but valid text is data: stored and given back as sent.
		payload := `{"note":"\u202eevil\u202c ` + "\u202efdp.exe\u202c 🧾 مرحبا" + ` \ud83d\ude00","long":"` + strings.Repeat("w", 5000) + `"}`
		out, err := e.store.Enqueue(e.ctx, e.queue, "pat", []NewJob{{Title: "x", Payload: json.RawMessage(payload)}})
		if err != nil {
			t.Fatal(err)
		}
		if got := e.get(out[0].Job.ID).Payload; string(got) != payload {
			t.Fatalf("payload stored as %s, want %s", got, payload)
		}
		reason := "Scan unreadable \u202e — مرحبا 🧾"
		if _, err := e.store.Fail(e.ctx, j.ID, r.Hold(), reason); err != nil {
			t.Fatal(err)
		}
		if got := e.get(j.ID); got.LastError != reason {
			t.Fatalf("reason stored as %q, want %q", got.LastError, reason)
		}
	})
}
