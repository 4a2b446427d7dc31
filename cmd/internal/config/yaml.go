package config

import (
	"bytes"
	"encoding"
	"errors"
	"fmt"
	"github.com/mtgrpo/mtgrpo/env/agent"
	"io"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/mtgrpo/mtgrpo/cmd/internal/modelinit"
	"github.com/mtgrpo/mtgrpo/env/sandbox"
	"github.com/mtgrpo/mtgrpo/grpo"
	"github.com/mtgrpo/mtgrpo/grpo/algo"
	"github.com/mtgrpo/mtgrpo/internal/bounded"
	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/rollout"
)

// Error is a bad key or value, naming where it was given: "configs/x.yaml:12", "$LR",
// "--set rollout.tasks=0".
type Error struct {
	Where string
	Key   string
	Err   error
}

func (e *Error) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("%s: %v", e.Where, e.Err)
	}
	return fmt.Sprintf("%s: %s: %v", e.Where, e.Key, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// decoder writes YAML values into a Config strictly: every key must name a field (or a foreign key,
// foreign.go), every value must fit its field, and each key's origin is recorded.
type decoder struct {
	c    *Config
	file string // file name for positions; "" for values given elsewhere
	what string // the origin label when file is ""
	errs []error
}

func (d *decoder) where(n *yaml.Node) string {
	if d.file == "" {
		return d.what
	}
	return fmt.Sprintf("%s:%d", d.file, n.Line)
}

func (d *decoder) fail(n *yaml.Node, key string, format string, a ...any) error {
	return &Error{Where: d.where(n), Key: key, Err: fmt.Errorf(format, a...)}
}

// LoadFile applies a YAML file to c.
func (c *Config) LoadFile(path string) error {
	b, err := bounded.ReadFile(path, bounded.Small)
	if err != nil {
		return &Error{Where: path, Err: errors.Unwrap(err)}
	}
	return c.loadYAML(path, b)
}

// loadYAML applies one YAML document (named name in errors) to c: with a Hydra defaults list,
// the pieces it composes (hydra.go), in order.
func (c *Config) loadYAML(name string, b []byte) error {
	root, err := parseConfig(name, b)
	if err != nil || len(root.Content) == 0 {
		return err
	}
	pieces := []piece{{name, root, ""}}
	if slices.ContainsFunc(root.Content, func(n *yaml.Node) bool { return n.Value == "defaults" }) {
		if pieces, err = c.compose(name, root); err != nil {
			return err
		}
	}
	var errs []error
	for _, p := range pieces {
		d := &decoder{c: c, file: p.file}
		d.walk(p.node, p.pkg, foreignOnlyAt(p.pkg))
		errs = append(errs, d.errs...)
	}
	return joinErrors(errs)
}

// parseConfig reads a configuration file's one document: its top-level mapping (empty for an
// empty file), checked for recursive anchors (checkAliases).
func parseConfig(name string, b []byte) (*yaml.Node, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&doc); err != nil && err != io.EOF {
		return nil, &Error{Where: name, Err: errors.New(strings.TrimPrefix(err.Error(), "yaml: "))}
	}
	// A configuration is one document: a second one after "---" would be ignored by a reader that
	// takes the first (PyYAML's safe_load refuses it too).
	var next yaml.Node
	if err := dec.Decode(&next); err != io.EOF {
		line := next.Line
		if len(next.Content) > 0 {
			line = next.Content[0].Line
		}
		if err != nil {
			return nil, &Error{Where: name, Err: errors.New(strings.TrimPrefix(err.Error(), "yaml: "))}
		}
		return nil, &Error{Where: fmt.Sprintf("%s:%d", name, line), Err: errors.New(
			`a second YAML document (after "---"): a configuration file holds one document; merge them or give a second --config file`)}
	}
	if len(doc.Content) == 0 {
		return &yaml.Node{Kind: yaml.MappingNode}, nil // an empty file sets nothing
	}
	if err := checkAliases(name, doc.Content[0]); err != nil {
		return nil, err
	}
	root := deref(doc.Content[0])
	if root.Kind != yaml.MappingNode {
		return nil, &Error{Where: fmt.Sprintf("%s:%d", name, root.Line), Err: fmt.Errorf("the top level must be a mapping of keys, not %s", kindName(root))}
	}
	return root, nil
}

// maxAliasNodes bounds the nodes a document holds once its aliases are expanded: a few aliases
// of aliases (a "billion laughs" document) would otherwise expand to more than memory holds.
const maxAliasNodes = 1 << 20

// checkAliases refuses an anchor whose value holds an alias to itself (&a [*a], a recursive
// value no configuration has) and a document whose aliases expand past maxAliasNodes.
func checkAliases(name string, root *yaml.Node) error {
	var open []*yaml.Node
	seen := 0
	var walk func(n *yaml.Node) error
	walk = func(n *yaml.Node) error {
		if seen++; seen > maxAliasNodes {
			return &Error{Where: name, Err: fmt.Errorf("its aliases expand to more than %d values", maxAliasNodes)}
		}
		if n.Kind == yaml.AliasNode {
			if slices.Contains(open, n.Alias) {
				return &Error{Where: fmt.Sprintf("%s:%d", name, n.Line), Err: fmt.Errorf(
					"*%s is inside the value of its own anchor &%s (line %d): a recursive value", n.Value, n.Alias.Anchor, n.Alias.Line)}
			}
			n = n.Alias
		}
		open = append(open, n)
		defer func() { open = open[:len(open)-1] }()
		for _, child := range n.Content {
			if err := walk(child); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(root)
}

// foreignOnlyAt reports whether keys at prefix sit in a section of the foreign layouts only, as
// walk would find it coming down from the top (a composed piece's package).
func foreignOnlyAt(prefix string) bool {
	if prefix == "" {
		return false
	}
	parts := strings.Split(prefix, ".")
	for i := range parts {
		p := strings.Join(parts[:i+1], ".")
		if isForeignSection(p) && !plainSection(p) {
			return true
		}
	}
	return false
}

// pairs calls fn for each key of a mapping, refusing duplicate keys. Errors are collected in
// d.errs, so that every bad key of a source is reported, not only the first.
func (d *decoder) pairs(m *yaml.Node, prefix string, fn func(key string, k, v *yaml.Node) error) error {
	seen := map[string]int{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		key := join(prefix, k.Value)
		if line, dup := seen[k.Value]; dup {
			d.errs = append(d.errs, d.fail(k, key, "given twice (first at line %d)", line))
			continue
		}
		seen[k.Value] = k.Line
		if err := fn(key, k, v); err != nil {
			d.errs = append(d.errs, err)
		}
	}
	return nil
}

// set decodes v into the field at the dotted path key.
func (d *decoder) set(key string, k, v *yaml.Node) error {
	f, err := fieldAt(reflect.ValueOf(d.c).Elem(), key)
	if err != nil {
		missing := firstMissing(key)
		switch h := foreignHint(key); {
		case isForeignSection(missing): // critic.model.x: a foreign section inside a native one
			return d.fail(k, "", "%s", unknownForeign(key))
		case h != "" && h == suffixHint(key): // a foreign key given without its leading sections
			return d.fail(k, "", "unknown key %s (did you mean %s, %s?)", key, h, describeForeign(h))
		case missing != key: // name the whole key: a.b.x and a.b.y are two mistakes, not one
			return d.fail(k, "", "%s: %v", key, err)
		}
		return d.fail(k, "", "%v", err)
	}
	return d.value(v, f, key)
}

// firstMissing is the shortest part of the dotted key that names no native key ("critic.model" of
// critic.model.path).
func firstMissing(key string) string {
	root := reflect.ValueOf(Defaults()).Elem()
	parts := strings.Split(key, ".")
	for i := range parts {
		p := strings.Join(parts[:i+1], ".")
		if _, err := fieldAt(root, p); err != nil {
			return p
		}
	}
	return key
}

// value decodes n into v (a settable field), recursing into structs so that every nested key is
// checked.
func (d *decoder) value(n *yaml.Node, v reflect.Value, key string) error {
	n = deref(n)
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil // "key:" with no value leaves the field as it was
	}
	switch {
	case v.Kind() == reflect.Pointer && v.Type().Elem().Kind() == reflect.Struct:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		if err := d.value(n, v.Elem(), key); err != nil {
			return err
		}
		// An optional section (init, mcp, ...) is where it was given; keys of a section that
		// always exists each have their own origin.
		d.c.setOrigin(key, d.where(n))
		return nil
	case v.Kind() == reflect.Struct && v.Type() != reflect.TypeOf(time.Time{}):
		if key == "env" && n.Kind == yaml.ScalarNode {
			// `env: NAME` is short for `env: {name: NAME}`, as the protocol pages write it.
			return d.value(n, v.FieldByName("Name"), "env.name")
		}
		if n.Kind != yaml.MappingNode {
			return d.fail(n, key, "want a mapping of %s, got %s", strings.Join(tagsOf(v.Type()), ", "), kindName(n))
		}
		return d.pairs(n, key, func(sub string, kn, vn *yaml.Node) error {
			f, err := child(v, kn.Value, key)
			if err != nil {
				return d.fail(kn, "", "%v", err)
			}
			return d.value(vn, f, sub)
		})
	case v.Kind() == reflect.Slice && elemStruct(v.Type()):
		if n.Kind != yaml.SequenceNode {
			return d.fail(n, key, "want a list, got %s", kindName(n))
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, item := range n.Content {
			if err := d.value(item, s.Index(i), fmt.Sprintf("%s[%d]", key, i)); err != nil {
				return err
			}
		}
		v.Set(s)
	default:
		if err := d.leaf(n, v, key); err != nil {
			return err
		}
	}
	d.c.setOrigin(key, d.where(n))
	return nil
}

// leaf decodes a scalar, list or map value. A named value (an estimator, a schedule, ...)
// decodes itself (encoding.TextUnmarshaler): its error says what it takes.
func (d *decoder) leaf(n *yaml.Node, v reflect.Value, key string) error {
	conv, err := integers(n, v.Type()) // 2.0 is 2; 1.9 is an error, not 1
	if err != nil {
		return d.fail(n, key, "%v", err)
	}
	n = conv
	tmp := reflect.New(v.Type())
	if err := n.Decode(tmp.Interface()); err != nil {
		if _, wrongType := err.(*yaml.TypeError); !wrongType { // a named value's own error
			return d.fail(n, key, "%v", err)
		}
		return d.fail(n, key, "want %s, got %s", typeName(v.Type()), shown(n))
	}
	if err := finite(tmp.Elem()); err != nil {
		return d.fail(n, key, "%v", err)
	}
	v.Set(tmp.Elem())
	return nil
}

// fieldAt walks a dotted path of YAML keys from the Config struct value root, allocating nil
// pointers to structs on the way.
func fieldAt(root reflect.Value, path string) (reflect.Value, error) {
	v := root
	parent := ""
	for _, part := range strings.Split(path, ".") {
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			return reflect.Value{}, fmt.Errorf("%s has no key %q (it is a single value)", parent, part)
		}
		f, err := child(v, part, parent)
		if err != nil {
			return reflect.Value{}, err
		}
		v, parent = f, join(parent, part)
	}
	return v, nil
}

// child is the field of struct v with YAML key name; the error lists the keys there are and the
// nearest one.
func child(v reflect.Value, name, parent string) (reflect.Value, error) {
	if f, ok := fieldNamed(v, name); ok {
		return f, nil
	}
	known := tagsOf(v.Type())
	where := "at the top level"
	if parent != "" {
		where = "under " + parent
	}
	msg := fmt.Sprintf("unknown key %s %s", join(parent, name), where)
	// Hints by meaning first (the translation tables), spelling second.
	if h := foreignHint(join(parent, name)); h != "" {
		msg += fmt.Sprintf(" (did you mean %s, %s?)", h, describeForeign(h))
	} else if near := nearest(name, known); near != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", join(parent, near))
	}
	if parent == "" {
		return reflect.Value{}, fmt.Errorf("%s; keys: %s, and the foreign keys of docs/config.md", msg, strings.Join(known, ", "))
	}
	return reflect.Value{}, fmt.Errorf("%s; keys: %s", msg, strings.Join(known, ", "))
}

// fieldNamed is the field of struct v with YAML key name, looking into inlined structs.
func fieldNamed(v reflect.Value, name string) (reflect.Value, bool) {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		if inlined(t.Field(i)) {
			if f, ok := fieldNamed(v.Field(i), name); ok {
				return f, true
			}
		} else if tag := yamlName(t.Field(i)); tag != "" && tag == name {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

// inlined reports whether f is a struct whose keys sit beside its siblings (`yaml:",inline"`).
func inlined(f reflect.StructField) bool {
	opts := strings.Split(f.Tag.Get("yaml"), ",")
	return f.IsExported() && f.Type.Kind() == reflect.Struct && slices.Contains(opts[1:], "inline")
}

// sections are the packages whose structs are sections of the configuration (their fields are
// keys); a struct of another package (mcp.Config, ...) is one key's value.
var sections = map[string]bool{
	reflect.TypeOf(Config{}).PkgPath():                  true,
	reflect.TypeOf(grpo.Config{}).PkgPath():             true,
	reflect.TypeOf(algo.AdvConfig{}).PkgPath():          true,
	reflect.TypeOf(rollout.CondenserConfig{}).PkgPath(): true,
	reflect.TypeOf(modelinit.Spec{}).PkgPath():          true,
	reflect.TypeOf(sandbox.Settings{}).PkgPath():        true,
	reflect.TypeOf(agent.Config{}).PkgPath():            true,
	reflect.TypeOf(model.LoRAConfig{}).PkgPath():        true,
}

func yamlName(f reflect.StructField) string {
	if !f.IsExported() || inlined(f) {
		return ""
	}
	tag := strings.Split(f.Tag.Get("yaml"), ",")[0]
	if tag == "-" {
		return ""
	}
	if tag == "" {
		return strings.ToLower(f.Name)
	}
	return tag
}

func tagsOf(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		if inlined(t.Field(i)) {
			out = append(out, tagsOf(t.Field(i).Type)...)
		} else if n := yamlName(t.Field(i)); n != "" {
			out = append(out, n)
		}
	}
	return out
}

func elemStruct(t reflect.Type) bool {
	e := t.Elem()
	return e.Kind() == reflect.Struct || (e.Kind() == reflect.Pointer && e.Elem().Kind() == reflect.Struct)
}

func join(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

func deref(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	default:
		return fmt.Sprintf("%q", n.Value)
	}
}

func shown(n *yaml.Node) string {
	if n.Kind == yaml.ScalarNode {
		return fmt.Sprintf("%q", n.Value)
	}
	return kindName(n)
}

// typeName says what a field takes, for errors.
func typeName(t reflect.Type) string {
	if t == reflect.TypeOf(time.Duration(0)) {
		return "a duration such as 30s or 1m30s"
	}
	if reflect.PointerTo(t).Implements(reflect.TypeOf((*encoding.TextUnmarshaler)(nil)).Elem()) {
		return "a name"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Uint64, reflect.Uint, reflect.Uint32:
		return "an integer >= 0"
	case reflect.Float64, reflect.Float32:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice:
		return "a list of " + strings.TrimPrefix(typeName(t.Elem()), "a ") + "s"
	case reflect.Map:
		return "a mapping"
	case reflect.Pointer:
		return typeName(t.Elem())
	}
	return t.String()
}

// nearest is the known key closest to s by edit distance, if it is close enough to be a
// misspelling (one edit in a short key, up to a fifth of a longer one's letters): a key that is
// merely similar may mean something else.
func nearest(s string, known []string) string {
	limit := 1
	if len(s) > 4 {
		limit = max(2, len(s)/5)
	}
	best, bestD := "", limit+1
	for _, k := range known {
		if d := editDistance(s, k); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// setOrigin records where key was set; keys under it inherit it.
func (c *Config) setOrigin(key, where string) {
	if c.origin == nil {
		c.origin = map[string]string{}
	}
	c.origin[key] = where
}

// Origin says where key (or its nearest parent) was last set: a file and line, a variable or
// a flag; "default" (or the preset's name) otherwise.
func (c *Config) Origin(key string) string {
	for k := key; k != ""; {
		if w, ok := c.origin[k]; ok {
			return w
		}
		i := strings.LastIndexByte(k, '.')
		if i < 0 {
			break
		}
		k = k[:i]
	}
	if c.Preset != "" {
		return "preset " + c.Preset
	}
	return "default"
}

// Keys lists every key of the native layout as dotted paths, sorted (for docs and tests).
func Keys() []string {
	var out []string
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if inlined(f) {
				walk(f.Type, prefix)
				continue
			}
			name := yamlName(f)
			if name == "" {
				continue
			}
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct && sections[ft.PkgPath()] {
				walk(ft, join(prefix, name))
				continue
			}
			out = append(out, join(prefix, name))
		}
	}
	walk(reflect.TypeOf(Config{}), "")
	sort.Strings(out)
	return out
}
