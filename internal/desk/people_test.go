package desk_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"claimdesk/internal/audit"
	"claimdesk/internal/desk"
	"claimdesk/internal/users"
)

// reload reads the named user from the people.
func (f *fixture) reload(name string) users.User {
	f.t.Helper()
	u, err := f.users.Reload(f.ctx, name)
	if err != nil {
		f.t.Fatal(err)
	}
	return u
}

func TestAddPerson(t *testing.T) {
	f := newFixture(t)
	ann := users.User{Name: fmt.Sprintf("ann%d", seq.Add(1)), Role: users.Operator, Queues: []string{f.queue}}
	for _, who := range f.nonSupervisors() {
		refused(t, who.Name()+" adds a person", f.desk.AddPerson(f.ctx, who, ann, "password-ann"), desk.ErrForbidden)
	}
	refused(t, "an operator without a password", f.desk.AddPerson(f.ctx, desk.Person(f.super), ann, ""), users.ErrInvalid)
	if _, err := f.users.Reload(f.ctx, ann.Name); !errors.Is(err, users.ErrNotFound) {
		t.Fatalf("refused adds: %v, want nobody added", err)
	}
	f.unaudited(ann.Name)

	if err := f.desk.AddPerson(f.ctx, desk.Person(f.super), ann, "password-ann"); err != nil {
		t.Fatal(err)
	}
	if u := f.reload(ann.Name); u.Role != users.Operator || !slices.Equal(u.Queues, ann.Queues) {
		t.Errorf("ann added: %+v", u)
	}
	f.audited(ann.Name, audit.UserAdded, f.super.Name, "role operator, queues "+f.queue+", new password")
	refused(t, "a person added twice", f.desk.AddPerson(f.ctx, desk.Person(f.super), ann, "password-ann"), users.ErrExists)
	if n := len(f.audits(ann.Name)); n != 1 {
		t.Errorf("%d audit entries about ann, want the one of her adding", n)
	}

	bot := users.User{Name: fmt.Sprintf("bot%d", seq.Add(1)), Role: users.Producer}
	if err := f.desk.AddPerson(f.ctx, desk.CommandLine, bot, ""); err != nil {
		t.Fatal(err)
	}
	f.audited(bot.Name, audit.UserAdded, audit.CommandLine, "role producer, no queues")
}

func TestChangePerson(t *testing.T) {
	f := newFixture(t)
	super, op := users.Supervisor, users.Operator
	me := desk.Person(f.store(f.super))
	ann := f.store(f.person(users.Operator, f.queue))
	granted := []string{f.queue, "elsewhere"}
	for _, who := range f.nonSupervisors() {
		_, err := f.desk.ChangePerson(f.ctx, who, ann.Name, desk.Change{Queues: &granted})
		refused(t, who.Name()+" changes a person", err, desk.ErrForbidden)
	}
	_, err := f.desk.ChangePerson(f.ctx, me, f.super.Name, desk.Change{Role: &op})
	refused(t, "a supervisor changes their own role", err, desk.ErrForbidden)
	_, err = f.desk.ChangePerson(f.ctx, me, ann.Name, desk.Change{Queues: &[]string{"Not A Queue"}})
	refused(t, "a grant of no queue's name", err, users.ErrInvalid)
	_, err = f.desk.ChangePerson(f.ctx, me, "nobody-"+ann.Name, desk.Change{Queues: &granted})
	refused(t, "change nobody", err, users.ErrNotFound)
	if u := f.reload(ann.Name); !slices.Equal(u.Queues, []string{f.queue}) {
		t.Fatalf("refused changes changed ann: %+v", u)
	}
	if u := f.reload(f.super.Name); u.Role != users.Supervisor {
		t.Fatalf("the supervisor changed their own role: %+v", u)
	}
	f.unaudited(ann.Name)
	f.unaudited(f.super.Name)

	u, err := f.desk.ChangePerson(f.ctx, me, ann.Name, desk.Change{Queues: &granted, Password: "a-new-password"})
	if err != nil || !slices.Equal(u.Queues, granted) || u.Role != users.Operator {
		t.Fatalf("change ann's grants and password: %+v, %v", u, err)
	}
	if got := f.reload(ann.Name); !slices.Equal(got.Queues, granted) || got.Epoch == ann.Epoch {
		t.Errorf("ann changed: %+v, want her grants and a new epoch for her new password", got)
	}
	f.audited(ann.Name, audit.UserChanged, f.super.Name, "role operator, queues "+f.queue+",elsewhere, new password")
	u, err = f.desk.ChangePerson(f.ctx, desk.CommandLine, ann.Name, desk.Change{Role: &super})
	if err != nil || u.Role != users.Supervisor || f.reload(ann.Name).Role != users.Supervisor {
		t.Fatalf("the command line makes ann a supervisor: %+v, %v", u, err)
	}
	f.audited(ann.Name, audit.UserChanged, audit.CommandLine, "role supervisor, queues "+f.queue+",elsewhere")
	// A supervisor's own change that keeps their role is theirs to make.
	if _, err := f.desk.ChangePerson(f.ctx, me, f.super.Name, desk.Change{Role: &super}); err != nil {
		t.Errorf("a supervisor's own change that keeps the role: %v", err)
	}
	f.audited(f.super.Name, audit.UserChanged, f.super.Name, "role supervisor, no queues")
}

func TestDisableAndEnable(t *testing.T) {
	f := newFixture(t)
	me := desk.Person(f.store(f.super))
	ann := f.store(f.person(users.Operator, f.queue))
	for _, who := range f.nonSupervisors() {
		_, err := f.desk.Disable(f.ctx, who, ann.Name)
		refused(t, who.Name()+" disables a person", err, desk.ErrForbidden)
		_, err = f.desk.Enable(f.ctx, who, ann.Name)
		refused(t, who.Name()+" enables a person", err, desk.ErrForbidden)
	}
	_, err := f.desk.Disable(f.ctx, me, f.super.Name)
	refused(t, "a supervisor disables themselves", err, desk.ErrForbidden)
	_, err = f.desk.Disable(f.ctx, me, "nobody-"+ann.Name)
	refused(t, "disable nobody", err, users.ErrNotFound)
	_, err = f.desk.Enable(f.ctx, me, "nobody-"+ann.Name)
	refused(t, "enable nobody", err, users.ErrNotFound)
	if f.reload(ann.Name).Disabled || f.reload(f.super.Name).Disabled {
		t.Fatal("refused disables disabled someone")
	}
	f.unaudited(ann.Name)
	f.unaudited(f.super.Name)

	u, err := f.desk.Disable(f.ctx, me, ann.Name)
	if err != nil || !u.Disabled || !f.reload(ann.Name).Disabled {
		t.Fatalf("disable ann: %+v, %v", u, err)
	}
	f.audited(ann.Name, audit.UserDisabled, f.super.Name, "")
	u, err = f.desk.Enable(f.ctx, desk.CommandLine, ann.Name)
	if err != nil || u.Disabled || f.reload(ann.Name).Disabled {
		t.Fatalf("enable ann: %+v, %v", u, err)
	}
	f.audited(ann.Name, audit.UserEnabled, audit.CommandLine, "")
	// The command line may disable anyone.
	if u, err := f.desk.Disable(f.ctx, desk.CommandLine, f.super.Name); err != nil || !u.Disabled {
		t.Fatalf("the command line disables the supervisor: %+v, %v", u, err)
	}
}

func TestUnlock(t *testing.T) {
	f := newFixture(t)
	ann := f.store(f.person(users.Operator, f.queue))
	login := func(i int, password string) error {
		_, err := f.users.Login(f.ctx, ann.Name, password, fmt.Sprint("203.0.113.", i))
		return err
	}
	// Failures from many addresses make the account wait between tries.
	for i := 0; ; i++ {
		err := login(i, "wrong-guess")
		if errors.Is(err, users.ErrThrottled) {
			break
		}
		if !errors.Is(err, users.ErrBadCredentials) || i > 20 {
			t.Fatalf("failed login %d: %v, want the account to wait within 20", i, err)
		}
	}
	for _, who := range f.nonSupervisors() {
		refused(t, who.Name()+" unlocks", f.desk.Unlock(f.ctx, who, ann.Name), desk.ErrForbidden)
	}
	refused(t, "unlock nobody", f.desk.Unlock(f.ctx, desk.Person(f.super), "nobody-"+ann.Name), users.ErrNotFound)
	refused(t, "a login after refused unlocks", login(100, "password-"+ann.Name), users.ErrThrottled)
	f.unaudited(ann.Name)

	if err := f.desk.Unlock(f.ctx, desk.Person(f.super), ann.Name); err != nil {
		t.Fatal(err)
	}
	if err := login(101, "password-"+ann.Name); err != nil {
		t.Errorf("a login after the unlock: %v", err)
	}
	f.audited(ann.Name, audit.UserUnlocked, f.super.Name, "")
}

func TestNewToken(t *testing.T) {
	f := newFixture(t)
	bot := f.store(f.producer)
	for _, who := range f.nonSupervisors() {
		_, err := f.desk.NewToken(f.ctx, who, bot.Name)
		refused(t, who.Name()+" makes a token", err, desk.ErrForbidden)
	}
	_, err := f.desk.NewToken(f.ctx, desk.Person(f.super), "nobody-"+bot.Name)
	refused(t, "a token for nobody", err, users.ErrNotFound)
	f.unaudited(bot.Name)

	token, err := f.desk.NewToken(f.ctx, desk.Person(f.super), bot.Name)
	if err != nil {
		t.Fatal(err)
	}
	if u, err := f.users.ByToken(f.ctx, token); err != nil || u.Name != bot.Name {
		t.Errorf("the token made is %+v's (%v), want %s's", u, err, bot.Name)
	}
	f.audited(bot.Name, audit.TokenAdded, f.super.Name, "token "+users.TokenID(token))
	for _, e := range f.audits(bot.Name) {
		if strings.Contains(e.Detail, token) || strings.Contains(e.Target, token) {
			t.Errorf("the audit log holds the token: %+v", e)
		}
	}
}

func TestTokens(t *testing.T) {
	f := newFixture(t)
	bot := f.store(f.producer)
	token, err := f.desk.NewToken(f.ctx, desk.CommandLine, bot.Name)
	if err != nil {
		t.Fatal(err)
	}
	for _, who := range f.nonSupervisors() {
		_, err := f.desk.Tokens(f.ctx, who, bot.Name)
		refused(t, who.Name()+" lists tokens", err, desk.ErrForbidden)
	}
	ts, err := f.desk.Tokens(f.ctx, desk.Person(f.super), bot.Name)
	if err != nil || len(ts) != 1 || ts[0].ID != users.TokenID(token) {
		t.Fatalf("tokens: %+v, %v; want the one made", ts, err)
	}
	_, err = f.desk.Tokens(f.ctx, desk.Person(f.super), "nobody-"+bot.Name)
	refused(t, "the tokens of nobody", err, users.ErrNotFound)
}

// A token's revocation is recorded alike from a page and from the command
// line, which knows only its id: the user as the target, the id in the
// detail, as its making is.
func TestRevokeToken(t *testing.T) {
	f := newFixture(t)
	bot := f.store(f.producer)
	other := f.store(f.stranger)
	var ids []string
	for range 2 {
		token, err := f.desk.NewToken(f.ctx, desk.CommandLine, bot.Name)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, users.TokenID(token))
	}
	for _, who := range f.nonSupervisors() {
		refused(t, who.Name()+" revokes a token", f.desk.RevokeToken(f.ctx, who, bot.Name, ids[0]), desk.ErrForbidden)
	}
	refused(t, "revoke a token as another's", f.desk.RevokeToken(f.ctx, desk.Person(f.super), other.Name, ids[0]), users.ErrTokenNotFound)
	if ts, _ := f.users.Tokens(f.ctx, bot.Name); len(ts) != 2 {
		t.Fatalf("refused revocations left %d tokens, want 2", len(ts))
	}
	f.unaudited(other.Name)

	for i, who := range []desk.Actor{desk.Person(f.super), desk.CommandLine} {
		name := bot.Name
		if i == 1 {
			name = "" // the command line knows only the id
		}
		if err := f.desk.RevokeToken(f.ctx, who, name, ids[i]); err != nil {
			t.Fatalf("revoke as %s: %v", who.Name(), err)
		}
		f.audited(bot.Name, audit.TokenRevoked, who.Name(), "token "+ids[i])
	}
	if ts, err := f.users.Tokens(f.ctx, bot.Name); err != nil || len(ts) != 0 {
		t.Errorf("tokens left: %v, %v", ts, err)
	}
	refused(t, "revoke a token nobody has", f.desk.RevokeToken(f.ctx, desk.CommandLine, "", ids[0]), users.ErrTokenNotFound)
}

func TestSetAway(t *testing.T) {
	f := newFixture(t)
	op := f.store(f.op)
	for _, who := range []desk.Actor{desk.Person(f.store(f.super)), desk.Person(f.producer), desk.CommandLine} {
		refused(t, who.Name()+" says they are away", f.desk.SetAway(f.ctx, who, true), desk.ErrForbidden)
	}
	for _, away := range []bool{true, false} {
		if err := f.desk.SetAway(f.ctx, desk.Person(op), away); err != nil {
			t.Fatal(err)
		}
		if u := f.reload(op.Name); u.Away != away {
			t.Errorf("the operator after saying away %v: %+v", away, u)
		}
	}
	if f.reload(f.super.Name).Away {
		t.Error("a refused away changed the supervisor")
	}
}
