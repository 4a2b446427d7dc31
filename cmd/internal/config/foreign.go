package config

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"

	"gopkg.in/yaml.v3"
)

// ForeignKey is a key of another project's configuration and what it means here. Exactly one of
// these holds: Native names the native key(s) it sets (several separated by ", ", each set to the
// same value); Ignore says why it has no effect here (it is accepted and a warning names it);
// Refuse says why it cannot be honoured (an error); Derived says that Family.Derive combines it
// with other keys (its value is kept until every source has been read).
type ForeignKey struct {
	Key    string
	Native string
	// Value, when set, checks and translates the value; it returns "" to set nothing (a value
	// that means what this program does anyway, such as verl's top_k -1).
	Value func(n *yaml.Node) (string, error)
	// Note explains the translation, for docs/config.md.
	Note    string
	Ignore  string
	Refuse  string
	Derived bool
}

// natives lists the native keys the row sets.
func (k ForeignKey) natives() []string {
	if k.Native == "" {
		return nil
	}
	return strings.Split(k.Native, ", ")
}

// prefixRow reports whether the row stands for every key under it (written "section.*").
func (k ForeignKey) prefixRow() bool { return strings.HasSuffix(k.Key, ".*") }

// Family is one project's keys: each row maps a foreign key onto the native layout. Its table is
// docs/config.md's section for the project (a test keeps them equal).
type Family struct {
	Name, Title string
	// Doc is the paragraph above the table in docs/config.md.
	Doc  string
	Keys []ForeignKey
	// Implies are native settings that a configuration in this family's layout means, applied
	// after every source unless the native key was set explicitly.
	Implies []Implied
	// Derive sets the native keys of the family's Derived rows from the values given.
	Derive func(c *Config, g given) error
}

// Implied is a native setting a family's layout means.
type Implied struct {
	Native, Value, Why string
}

// Families are the foreign layouts, in the order docs/config.md lists them.
var Families = []*Family{&verlFamily, &trlFamily, &openrlhfFamily, &alignAnythingFamily, &mtgrpoFamily, &seedFamily}

// foreignIndex maps each foreign key (prefix rows without their ".*") to its row and families. A
// key may be in several families only with the same row (a key they spell and mean alike, such as
// seed for TRL and OpenRLHF): a key with two meanings would take one of them silently.
var foreignIndex = sync.OnceValue(func() map[string]foreignRow {
	m := map[string]foreignRow{}
	for _, f := range Families {
		for _, k := range f.Keys {
			key := strings.TrimSuffix(k.Key, ".*")
			if r, dup := m[key]; dup {
				if !sameRow(r.ForeignKey, k) {
					panic("config: foreign key " + key + " means different things in " + r.family.Name + " and " + f.Name)
				}
				r.shared = append(r.shared, f)
				m[key] = r
				continue
			}
			m[key] = foreignRow{ForeignKey: k, family: f, shared: []*Family{f}}
		}
	}
	return m
})

// sameRow reports whether two families' rows for a key are the same row.
func sameRow(a, b ForeignKey) bool {
	fn := func(f func(*yaml.Node) (string, error)) uintptr {
		if f == nil {
			return 0
		}
		return reflect.ValueOf(f).Pointer()
	}
	return a.Key == b.Key && a.Native == b.Native && a.Note == b.Note && a.Ignore == b.Ignore && a.Refuse == b.Refuse &&
		a.Derived == b.Derived && fn(a.Value) == fn(b.Value)
}

type foreignRow struct {
	ForeignKey
	// family is the first family with the row; shared lists every one.
	family *Family
	shared []*Family
}

// names is the row's families, "TRL" or "TRL and OpenRLHF".
func (r foreignRow) names() string {
	var out []string
	for _, f := range r.shared {
		out = append(out, f.Name)
	}
	return strings.Join(out, " and ")
}

// lookupForeign finds the row for path: its own (a prefix row stands for its whole section), or
// a prefix row above it.
func lookupForeign(path string) (foreignRow, bool) {
	if r, ok := foreignIndex()[path]; ok {
		return r, true
	}
	for p := path; ; {
		i := strings.LastIndexByte(p, '.')
		if i < 0 {
			return foreignRow{}, false
		}
		p = p[:i]
		if r, ok := foreignIndex()[p]; ok && r.prefixRow() {
			return r, true
		}
	}
}

// isForeignSection reports whether some foreign key lies under path.
func isForeignSection(path string) bool {
	for k := range foreignIndex() {
		if strings.HasPrefix(k, path+".") {
			return true
		}
	}
	return false
}

// foreignChildren lists the foreign keys directly under path.
func foreignChildren(path string) []string {
	set := map[string]bool{}
	for k := range foreignIndex() {
		if rest, ok := strings.CutPrefix(k, path+"."); ok {
			set[strings.Split(rest, ".")[0]] = true
		}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// givenValue is a Derived key's value and where it was given.
type givenValue struct {
	node  *yaml.Node
	where string
}

// given are the Derived keys' values, by foreign key.
type given map[string]givenValue

// foreignHint is the foreign key the unknown key path most likely meant: the same key or section
// under another prefix (actor.optim.lr for actor_rollout_ref.actor.optim.lr), or a close spelling
// of a foreign key beside it. "" when none is close.
func foreignHint(path string) string {
	h := nearHint(path)
	if h == path || strings.HasPrefix(path, h+".") {
		return "" // the key itself, or the section it is in: no hint
	}
	return h
}

// nearHint is foreignHint's candidate.
func nearHint(path string) string {
	if h := suffixHint(path); h != "" {
		return h
	}
	parent, name := "", path
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		parent, name = path[:i], path[i+1:]
	}
	var near string
	if parent == "" {
		var tops []string
		for k := range foreignIndex() {
			if !strings.Contains(k, ".") && len(k) > 2 { // l2 is no hint for lr
				tops = append(tops, k)
			}
		}
		sort.Strings(tops)
		near = nearest(name, tops)
	} else {
		near = nearest(name, foreignChildren(parent))
	}
	if near == "" {
		return ""
	}
	return join(parent, near)
}

// suffixHint is the foreign key or section whose path ends with path (the key given without
// its leading sections), when exactly one does: lr alone could be the actor's or the critic's.
func suffixHint(path string) string {
	found := map[string]bool{}
	for k := range foreignIndex() {
		if strings.HasSuffix(k, "."+path) {
			found[k] = true
		} else if i := strings.Index(k, "."+path+"."); i >= 0 {
			found[k[:i+1+len(path)]] = true
		}
	}
	if len(found) != 1 {
		return ""
	}
	for k := range found {
		return k
	}
	return ""
}

// describeForeign says what a foreign key means, for hints: "verl: sets optim.lr".
func describeForeign(key string) string {
	r, ok := foreignIndex()[key]
	if !ok {
		for k, r := range foreignIndex() {
			if strings.HasPrefix(k, key+".") {
				return r.family.Name + "'s section"
			}
		}
		return ""
	}
	switch {
	case r.Native != "":
		return fmt.Sprintf("%s's key for %s", r.names(), r.Native)
	case r.Derived:
		return fmt.Sprintf("%s's key, see docs/config.md", r.names())
	}
	return r.names() + "'s key"
}

// The families' derivations set keys through Set, which looks the tables up: they are attached
// here to keep the tables' initialisation free of that cycle.
func init() {
	verlFamily.Derive = deriveVerl
	trlFamily.Derive = deriveTRL
	openrlhfFamily.Derive = deriveOpenRLHF
}

// FlatFlagKey is the foreign key a flag without a section names: a top-level key (TRL's fields as
// HfArgumentParser takes them, --learning_rate 1e-6; MT-GRPO's --max_turns 2), or the one key of
// align-anything's family whose last part is name, as that project's scripts write them
// (--actor_model_name_or_path for model_cfgs.actor_model_name_or_path).
func FlatFlagKey(name string) (string, bool) {
	if r, ok := foreignIndex()[name]; ok && !r.prefixRow() {
		return name, true
	}
	found := ""
	for _, k := range alignAnythingFamily.Keys {
		if strings.HasSuffix(k.Key, "."+name) {
			if found != "" {
				return "", false
			}
			found = k.Key
		}
	}
	return found, found != ""
}
