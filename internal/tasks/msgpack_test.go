package tasks

import (
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Metadata packed by the scripts' pack_meta, every field set and each to
// a value of its own, reads back into the same fields in Go; and the
// scripts' unpack_meta reads back what pack_meta packed. Both are made
// from metaFields, so a field put in the wrong place, or read into the
// wrong field of meta, is told here.
func TestMetaLayout(t *testing.T) {
	t.Parallel()
	rdb := backends[0].rdb
	ctx := t.Context()
	// The job below as lib.lua's job table, and as a Lua expression.
	const job = `{state = 'reserved', title = 'Call back', priority = 7, attempts = 2,
  max_attempts = 9, lease_seconds = 600, created_at = 1000, run_at = 2000, rank = -1.5,
  reserved_by = 'ann', reserved_at = 3000, deadline = 4000, token = 'tok', extensions = 3,
  finished_at = 5000, last_error = 'no answer', idempotency_key = 'idem-1',
  skipped_by = {'bob', 'cy'}, batch = '01BATCH', claim_key = 'key-1', hist_n = 11,
  due_at = 9000, warn_at = 8000, moved_from = 'first', batch_from = '01FROM',
  skills = 'de:2', route_to = 'ann\nbo', fallback_at = 7000, overlap = 3, answers = 2,
  review = 'sample', author = 'dee', seats = {'bob\n1\n2\n3\n0\n'}, seated = 'r~|x', ended = {'t\nann\n9\nann'}}`
	code := "#!lua name=metalayout_test\n" + luaConstants() + `
redis.register_function('pack', function(KEYS, ARGV)
  return pack_meta(` + job + `) .. ARGV[1]
end)
redis.register_function('pack_plain', function()
  local m = ` + job + `
  m.due_at, m.warn_at, m.moved_from, m.batch_from = nil, nil, nil, nil
  m.skills, m.route_to, m.fallback_at, m.overlap, m.answers = nil, nil, nil, nil, nil
  m.review, m.author, m.seats, m.seated, m.ended = nil, nil, nil, nil, nil
  return pack_meta(m)
end)
redis.register_function('unpack', function(KEYS, ARGV)
  local next_at, m = unpack_meta(ARGV[1])
  local out = {tostring(next_at)}
  for _, name in ipairs({` + quotedMetaNames() + `}) do
    local v = m[name]
    if type(v) == 'table' then v = table.concat(v, ',') end
    out[#out + 1] = name .. '=' .. tostring(v)
  end
  return out
end)
`
	if err := rdb.FunctionLoadReplace(ctx, code).Err(); err != nil {
		t.Fatal(err)
	}
	raw, err := rdb.FCall(ctx, "pack", nil, "HISTORY").Text()
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeMeta(raw)
	if err != nil {
		t.Fatal(err)
	}
	want := meta{
		State: StateReserved, Title: "Call back", Priority: 7, Attempts: 2, MaxAttempts: 9,
		LeaseSeconds: 600, CreatedAt: 1000, RunAt: 2000, Rank: -1.5, ReservedBy: "ann",
		ReservedAt: 3000, Deadline: 4000, Token: "tok", Extensions: 3, FinishedAt: 5000,
		LastError: "no answer", IdempotencyKey: "idem-1", SkippedBy: []string{"bob", "cy"},
		Batch: "01BATCH", ClaimKey: "key-1", HistoryCount: 11, History: "HISTORY",
		DueAt: 9000, WarnAt: 8000, MovedFrom: "first", BatchFrom: "01FROM",
		Skills: "de:2", RouteTo: "ann\nbo", FallbackAt: 7000, Overlap: 3, Answers: 2,
		Review: "sample", Author: "dee", Seats: []string{"bob\n1\n2\n3\n0\n"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decodeMeta of pack_meta's metadata =\n%+v\nwant\n%+v", got, want)
	}

	back, err := rdb.FCall(ctx, "unpack", nil, raw).StringSlice()
	if err != nil {
		t.Fatal(err)
	}
	// First where the history starts, after the fields (cmsgpack's offset).
	wantBack := []string{strconv.Itoa(len(raw) - len("HISTORY")), "state=reserved", "title=Call back",
		"priority=7", "attempts=2", "max_attempts=9", "lease_seconds=600", "created_at=1000",
		"run_at=2000", "rank=-1.5", "reserved_by=ann", "reserved_at=3000", "deadline=4000",
		"token=tok", "extensions=3", "finished_at=5000", "last_error=no answer",
		"idempotency_key=idem-1", "skipped_by=bob,cy", "batch=01BATCH", "claim_key=key-1", "hist_n=11",
		"due_at=9000", "warn_at=8000", "moved_from=first", "batch_from=01FROM",
		"skills=de:2", "route_to=ann\nbo", "fallback_at=7000", "overlap=3", "answers=2",
		"review=sample", "author=dee", "seats=bob\n1\n2\n3\n0\n", "seated=r~|x", "ended=t\nann\n9\nann"}
	if !slices.Equal(back, wantBack) {
		t.Errorf("unpack_meta of pack_meta's metadata =\n%q\nwant\n%q", back, wantBack)
	}
	// A job without the fields added since format 2 stores none of them,
	// not even as nil: its count says so.
	plain, err := rdb.FCall(ctx, "pack_plain", nil).Text()
	if err != nil {
		t.Fatal(err)
	}
	if plain[0] != format2Fields {
		t.Errorf("a job without due times is stored with %d fields, want %d", plain[0], format2Fields)
	}
	if m, err := decodeMeta(plain); err != nil || m.Title != "Call back" || m.DueAt != 0 || m.HistoryCount != 11 {
		t.Errorf("decodeMeta of it = %+v, %v", m, err)
	}
}

// A record stored before fields were added reads them as absent, one
// stored by a later version that added some has those skipped, and one of
// storage format 2 (no count of its fields) reads as it was: in Go and in
// the scripts alike, each with its history after the fields.
func TestMetaOfOtherVersions(t *testing.T) {
	t.Parallel()
	rdb := backends[0].rdb
	ctx := t.Context()
	// The fields of a job as format 2 stored them, nil where absent.
	const fields = `'ready', 'Call back', 7, 0, 5, 300, 1000, nil, -1.5, nil, nil, nil, nil, nil,
    nil, nil, nil, {'bob'}, nil, nil, 2`
	code := "#!lua name=metaversions_test\n" + luaConstants() + `
local FORMATS = {
  format2 = function() return cmsgpack.pack(` + fields + `) end,
  fewer = function() return cmsgpack.pack(META_FORMAT2, ` + fields + `) end,
  more = function() return cmsgpack.pack(META + 2, ` + fields + `, 9000, 8000, 'first', '01FROM', 'de:2', 'ann', 7000, 3, 2, 'sample', 'dee', {'s'}, 'r~|x', {'e'}, {'x', {1}}, 'later') end,
}
redis.register_function('versions_record', function(KEYS, ARGV)
  return FORMATS[ARGV[1]]() .. ARGV[2]
end)
redis.register_function('versions_unpack', function(KEYS, ARGV)
  local next_at, m = unpack_meta(ARGV[1])
  return {tostring(next_at), m.state, m.title, tostring(m.hist_n), table.concat(m.skipped_by, ','),
    tostring(m.due_at), tostring(m.warn_at)}
end)
`
	if err := rdb.FunctionLoadReplace(ctx, code).Err(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		format           string
		dueAt, warnAt    int64
		movedFrom, batch string
	}{{"format2", 0, 0, "", ""}, {"fewer", 0, 0, "", ""}, {"more", 9000, 8000, "first", "01FROM"}} {
		raw, err := rdb.FCall(ctx, "versions_record", nil, c.format, "HISTORY").Text()
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeMeta(raw)
		if err != nil {
			t.Fatalf("%s: %v", c.format, err)
		}
		want := meta{
			State: StateReady, Title: "Call back", Priority: 7, MaxAttempts: 5, LeaseSeconds: 300,
			CreatedAt: 1000, RunAt: 1000, Rank: -1.5, SkippedBy: []string{"bob"}, HistoryCount: 2,
			History: "HISTORY", DueAt: c.dueAt, WarnAt: c.warnAt, MovedFrom: c.movedFrom, BatchFrom: c.batch,
		}
		if c.format == "more" {
			want.Skills, want.RouteTo, want.FallbackAt, want.Overlap, want.Answers = "de:2", "ann", 7000, 3, 2
			want.Review, want.Author, want.Seats = "sample", "dee", []string{"s"}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: decodeMeta =\n%+v\nwant\n%+v", c.format, got, want)
		}
		back, err := rdb.FCall(ctx, "versions_unpack", nil, raw).StringSlice()
		if err != nil {
			t.Fatal(err)
		}
		dueAt, warnAt := "nil", "nil"
		if c.dueAt != 0 {
			dueAt, warnAt = strconv.FormatInt(c.dueAt, 10), strconv.FormatInt(c.warnAt, 10)
		}
		wantBack := []string{strconv.Itoa(len(raw) - len("HISTORY")), "ready", "Call back", "2", "bob", dueAt, warnAt}
		if !slices.Equal(back, wantBack) {
			t.Errorf("%s: unpack_meta =\n%q\nwant\n%q", c.format, back, wantBack)
		}
	}
}

// quotedMetaNames is metaFields' names as a Lua list's items.
func quotedMetaNames() string {
	names := make([]string, len(metaFields))
	for i, f := range metaFields {
		names[i] = "'" + f.name + "'"
	}
	return strings.Join(names, ", ")
}

// The scripts use, on a job's table, the fields of metaFields and only
// those (besides history and raw, which load keeps beside them): a field
// the scripts set that metaFields lacks would not be stored, one they
// never use is not theirs.
func TestMetaFieldsUsed(t *testing.T) {
	t.Parallel()
	field := regexp.MustCompile(`\b(?:m|LOADED\[\w+\])\.(\w+)`)
	used := map[string]bool{}
	for file := range library.names {
		for _, m := range field.FindAllStringSubmatch(luaCode(t, file), -1) {
			used[m[1]] = true
		}
	}
	for _, m := range field.FindAllStringSubmatch(luaCode(t, "lib"), -1) {
		used[m[1]] = true
	}
	// enqueue.lua makes a job's table whole, with a constructor.
	for _, m := range regexp.MustCompile(`(\w+) = `).FindAllStringSubmatch(jobConstructor(t), -1) {
		used[m[1]] = true
	}
	delete(used, "history")
	delete(used, "raw")
	var names []string
	for _, f := range metaFields {
		names = append(names, f.name)
		if !used[f.name] {
			t.Errorf("metaFields has %q, which no script uses", f.name)
		}
	}
	for name := range used {
		if !slices.Contains(names, name) {
			t.Errorf("the scripts use the job field %q, which metaFields lacks: it would not be stored", name)
		}
	}
}

// jobConstructor returns the table constructor of enqueue.lua's new job.
func jobConstructor(t *testing.T) string {
	t.Helper()
	m := regexp.MustCompile(`(?s)local m = \{(.*?)\n    \}`).FindStringSubmatch(luaCode(t, "enqueue"))
	if m == nil {
		t.Fatal("enqueue.lua makes no job table")
	}
	return m[1]
}
