package config

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"
)

// Errors are several configuration errors, reported together (every bad key of every source).
type Errors []error

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return fmt.Sprintf("%d configuration errors:\n  %s", len(es), strings.Join(lines, "\n  "))
}

func (es Errors) Unwrap() []error { return es }

// joinErrors is nil, the one error, or Errors (nested Errors flattened).
func joinErrors(errs []error) error {
	var flat []error
	for _, e := range errs {
		if es, ok := e.(Errors); ok {
			flat = append(flat, es...)
		} else if e != nil {
			flat = append(flat, e)
		}
	}
	switch len(flat) {
	case 0:
		return nil
	case 1:
		return flat[0]
	}
	return Errors(flat)
}

// walk applies a mapping at prefix: foreign keys by their rows, native keys into their fields.
// foreignOnly is set inside a section that exists only in foreign layouts.
func (d *decoder) walk(m *yaml.Node, prefix string, foreignOnly bool) error {
	return d.pairs(m, prefix, func(path string, k, v *yaml.Node) error {
		return d.entry(path, k, v, foreignOnly)
	})
}

// entry applies one key of a mapping.
func (d *decoder) entry(path string, k, v *yaml.Node, foreignOnly bool) error {
	v = deref(v)
	switch path {
	case "preset": // chosen before the files apply (Resolve); only checked here
		if _, ok := presets[v.Value]; !ok {
			return d.fail(v, path, "unknown preset %q (%s)", v.Value, strings.Join(PresetNames(), ", "))
		}
		return nil
	}
	if r, ok := lookupForeign(path); ok && !opensSection(r, path, v) && !(v.Kind == yaml.MappingNode && plainSection(path)) {
		return d.foreign(r, path, k, v)
	}
	external := path == "reward_computation" && isExternalReward(v)
	if isForeignSection(path) && v.Kind == yaml.MappingNode && !external {
		return d.walk(v, path, foreignOnly || !plainSection(path))
	}
	if foreignOnly {
		return d.fail(k, "", "%s", unknownForeign(path))
	}
	return d.set(path, k, v)
}

// opensSection reports whether a prefix row's section, given as a mapping, has rows of its own
// under it (fsdp_config.* and fsdp_config.param_offload): its keys are then applied one by one,
// each by its own row or the prefix row.
func opensSection(r foreignRow, path string, v *yaml.Node) bool {
	return r.prefixRow() && deref(v).Kind == yaml.MappingNode && isForeignSection(path)
}

// plainSection reports whether path is a native section that always exists (a struct of this
// package or of the trainer's, not an optional pointer): native and foreign keys may be mixed
// in it.
func plainSection(path string) bool {
	t := reflect.TypeOf(Config{})
	for _, part := range strings.Split(path, ".") {
		if t.Kind() != reflect.Struct {
			return false
		}
		found := false
		for i := 0; i < t.NumField(); i++ {
			if yamlName(t.Field(i)) == part {
				t, found = t.Field(i).Type, true
				break
			}
		}
		if !found {
			return false
		}
	}
	return t.Kind() == reflect.Struct && sections[t.PkgPath()]
}

// unknownForeign is the error text for an unknown key in a foreign section: a hint, and the keys
// of the nearest section above it that has some.
func unknownForeign(path string) string {
	msg := fmt.Sprintf("unknown key %s", path)
	if h := foreignHint(path); h != "" {
		msg += fmt.Sprintf(" (did you mean %s, %s?)", h, describeForeign(h))
	}
	for parent := path; strings.Contains(parent, "."); {
		parent = parent[:strings.LastIndexByte(parent, '.')]
		if keys := foreignChildren(parent); len(keys) > 0 {
			msg += fmt.Sprintf(" (keys under %s: %s)", parent, strings.Join(keys, ", "))
			break
		}
	}
	if strings.HasPrefix(path, "reward_computation.") {
		msg += "; an external reward function needs type: command or type: http"
	}
	return msg
}

// foreign applies a foreign key's value by its row.
func (d *decoder) foreign(r foreignRow, path string, k, v *yaml.Node) error {
	if len(r.shared) == 1 { // a key several families share says nothing of the layout
		d.c.useLayout(r.family.Name, d.where(k))
	}
	d.c.sawForeign(path, d.where(k))
	switch {
	case r.Refuse != "":
		return d.fail(k, path, "not supported: %s", r.Refuse)
	case r.Ignore != "":
		d.c.warn(fmt.Sprintf("%s: %s (%s) has no effect here: %s", d.where(k), path, r.names(), r.Ignore))
		return nil
	}
	n := v
	if r.Value != nil {
		s, err := r.Value(v)
		if err != nil {
			return d.fail(v, path, "%v", err)
		}
		if s == "" {
			return nil // means what this program does anyway
		}
		n = &yaml.Node{Kind: yaml.ScalarNode, Value: s, Line: v.Line, Column: v.Column} // tag resolved from the value
	}
	if r.Derived {
		d.c.give(path, givenValue{node: n, where: d.where(v)})
		return nil
	}
	for _, native := range r.natives() {
		f, err := fieldAt(reflect.ValueOf(d.c).Elem(), native)
		if err != nil {
			return d.fail(k, path, "%v", err)
		}
		if n != v && f.Kind() == reflect.String {
			n.Tag = "!!str" // a translated path or name stays text whatever it looks like
		}
		if err := d.value(n, f, native); err != nil {
			var e *Error
			if errors.As(err, &e) {
				e.Key = path + " (" + native + ")"
			}
			return err
		}
	}
	return nil
}

// warn records a warning for the log: a key accepted without effect.
func (c *Config) warn(msg string) {
	for _, w := range c.warnings {
		if w == msg {
			return
		}
	}
	c.warnings = append(c.warnings, msg)
}

// Warnings are the keys accepted without effect, each naming the key, where it was given and
// what would give it effect.
func (c *Config) Warnings() []string { return append([]string(nil), c.warnings...) }

// give records a Derived foreign key's value.
func (c *Config) give(key string, v givenValue) {
	if c.given == nil {
		c.given = given{}
	}
	c.given[key] = v
}
