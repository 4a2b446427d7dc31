package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hydraDir writes files (path → contents) into a new directory and returns it.
func hydraDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func resolveFile(path string) (*Config, error) {
	return Resolve(Sources{Files: []string{path}, LookupEnv: func(string) (string, bool) { return "", false }})
}

// verl's own layout composes as Hydra composes it: verl's ppo_trainer (not beside the file) is
// what the defaults follow; a group default loads GROUP/OPTION.yaml into its package
// (actor@actor_rollout_ref.actor), whose own list climbs with ../ into a package under it; an
// optional entry that is missing is skipped; Hydra's own groups are warned about; overriding one
// of verl's groups with verl's own choice has nothing to do.
func TestHydraVerlLayout(t *testing.T) {
	dir := hydraDir(t, map[string]string{
		"run.yaml": `defaults:
  - ppo_trainer
  - actor@actor_rollout_ref.actor: my_actor
  - optional extra: none
  - override hydra/launcher: basic
  - override rollout@actor_rollout_ref.rollout: rollout
  - _self_
model: m
data:
  train_batch_size: 6
`,
		"actor/my_actor.yaml": "defaults:\n  - ../optim@optim: fast\n  - _self_\nppo_epochs: 2\n",
		"optim/fast.yaml":     "lr: 3e-6\n",
	})
	c, err := resolveFile(filepath.Join(dir, "run.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Update.Epochs != 2 || c.Optim.LR != 3e-6 || c.Rollout.Tasks != 6 {
		t.Errorf("epochs %d, lr %g, tasks %d; want 2, 3e-6, 6", c.Update.Epochs, c.Optim.LR, c.Rollout.Tasks)
	}
	if got, want := c.Origin("optim.lr"), filepath.Join(dir, "optim", "fast.yaml")+":1"; got != want {
		t.Errorf("optim.lr from %s, want %s", got, want)
	}
	if w := strings.Join(c.Warnings(), "\n"); !strings.Contains(w, "run.yaml:5: defaults entry hydra/launcher: Hydra's own settings have no effect here") {
		t.Errorf("warnings %q", w)
	}
}

// The order of composition is Hydra's: _self_ where it stands, last when absent; an override
// changes an included config's choice in its place; a list of options applies each; null is a
// placeholder; a `# @package` line and _global_ place a config's keys.
func TestHydraComposition(t *testing.T) {
	files := map[string]string{
		"self_first.yaml": "defaults:\n  - _self_\n  - more\nmodel: m\nrollout:\n  group: 3\n",
		"self_last.yaml":  "defaults:\n  - more\nmodel: m\nrollout:\n  group: 3\n",
		"more.yaml":       "rollout:\n  group: 5\n",
		"override.yaml":   "defaults:\n  - base\n  - override size: big\nmodel: m\n",
		"base.yaml":       "defaults:\n  - size: small\n  - _self_\nrollout:\n  group: 2\n",
		"size/small.yaml": "# @package rollout\ntasks: 2\n",
		"size/big.yaml":   "# @package rollout\ntasks: 4\ngroup: 7\n",
		"list.yaml":       "defaults:\n  - size: [big, small]\n  - opt: null\nmodel: m\n",
		"global.yaml":     "defaults:\n  - sub/x@_global_\nmodel: m\n",
		"sub/x.yaml":      "rollout:\n  tasks: 9\n",
	}
	dir := hydraDir(t, files)
	for name, want := range map[string][2]int{ // rollout.group, rollout.tasks
		"self_first.yaml": {5, 0}, "self_last.yaml": {3, 0},
		// base chooses small (tasks 2) then sets group 2; the override makes its choice big (tasks 4,
		// group 7) in small's place, before base's own keys.
		"override.yaml": {2, 4},
		"list.yaml":     {7, 2},
		"global.yaml":   {0, 9},
	} {
		c, err := resolveFile(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		d := Defaults()
		applyPreset(d, PresetGeneral)
		if want[0] == 0 {
			want[0] = d.Rollout.GroupSize
		}
		if want[1] == 0 {
			want[1] = d.Rollout.Tasks
		}
		if c.Rollout.GroupSize != want[0] || c.Rollout.Tasks != want[1] {
			t.Errorf("%s: group %d, tasks %d; want %d and %d", name, c.Rollout.GroupSize, c.Rollout.Tasks, want[0], want[1])
		}
	}
}

// A file that includes itself, or two that include each other, is an error naming the chain,
// not a stack overflow; every entry Hydra has is honoured or refused by name, with its line.
func TestHydraRefusals(t *testing.T) {
	dir := hydraDir(t, map[string]string{
		"self.yaml":       "defaults:\n  - self\n",
		"a.yaml":          "model: m\ndefaults:\n  - b\n",
		"b.yaml":          "defaults:\n  - _self_\n  - a\n",
		"twice.yaml":      "defaults:\n  - size: small\n  - size: big\n",
		"interp.yaml":     "defaults:\n  - size: ${x}_big\n",
		"delete.yaml":     "defaults:\n  - size: small\n  - ~size\n",
		"keyword.yaml":    "defaults:\n  - required size: small\n",
		"megatron.yaml":   "defaults:\n  - ppo_trainer\n  - override actor@actor_rollout_ref.actor: megatron_actor\n",
		"orphan.yaml":     "defaults:\n  - override size: big\n",
		"missing.yaml":    "defaults:\n  - size: huge\n",
		"rename.yaml":     "defaults:\n  - size@a:b: small\n",
		"pkg.yaml":        "defaults:\n  - size@_nowhere_: small\n",
		"notlist.yaml":    "defaults: base\n",
		"size/small.yaml": "rollout:\n  tasks: 2\n",
		"size/big.yaml":   "rollout:\n  tasks: 4\n",
	})
	p := func(name string) string { return filepath.Join(dir, name) }
	for name, want := range map[string]string{
		"self.yaml":     p("self.yaml") + ":2: defaults: entry self includes " + p("self.yaml") + " again, a cycle: " + p("self.yaml") + " → " + p("self.yaml"),
		"a.yaml":        p("b.yaml") + ":3: defaults: entry a includes " + p("a.yaml") + " again, a cycle: " + p("a.yaml") + " → " + p("b.yaml") + " → " + p("a.yaml"),
		"twice.yaml":    p("twice.yaml") + ":3: defaults: size is chosen a second time (first at " + p("twice.yaml") + ":2): write `override size`",
		"interp.yaml":   ":2: defaults: entry a mapping: interpolation (${x}_big) is not supported",
		"delete.yaml":   ":3: defaults: entry \"~size\": deleting an entry (~GROUP) is not supported",
		"keyword.yaml":  `unknown keyword "required" (override, optional)`,
		"megatron.yaml": ":3: defaults: override actor: megatron_actor: verl's own choice for actor is dp_actor",
		"orphan.yaml":   ":2: defaults: override size: no config included here chooses size",
		"missing.yaml":  ":2: defaults: entry size: huge: " + filepath.Join(dir, "size", "huge.yaml") + ": no such file",
		"rename.yaml":   "renaming a package (size@a:b) is not supported",
		"pkg.yaml":      "unknown package keyword _nowhere_ (_here_, _global_, _group_)",
		"notlist.yaml":  ":1: defaults: want a Hydra defaults list, got \"base\"",
	} {
		_, err := resolveFile(p(name))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v\nwant %s", name, err, want)
		}
	}
}

// A recursive anchor is refused by name wherever it stands, and an alias bomb by its size.
func TestRecursiveAnchors(t *testing.T) {
	bomb := "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	prev := "a"
	for _, n := range []string{"b", "c", "d", "e", "f", "g", "h"} {
		bomb += n + ": &" + n + " [*" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + ", *" + prev + "]\n"
		prev = n
	}
	dir := hydraDir(t, map[string]string{
		"self.yaml":    "rollout: &r\n  tasks: 3\n  condenser: *r\n",
		"list.yaml":    "env: &e [*e]\n",
		"foreign.yaml": "actor_rollout_ref: &a\n  actor: *a\n",
		"bomb.yaml":    bomb,
	})
	for name, want := range map[string]string{
		"self.yaml":    "self.yaml:3: *r is inside the value of its own anchor &r (line 1): a recursive value",
		"list.yaml":    "list.yaml:1: *e is inside the value of its own anchor &e (line 1)",
		"foreign.yaml": "foreign.yaml:2: *a is inside the value of its own anchor &a",
		"bomb.yaml":    "bomb.yaml: its aliases expand to more than 1048576 values",
	} {
		_, err := resolveFile(filepath.Join(dir, name))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v\nwant %s", name, err, want)
		}
	}
}
