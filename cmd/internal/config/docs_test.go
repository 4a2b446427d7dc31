package config

import (
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

const docsPath = "../../../docs/config.md"

// keyTable is docs/config.md's table of native keys: every key with its value in the general
// preset.
func keyTable() string {
	c := Defaults()
	if err := applyPreset(c, PresetGeneral); err != nil {
		panic(err)
	}
	var b strings.Builder
	b.WriteString("| key | general preset |\n|---|---|\n")
	root := reflect.ValueOf(c).Elem()
	for _, k := range Keys() {
		v, _ := fieldAt(root, k)
		val := fmt.Sprint(v.Interface())
		switch {
		case v.Kind() == reflect.Pointer && v.IsNil(), v.Kind() == reflect.Map && v.Len() == 0, v.Kind() == reflect.Slice && v.Len() == 0:
			val = ""
		case v.Kind() == reflect.String && val == "":
			val = `""`
		}
		fmt.Fprintf(&b, "| `%s` | %s |\n", k, val)
	}
	return b.String()
}

// familyTable is docs/config.md's table of one foreign family, from its rows.
func familyTable(f *Family) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### %s\n\n%s\n\n", f.Title, f.Doc)
	b.WriteString("| key | native key | note |\n|---|---|---|\n")
	for _, k := range f.Keys {
		native, note := "", k.Note
		switch {
		case k.Native != "":
			native = "`" + strings.ReplaceAll(k.Native, ", ", "`, `") + "`"
		case k.Derived:
			native = "(combined)"
		case k.Ignore != "":
			native, note = "no effect (warning)", k.Ignore
		case k.Refuse != "":
			native, note = "refused", k.Refuse
		default:
			native = "(checked only)"
		}
		if k.Value != nil && k.Native == "" && k.Note == "" && !k.Derived {
			note = checkedNote(k)
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", k.Key, native, strings.ReplaceAll(note, "|", "\\|"))
	}
	return b.String()
}

// checkedNote is a value-checked row's note: the error its refused values get.
func checkedNote(k ForeignKey) string {
	_, err := k.Value(&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "\x00"})
	if err == nil {
		return ""
	}
	msg := err.Error()
	if i := strings.Index(msg, ": "); i >= 0 {
		msg = msg[i+2:]
	}
	return msg
}

// slug is a family's name in its docs/config.md marker.
func slug(name string) string {
	return strings.ToLower(regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(name, "-"))
}

// envTable is docs/config.md's table of environment variables, from EnvVars.
func envTable() string {
	var b strings.Builder
	b.WriteString("| variable | sets | meaning |\n|---|---|---|\n")
	for _, v := range EnvVars {
		key := "`" + v.Key + "`"
		if v.Key == "" {
			key = "`device`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", v.Name, key, v.Doc)
	}
	return b.String()
}

// docs/config.md's generated tables match the code (MTGRPO_UPDATE_DOCS=1 rewrites them).
func TestDocsTables(t *testing.T) {
	b, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	tables := map[string]string{"keys": keyTable(), "env": envTable()}
	for _, f := range Families {
		tables["family "+slug(f.Name)] = familyTable(f)
	}
	for name, want := range tables {
		re := regexp.MustCompile(`(?s)(<!-- ` + name + ` -->\n)(.*?)(<!-- /` + name + ` -->)`)
		m := re.FindStringSubmatch(doc)
		if m == nil {
			t.Errorf("%s: no <!-- %s --> ... <!-- /%s --> section", docsPath, name, name)
			continue
		}
		if m[2] != want {
			if os.Getenv("MTGRPO_UPDATE_DOCS") == "1" {
				doc = strings.Replace(doc, m[0], m[1]+want+m[3], 1)
				continue
			}
			t.Errorf("%s: the %s table differs from the code; regenerate with MTGRPO_UPDATE_DOCS=1 go test -run TestDocsTables ./cmd/internal/config/", docsPath, name)
		}
	}
	if os.Getenv("MTGRPO_UPDATE_DOCS") == "1" {
		if err := os.WriteFile(docsPath, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
