package config

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/mtgrpo/mtgrpo/internal/bounded"
)

// A configuration with a Hydra `defaults:` list is composed as Hydra 1.1 and later compose it
// (verl runs them), from files beside it:
//
//	- NAME, - GROUP/NAME[@PACKAGE]             a config, loaded unconditionally
//	- GROUP[@PACKAGE]: OPTION                  a group default: GROUP/OPTION.yaml
//	- GROUP: [OPTION, ...]                     several options of a group, in order
//	- GROUP: null                              a placeholder, ignored unless overridden
//	- optional GROUP: OPTION                   no error when GROUP/OPTION.yaml is missing
//	- override GROUP[@PACKAGE]: OPTION         changes the option an included config chose
//	- _self_                                   where this file's own keys apply (default: last)
//
// GROUP is relative to the including file (absolute from the primary file's directory with a
// leading /, ../ climbs); the package, where a config's keys go, is relative to the including
// config's, _here_ is that package, _global_[.X] and _group_ are absolute, and a `# @package X`
// line heading a file places it when the list does not. Within a tree the last choice of a group
// wins and its first place sets the order; choosing one twice without override is an error, as
// in Hydra. Hydra's own groups (hydra/...) have no effect here and are warned about; verl's own
// configs (ppo_trainer and the choices its defaults list makes) are what the defaults here follow,
// and are skipped where they are not beside the file. Deleting an entry (~GROUP), renaming a
// package (GROUP@A:B) and interpolation (${...}) are refused by name. A file that includes itself,
// directly or not, is an error naming the chain; the tree is bounded (maxDefaultsDepth,
// maxDefaultsConfigs) and each file is read once.

// Bounds of a defaults tree: far above any real composition (verl's is three levels deep).
const (
	maxDefaultsDepth   = 32
	maxDefaultsConfigs = 512
)

// verlConfigs are verl's own configs that a user's defaults list names: ppo_trainer, and the
// choices its defaults list makes by group (the defaults here follow them).
var verlConfigs = map[string][]string{
	"":               {"ppo_trainer"},
	"actor":          {"dp_actor"},
	"ref":            {"dp_ref"},
	"rollout":        {"rollout"},
	"critic":         {"dp_critic"},
	"data":           {"legacy_data"},
	"model":          {"hf_model"},
	"reward_model":   {"dp_reward_model", "dp_reward_loop"},
	"reward_manager": {"reward_manager"},
	"algorithm":      {"rollout_correction"},
	"npu_profile":    {"npu_profile"},
}

// piece is one config of a composed configuration: its file, its own keys (its defaults list
// taken out) and the package they go to.
type piece struct {
	file string
	node *yaml.Node
	pkg  string
}

// hydraEntry is one entry of a defaults list.
type hydraEntry struct {
	at                 *yaml.Node // for positions
	self, group        bool       // _self_; a group default (GROUP: OPTION) rather than a config
	override, optional bool
	path               string   // GROUP (a group default) or [GROUP/]NAME (a config)
	options            []string // a group default's options (none: null)
	pkg                string
	hasPkg             bool
}

// composer resolves a primary configuration's defaults tree into its pieces, in order.
type composer struct {
	c          *Config
	primaryDir string
	files      map[string]*yaml.Node // each file read (and checked) once
	chain      []string              // the files being expanded, outermost first
	chosen     map[string]string     // group@package → where it was chosen
	used       map[*yaml.Node]bool   // the override entries a group default took
	configs    int
	pieces     []piece
}

// compose is the pieces of the configuration root read from file, its defaults list resolved.
func (c *Config) compose(file string, root *yaml.Node) ([]piece, error) {
	k := &composer{c: c, primaryDir: filepath.Dir(file), files: map[string]*yaml.Node{filepath.Clean(file): root},
		chosen: map[string]string{}, used: map[*yaml.Node]bool{}}
	if err := k.expand(file, root, "", nil); err != nil {
		return nil, err
	}
	return k.pieces, nil
}

// expand adds the pieces of the config root of file at package pkg: its defaults list's
// configs and its own keys, in order; overrides are the overrides the including lists made.
func (k *composer) expand(file string, root *yaml.Node, pkg string, overrides map[string]hydraEntry) error {
	k.configs++
	k.chain = append(k.chain, filepath.Clean(file))
	defer func() { k.chain = k.chain[:len(k.chain)-1] }()
	own, list, err := splitDefaults(file, root)
	if err != nil {
		return err
	}
	entries, err := parseDefaults(file, list)
	if err != nil {
		return err
	}
	// This list's overrides apply to the group defaults of its whole subtree; an including
	// list's, which come later depth-first, win over them.
	mine := map[string]hydraEntry{}
	for _, e := range entries {
		switch {
		case e.override && hydraGroup(e.path):
			k.c.warn(fmt.Sprintf("%s:%d: defaults entry %s: Hydra's own settings have no effect here", file, e.at.Line, e.path))
		case e.override:
			mine[k.groupKey(file, pkg, e)] = e
		}
	}
	maps := map[string]hydraEntry{}
	for key, e := range mine {
		maps[key] = e
	}
	for key, e := range overrides {
		maps[key] = e
	}
	self := !slices.ContainsFunc(entries, func(e hydraEntry) bool { return e.self })
	for _, e := range entries {
		switch {
		case e.self:
			k.pieces = append(k.pieces, piece{file, own, pkg})
			continue
		case e.override:
			continue
		}
		if e.group {
			key := k.groupKey(file, pkg, e)
			if o, ok := maps[key]; ok {
				e.options, k.used[o.at] = o.options, true
			}
			if first, ok := k.chosen[key]; ok {
				return defaultsErr(file, e.at.Line, "%s is chosen a second time (first at %s): write `override %s` to change the choice",
					e.path, first, e.path)
			}
			k.chosen[key] = fmt.Sprintf("%s:%d", file, e.at.Line)
		}
		if err := k.include(file, pkg, e, maps); err != nil {
			return err
		}
	}
	if self {
		k.pieces = append(k.pieces, piece{file, own, pkg}) // Hydra 1.1+: _self_ last when not given
	}
	for key, e := range mine {
		if k.used[e.at] || overrides[key].at != nil { // taken, or superseded by an including list's
			continue
		}
		if verlChoice(groupName(e.path), e.options) {
			continue // a choice of verl's ppo_trainer, which the defaults here follow
		}
		if opts, ok := verlConfigs[groupName(e.path)]; ok {
			return defaultsErr(file, e.at.Line, "override %s: %s: verl's own choice for %s is %s, which the defaults here follow; "+
				"no other has a counterpart here", e.path, strings.Join(e.options, ", "), e.path, strings.Join(opts, " or "))
		}
		return defaultsErr(file, e.at.Line, "override %s: no config included here chooses %s (override changes an included "+
			"config's choice; to choose one, drop the word override)", e.path, e.path)
	}
	return nil
}

// include loads the configs one entry names and expands each.
func (k *composer) include(file, pkg string, e hydraEntry, overrides map[string]hydraEntry) error {
	group, names := e.path, e.options
	if !e.group {
		group, names = filepath.ToSlash(filepath.Dir(e.path)), []string{filepath.Base(e.path)}
		if group == "." {
			group = ""
		}
	}
	if hydraGroup(group) {
		k.c.warn(fmt.Sprintf("%s:%d: defaults entry %s: Hydra's own settings have no effect here", file, e.at.Line, e.path))
		return nil
	}
	dir := k.groupDir(file, group)
	for _, name := range names {
		path := filepath.Join(dir, name+".yaml")
		root, err := k.read(path)
		switch {
		case errors.Is(err, fs.ErrNotExist) && e.optional:
			continue
		case errors.Is(err, fs.ErrNotExist) && verlChoice(groupName(group), []string{name}):
			continue // verl's own configuration: the defaults here follow it
		case errors.Is(err, fs.ErrNotExist):
			hint := ""
			if opts, ok := verlConfigs[groupName(group)]; ok && e.group {
				hint = fmt.Sprintf("; verl's own choice for %s is %s, which the defaults here follow", group, strings.Join(opts, " or "))
			}
			return defaultsErr(file, e.at.Line, "entry %s: %s: no such file (a defaults entry names a file beside the configuration%s)",
				entryName(e, name), path, hint)
		case err != nil:
			return defaultsErr(file, e.at.Line, "entry %s: %v", entryName(e, name), err)
		}
		switch i := slices.Index(k.chain, filepath.Clean(path)); {
		case i >= 0:
			return defaultsErr(file, e.at.Line, "entry %s includes %s again, a cycle: %s", entryName(e, name), path,
				strings.Join(append(slices.Clone(k.chain[i:]), filepath.Clean(path)), " → "))
		case len(k.chain) >= maxDefaultsDepth:
			return defaultsErr(file, e.at.Line, "entry %s: the defaults lists nest more than %d deep", entryName(e, name), maxDefaultsDepth)
		case k.configs >= maxDefaultsConfigs:
			return defaultsErr(file, e.at.Line, "entry %s: the defaults tree holds more than %d configs", entryName(e, name), maxDefaultsConfigs)
		}
		if err := k.expand(path, root, k.packageOf(path, pkg, group, e), overrides); err != nil {
			return err
		}
	}
	return nil
}

// read parses a config file once: later entries naming it get the same nodes.
func (k *composer) read(path string) (*yaml.Node, error) {
	path = filepath.Clean(path)
	if n, ok := k.files[path]; ok {
		return n, nil
	}
	b, err := bounded.ReadFile(path, bounded.Small)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fs.ErrNotExist
		}
		return nil, errors.Unwrap(err)
	}
	root, err := parseConfig(path, b)
	if err != nil {
		return nil, err
	}
	k.files[path] = root
	return root, nil
}

// groupDir is the directory of a group named in file's defaults list.
func (k *composer) groupDir(file, group string) string {
	if rest, ok := strings.CutPrefix(group, "/"); ok {
		return filepath.Join(k.primaryDir, filepath.FromSlash(rest))
	}
	return filepath.Join(filepath.Dir(file), filepath.FromSlash(group))
}

// absGroup is a group's path from the primary file's directory, dotted: its _group_ package.
func (k *composer) absGroup(file, group string) string {
	rel, err := filepath.Rel(k.primaryDir, k.groupDir(file, group))
	if err != nil || rel == "." {
		return ""
	}
	return strings.ReplaceAll(filepath.ToSlash(rel), "/", ".")
}

// groupKey identifies a group default by its group and package, for overrides and repeats.
func (k *composer) groupKey(file, pkg string, e hydraEntry) string {
	return k.absGroup(file, e.path) + "@" + k.packageOf("", pkg, e.path, e)
}

// packageOf is the package the config at path (named by entry e of a list whose config sits at
// pkg, from group) goes to: the list's package, else the file's `# @package` line, else the
// group's place under pkg.
func (k *composer) packageOf(path, pkg, group string, e hydraEntry) string {
	if e.hasPkg {
		switch p := e.pkg; {
		case p == "_here_":
			return pkg
		case p == "_global_":
			return ""
		case strings.HasPrefix(p, "_global_."):
			return strings.TrimPrefix(p, "_global_.")
		case p == "_group_":
			return k.absGroup(path, group)
		}
		return join(pkg, e.pkg)
	}
	if d := packageDirective(k.files[filepath.Clean(path)]); d != "" {
		switch d {
		case "_global_":
			return ""
		case "_group_":
			return k.absGroup(path, group)
		}
		return strings.TrimPrefix(d, "_global_.")
	}
	if strings.HasPrefix(group, "/") || strings.Contains(group, "..") {
		return k.absGroup(path, group)
	}
	return join(pkg, strings.ReplaceAll(group, "/", "."))
}

// packageDirective is the package a `# @package X` comment heading a file gives ("" for none).
func packageDirective(root *yaml.Node) string {
	if root == nil {
		return ""
	}
	for _, comment := range []string{root.HeadComment, firstKeyComment(root)} {
		for _, line := range strings.Split(comment, "\n") {
			if rest, ok := strings.CutPrefix(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "#")), "@package"); ok {
				return strings.TrimSpace(rest)
			}
		}
	}
	return ""
}

func firstKeyComment(root *yaml.Node) string {
	if len(root.Content) > 0 {
		return root.Content[0].HeadComment
	}
	return ""
}

// splitDefaults separates a config's defaults list from its own keys.
func splitDefaults(file string, root *yaml.Node) (own, list *yaml.Node, err error) {
	own = &yaml.Node{Kind: yaml.MappingNode, Tag: root.Tag, Line: root.Line, Column: root.Column}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value == "defaults" {
			if list = deref(root.Content[i+1]); list.Kind != yaml.SequenceNode {
				return nil, nil, defaultsErr(file, list.Line, "want a Hydra defaults list, got %s", kindName(list))
			}
			continue
		}
		own.Content = append(own.Content, root.Content[i], root.Content[i+1])
	}
	return own, list, nil
}

// parseDefaults reads a defaults list's entries; every form Hydra has is honoured or refused by
// name.
func parseDefaults(file string, list *yaml.Node) ([]hydraEntry, error) {
	if list == nil {
		return nil, nil
	}
	var out []hydraEntry
	for _, item := range list.Content {
		e, err := parseEntry(deref(item))
		if err != nil {
			return nil, defaultsErr(file, item.Line, "entry %s: %v", shown(deref(item)), err)
		}
		if e.self && slices.ContainsFunc(out, func(o hydraEntry) bool { return o.self }) {
			return nil, defaultsErr(file, item.Line, "_self_ is given twice")
		}
		out = append(out, e)
	}
	return out, nil
}

// parseEntry reads one entry: a string (a config or _self_) or a one-key mapping (a group default).
func parseEntry(n *yaml.Node) (hydraEntry, error) {
	e := hydraEntry{at: n}
	switch n.Kind {
	case yaml.ScalarNode:
		v := strings.TrimSpace(n.Value)
		if v == "_self_" {
			e.self = true
			return e, nil
		}
		e.path = v
	case yaml.MappingNode:
		if len(n.Content) != 2 {
			return e, errors.New("want one GROUP: OPTION pair (Hydra 1.0's `optional: true` beside it is written `optional GROUP: OPTION`)")
		}
		key, val := n.Content[0].Value, deref(n.Content[1])
		words := strings.Fields(key)
		for len(words) > 1 {
			switch words[0] {
			case "override":
				e.override = true
			case "optional":
				e.optional = true
			default:
				return e, fmt.Errorf("unknown keyword %q (override, optional)", words[0])
			}
			words = words[1:]
		}
		if len(words) != 1 {
			return e, errors.New("want GROUP: OPTION")
		}
		e.group, e.path = true, words[0]
		switch {
		case val.Kind == yaml.ScalarNode && val.Tag == "!!null":
		case val.Kind == yaml.ScalarNode:
			e.options = []string{val.Value}
		case val.Kind == yaml.SequenceNode:
			for _, o := range val.Content {
				if o = deref(o); o.Kind != yaml.ScalarNode {
					return e, fmt.Errorf("options: want names, got %s", kindName(o))
				}
				e.options = append(e.options, o.Value)
			}
		default:
			return e, fmt.Errorf("want an option name, a list of them or null, got %s", kindName(val))
		}
	default:
		return e, fmt.Errorf("want a config name or GROUP: OPTION, got %s", kindName(n))
	}
	return e, checkEntry(&e)
}

// checkEntry splits the package off an entry's path and refuses what has no meaning here.
func checkEntry(e *hydraEntry) error {
	for _, s := range append([]string{e.path}, e.options...) {
		switch {
		case strings.Contains(s, "${"):
			return fmt.Errorf("interpolation (%s) is not supported: name the option", s)
		case strings.HasPrefix(s, "~"):
			return errors.New("deleting an entry (~GROUP) is not supported: leave the entry out")
		case s == "_keep_":
			return errors.New("_keep_ (renaming a package) is not supported")
		case s == "" || strings.ContainsAny(s, "\\\x00"):
			return fmt.Errorf("%q is not a config name", s)
		}
	}
	path, pkg, hasPkg := strings.Cut(e.path, "@")
	if hasPkg && strings.Contains(pkg, ":") {
		return fmt.Errorf("renaming a package (%s) is not supported: give the package once", e.path)
	}
	if hasPkg && strings.HasPrefix(pkg, "_") && !slices.Contains([]string{"_here_", "_global_", "_group_"}, pkg) &&
		!strings.HasPrefix(pkg, "_global_.") {
		return fmt.Errorf("unknown package keyword %s (_here_, _global_, _group_)", pkg)
	}
	if path == "" || path == "/" {
		return errors.New("no config or group named")
	}
	e.path, e.pkg, e.hasPkg = strings.TrimSuffix(path, "/"), pkg, hasPkg
	for _, o := range e.options {
		if strings.ContainsAny(o, "/@") {
			return fmt.Errorf("option %q: want a config name of group %s", o, e.path)
		}
	}
	return nil
}

// entryName shows the config an entry loads, for errors.
func entryName(e hydraEntry, option string) string {
	if e.group {
		return e.path + ": " + option
	}
	return e.path
}

// groupName is a group's last part, as verlConfigs names verl's groups ("" for none).
func groupName(group string) string {
	if group == "" || group == "." {
		return ""
	}
	return filepath.Base(filepath.FromSlash(group))
}

// verlChoice reports whether options of group are verl's own ppo_trainer choices.
func verlChoice(group string, options []string) bool {
	known, ok := verlConfigs[group]
	if !ok || len(options) == 0 {
		return false
	}
	for _, o := range options {
		if !slices.Contains(known, o) {
			return false
		}
	}
	return true
}

// defaultsErr is an error of a defaults list, at file:line.
func defaultsErr(file string, line int, format string, a ...any) error {
	return &Error{Where: fmt.Sprintf("%s:%d", file, line), Key: "defaults", Err: fmt.Errorf(format, a...)}
}

// hydraGroup reports whether group is one of Hydra's own (hydra/launcher, ...).
func hydraGroup(group string) bool {
	g := strings.TrimPrefix(group, "/")
	return g == "hydra" || strings.HasPrefix(g, "hydra/")
}
