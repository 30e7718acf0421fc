package desk

import (
	"context"
	"fmt"
	"slices"

	"claimdesk/internal/audit"
	"claimdesk/internal/skills"
	"claimdesk/internal/users"
)

// People: supervisors (and the command line) add people, change their
// roles, grants and passwords, disable, enable and unlock them, and make
// and revoke their API tokens. A supervisor may not disable themselves nor
// change their own role, so that the last supervisor cannot lock everyone
// out by a slip. Every change to a user reaches every instance through
// users.Store's observers.

// notSelf refuses a change a supervisor may not make to themselves.
func notSelf(a Actor, name, what string) error {
	if !a.commandLine && a.user.Name == name {
		return forbidden("you cannot %s yourself: ask another supervisor", what)
	}
	return nil
}

// AddPerson adds a new user (users.ErrExists if the name is taken); a new
// operator or supervisor needs a password.
func (d *Desk) AddPerson(ctx context.Context, a Actor, u users.User, password string) error {
	if err := need(a, users.Supervisor); err != nil {
		return err
	}
	if err := d.users.Create(ctx, u, password); err != nil {
		return err
	}
	d.record(ctx, a, audit.UserAdded, u.Name, audit.PersonDetail(u, password != ""))
	return nil
}

// Change is a change to a person: what is nil stays, a password "" too.
type Change struct {
	Role     *users.Role
	Queues   *[]string
	Skills   *skills.Set
	Training *bool
	Password string
}

// ChangePerson changes the named user's role, grants and password, and
// returns them as changed. Refused, it returns them as far as the change
// got: as stored when a supervisor asked to change their own role, as
// asked when the store refused the change.
func (d *Desk) ChangePerson(ctx context.Context, a Actor, name string, ch Change) (users.User, error) {
	if err := need(a, users.Supervisor); err != nil {
		return users.User{}, err
	}
	u, err := d.users.Reload(ctx, name)
	if err != nil {
		return u, err
	}
	if ch.Role != nil && *ch.Role != u.Role {
		if err := notSelf(a, u.Name, "change the role of"); err != nil {
			return u, err
		}
		u.Role = *ch.Role
	}
	if ch.Queues != nil {
		u.Queues = *ch.Queues
	}
	if ch.Skills != nil {
		u.Skills = *ch.Skills
	}
	if ch.Training != nil {
		u.Training = *ch.Training
	}
	if err := d.users.Put(ctx, u, ch.Password); err != nil {
		return u, err
	}
	d.record(ctx, a, audit.UserChanged, u.Name, audit.PersonDetail(u, ch.Password != ""))
	return u, nil
}

// Disable stops the named user: their sessions end, their tokens are
// refused, they cannot log in, until Enable. It returns them disabled.
func (d *Desk) Disable(ctx context.Context, a Actor, name string) (users.User, error) {
	if err := need(a, users.Supervisor); err != nil {
		return users.User{}, err
	}
	if _, err := d.users.Reload(ctx, name); err != nil {
		return users.User{}, err
	}
	if err := notSelf(a, name, "disable"); err != nil {
		return users.User{}, err
	}
	if err := d.users.Disable(ctx, name); err != nil {
		return users.User{}, err
	}
	d.record(ctx, a, audit.UserDisabled, name, "")
	return d.users.Reload(ctx, name)
}

// Enable lets a disabled user work again, and returns them.
func (d *Desk) Enable(ctx context.Context, a Actor, name string) (users.User, error) {
	if err := need(a, users.Supervisor); err != nil {
		return users.User{}, err
	}
	if err := d.users.Enable(ctx, name); err != nil {
		return users.User{}, err
	}
	d.record(ctx, a, audit.UserEnabled, name, "")
	return d.users.Reload(ctx, name)
}

// Unlock ends the named user's login delay at once.
func (d *Desk) Unlock(ctx context.Context, a Actor, name string) error {
	if err := need(a, users.Supervisor); err != nil {
		return err
	}
	if err := d.users.Unlock(ctx, name); err != nil {
		return err
	}
	d.record(ctx, a, audit.UserUnlocked, name, "")
	return nil
}

// NewToken makes an API token for the named user and returns it: it is
// shown this once. The audit log keeps its id, never the token.
func (d *Desk) NewToken(ctx context.Context, a Actor, name string) (string, error) {
	if err := need(a, users.Supervisor); err != nil {
		return "", err
	}
	token, err := d.users.NewToken(ctx, name)
	if err != nil {
		return "", err
	}
	d.record(ctx, a, audit.TokenAdded, name, "token "+users.TokenID(token))
	return token, nil
}

// Tokens lists the named user's API tokens, oldest first.
func (d *Desk) Tokens(ctx context.Context, a Actor, name string) ([]users.Token, error) {
	if err := need(a, users.Supervisor); err != nil {
		return nil, err
	}
	return d.users.Tokens(ctx, name)
}

// RevokeToken ends the API token with the id given, of the named user (a
// token of someone else is not found); name "" is whoever it belongs to.
// It is recorded as TokenAdded is: the user as the target, the token's id
// in the detail.
func (d *Desk) RevokeToken(ctx context.Context, a Actor, name, id string) error {
	if err := need(a, users.Supervisor); err != nil {
		return err
	}
	owner, err := d.tokenOwner(ctx, name, id)
	if err != nil {
		return err
	}
	if err := d.users.RevokeToken(ctx, id); err != nil {
		return err
	}
	d.record(ctx, a, audit.TokenRevoked, owner, "token "+id)
	return nil
}

// tokenOwner returns whose token the id names, among the named user's
// tokens, or everyone's when name is "".
func (d *Desk) tokenOwner(ctx context.Context, name, id string) (string, error) {
	owners := []string{name}
	if name == "" {
		all, err := d.users.List(ctx)
		if err != nil {
			return "", err
		}
		owners = owners[:0]
		for _, u := range all {
			owners = append(owners, u.Name)
		}
	}
	for _, owner := range owners {
		ts, err := d.users.Tokens(ctx, owner)
		if err != nil {
			return "", err
		}
		if slices.ContainsFunc(ts, func(t users.Token) bool { return t.ID == id }) {
			return owner, nil
		}
	}
	if name == "" {
		return "", fmt.Errorf("%w: no token has the id %q", users.ErrTokenNotFound, id)
	}
	return "", fmt.Errorf("%w: %s has no token with the id %q", users.ErrTokenNotFound, name, id)
}

// SetAway says whether the operator acting is away (no new-job notices)
// or back.
func (d *Desk) SetAway(ctx context.Context, a Actor, away bool) error {
	if err := need(a, users.Operator); err != nil {
		return err
	}
	return d.users.SetAway(ctx, a.Name(), away)
}
