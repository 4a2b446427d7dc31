package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/mtgrpo/mtgrpo/internal/bounded"
)

// Sources are the layers of one resolution. The order is: defaults, the preset, the YAML files
// in order, environment variables (EnvVars), then Overrides in order (flags and --set).
type Sources struct {
	// Base replaces the defaults and the preset: a resumed run starts from the configuration it
	// was saved with, and what is given now applies on top.
	Base *Config
	// Preset is --preset; empty: $PRESET, else the first file's preset key, else general.
	Preset string
	// Docs are YAML documents given in memory (the demo's embedded configuration), applied
	// before Files.
	Docs []Doc
	// Files are YAML files; nil: the comma-separated list in $CONFIG.
	Files []string
	// LookupEnv reads environment variables (os.LookupEnv; tests pass their own).
	LookupEnv func(string) (string, bool)
	// Overrides are key=value settings with the flag that gave them.
	Overrides []Override
}

// Doc is a YAML document and the name errors give it.
type Doc struct {
	Name string
	Data []byte
}

// Override sets one key; Where names the flag ("--lr", "--set") in errors.
type Override struct {
	Key, Value, Where string
}

// ParseSet reads a --set (or positional) "key=value" argument.
//
// Hydra's forms are accepted: +key=value and ++key=value set the key as key=value does.
func ParseSet(arg, where string) (Override, error) {
	k, v, ok := strings.Cut(arg, "=")
	k = strings.TrimLeft(strings.TrimSpace(k), "+")
	if strings.HasPrefix(k, "~") {
		return Override{}, fmt.Errorf("%s %q: Hydra's ~key deletes a key; here a key is left out by not giving it", where, arg)
	}
	if !ok || k == "" {
		return Override{}, fmt.Errorf("%s %q: want key=value (e.g. rollout.tasks=16 or algorithm.adv_estimator=mt_grpo)", where, arg)
	}
	return Override{Key: k, Value: v, Where: where}, nil
}

// Resolve builds the configuration from its sources and validates it. Every bad key of every
// source is reported at once (Errors).
func Resolve(s Sources) (*Config, error) {
	c, err := ResolveUnchecked(s)
	if err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// ResolveUnchecked builds the configuration without validating the result (every value read is
// still checked): enough to find a run's directory before its checkpoint's configuration is read.
func ResolveUnchecked(s Sources) (*Config, error) {
	if s.LookupEnv == nil {
		s.LookupEnv = os.LookupEnv
	}
	files := s.Files
	if files == nil {
		if v, ok := s.LookupEnv("CONFIG"); ok && v != "" {
			files = strings.Split(v, ",")
		}
	}
	// Each file is read once, for its preset and its settings alike: a --config given through a
	// pipe or process substitution (<(...), /dev/stdin) has one reading.
	var errs []error
	docs := append([]Doc(nil), s.Docs...)
	for _, f := range files {
		f = strings.TrimSpace(f)
		b, err := bounded.ReadFile(f, bounded.Small)
		if err != nil {
			errs = append(errs, &Error{Where: f, Err: errors.Unwrap(err)})
			continue
		}
		docs = append(docs, Doc{Name: f, Data: b})
	}
	c := s.Base
	if c == nil {
		name, where := presetOf(s, docs)
		c = Defaults()
		if err := applyPreset(c, name); err != nil {
			return nil, joinErrors(append(errs, &Error{Where: where, Key: "preset", Err: err}))
		}
	}
	for _, d := range docs {
		errs = append(errs, c.loadYAML(d.Name, d.Data))
	}
	errs = append(errs, c.applyEnv(s.LookupEnv))
	for _, o := range s.Overrides {
		errs = append(errs, c.Set(o.Key, o.Value, o.Where))
	}
	if err := joinErrors(errs); err != nil {
		return nil, err
	}
	if err := c.finish(); err != nil {
		return nil, err
	}
	return c, nil
}

// presetOf picks the preset and says where from: --preset, $PRESET, the first document (the
// in-memory ones, then the files) that names one, general.
func presetOf(s Sources, docs []Doc) (name, where string) {
	if s.Preset != "" {
		return s.Preset, "--preset"
	}
	if v, ok := s.LookupEnv("PRESET"); ok && v != "" {
		return v, "$PRESET"
	}
	for _, d := range docs {
		var top struct {
			Preset string `yaml:"preset"`
		}
		if yaml.Unmarshal(d.Data, &top) == nil && top.Preset != "" {
			return top.Preset, d.Name
		}
	}
	return PresetGeneral, "default"
}

// Set sets a key given as text (a flag, a variable, --set), native or foreign (docs/config.md);
// the value is read as YAML (16, 1e-6, true, [a, b], {k: v}).
func (c *Config) Set(key, value, where string) error {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(value), &doc); err != nil {
		return &Error{Where: where, Key: key, Err: fmt.Errorf("cannot read %q as a value: %v", value, err)}
	}
	n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"}
	if len(doc.Content) > 0 {
		n = doc.Content[0]
	}
	if value == "" {
		n = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: ""} // key= clears a string
	}
	if key == "preset" {
		return &Error{Where: where, Key: key, Err: fmt.Errorf("choose the preset with --preset or $PRESET (it applies before the files)")}
	}
	d := &decoder{c: c, what: where}
	k := &yaml.Node{Kind: yaml.ScalarNode, Value: key}
	var err error
	if r, ok := lookupForeign(key); ok && opensSection(r, key, n) {
		err = d.walk(n, key, !plainSection(key))
	} else if ok {
		err = d.foreign(r, key, k, n)
	} else if top := strings.Split(key, ".")[0]; isForeignSection(top) && !plainSection(top) && !isSeedSection(key) {
		if _, ferr := fieldAt(reflect.ValueOf(Defaults()).Elem(), key); ferr != nil {
			err = &Error{Where: where, Err: errors.New(unknownForeign(key))}
		} else {
			err = d.set(key, k, n)
		}
	} else {
		err = d.set(key, k, n)
	}
	return joinErrors(append(d.errs, err))
}

// isSeedSection reports whether key=value sets a native key that shares its top-level name with
// a foreign section (reward_computation.url of an external reward function).
func isSeedSection(key string) bool {
	_, foreign := lookupForeign(key)
	return strings.HasPrefix(key, "reward_computation.") && !foreign
}

// ReadSaved reads a configuration saved in a run directory or checkpoint (config.yaml): every key
// is checked as in any file, and its preset is kept as recorded.
func ReadSaved(path string) (*Config, error) {
	b, err := bounded.ReadFile(path, bounded.Small)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	c := Defaults()
	var top struct {
		Preset string `yaml:"preset"`
	}
	if err := yaml.Unmarshal(b, &top); err == nil {
		c.Preset = top.Preset
	}
	if err := c.loadYAML(path, b); err != nil {
		return nil, err
	}
	c.origin = nil // a saved configuration is one source: report it as such
	for _, k := range Keys() {
		c.setOrigin(k, path)
	}
	return c, nil
}

// Clone copies the configuration (through YAML, so nothing is shared).
func (c *Config) Clone() *Config {
	b, err := yaml.Marshal(c)
	if err != nil {
		panic(fmt.Sprintf("config: marshal: %v", err)) // every field is a plain value
	}
	out := Defaults()
	if err := yaml.Unmarshal(b, out); err != nil {
		panic(fmt.Sprintf("config: unmarshal: %v", err))
	}
	out.origin = map[string]string{}
	for k, v := range c.origin {
		out.origin[k] = v
	}
	out.warnings = append([]string(nil), c.warnings...)
	return out
}

// YAML is the configuration as config.yaml holds it.
func (c *Config) YAML() []byte {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(c); err != nil {
		panic(fmt.Sprintf("config: marshal: %v", err)) // every field is a plain value
	}
	enc.Close()
	return b.Bytes()
}

// Compact is the configuration in a few lines for the start of a log: one line per section,
// leaving out what is empty, zero or off (config.yaml has everything).
func (c *Config) Compact() string {
	var root yaml.Node
	if err := root.Encode(c); err != nil {
		return fmt.Sprintf("config: %v", err)
	}
	if c.LoRA.Rank == 0 { // no adapters: the section's other defaults say nothing
		dropKey(&root, "lora")
	}
	prune(&root)
	for i := 1; i < len(root.Content); i += 2 {
		flow(root.Content[i])
	}
	b, err := yaml.Marshal(&root)
	if err != nil {
		return fmt.Sprintf("config: %v", err)
	}
	return strings.TrimRight(string(b), "\n")
}

// dropKey removes key from the mapping n.
func dropKey(n *yaml.Node, key string) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			n.Content = append(n.Content[:i], n.Content[i+2:]...)
			return
		}
	}
}

// prune drops the mapping entries whose value is empty, an integer 0, false or a zero duration,
// and the mappings left empty. Float zeros stay: temperature 0 means greedy.
func prune(n *yaml.Node) bool {
	switch n.Kind {
	case yaml.MappingNode:
		var kept []*yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if !prune(n.Content[i+1]) {
				kept = append(kept, n.Content[i], n.Content[i+1])
			}
		}
		n.Content = kept
		return len(kept) == 0
	case yaml.SequenceNode:
		return len(n.Content) == 0
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!int":
			return n.Value == "0"
		case "!!bool":
			return n.Value == "false"
		case "!!null":
			return true
		case "!!str":
			return n.Value == "" || n.Value == "0s"
		}
	}
	return false
}

func flow(n *yaml.Node) {
	if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode {
		n.Style = yaml.FlowStyle
	}
	for _, ch := range n.Content {
		flow(ch)
	}
}

// Diff lists the keys whose values differ between a and b as "key: a → b".
func Diff(a, b *Config) []string {
	var out []string
	ca, cb := reflect.ValueOf(a.Clone()).Elem(), reflect.ValueOf(b.Clone()).Elem()
	for _, k := range Keys() {
		va, _ := fieldAt(ca, k) // allocates nil sections in the clones: they read as zero values
		vb, _ := fieldAt(cb, k)
		sa, sb := fmt.Sprint(va.Interface()), fmt.Sprint(vb.Interface())
		if va.Kind() == reflect.Pointer {
			sa, sb = ptrString(va), ptrString(vb)
		}
		if sa != sb {
			out = append(out, fmt.Sprintf("%s: %s → %s", k, sa, sb))
		}
	}
	return out
}

func ptrString(v reflect.Value) string {
	if v.IsNil() {
		return "none"
	}
	return fmt.Sprint(v.Elem().Interface())
}
