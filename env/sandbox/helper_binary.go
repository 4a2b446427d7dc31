package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"time"
)

// Which binary runs as the helper (helper.go).
//
// Any binary that imports this package can be the helper, the running one included
// (/proc/self/exe), which is what tests and `go run` use. But the helper is exec'd once per run,
// and everything that binary links is loaded first: bin/mtgrpo links libtorch, whose loading
// and static initialisers cost ~0.4 s of CPU and ~170 MB per start, more than the run itself
// (docs/bench/env.md). cmd/mtgrpo-sandbox is the helper alone, and `make build` puts it beside
// bin/mtgrpo, where New finds it.
//
// The trainer and the helper speak through helperSpec, so they must come from the same source:
// a helper left from an older build could ignore a field it does not know, a guarantee among
// them. New asks a helper that is not this binary for its protocol (helperPingEnv) and takes it
// only when it matches; every run's spec carries the protocol too, and the helper refuses a
// spec of another one.

// HelperName is the helper binary's name, which New looks for beside the running executable.
const HelperName = "mtgrpo-sandbox"

// selfExe is this binary, as the helper of last resort.
const selfExe = "/proc/self/exe"

// helperPingEnv makes a helper print helperGreeting and its protocol, and exit.
const (
	helperPingEnv   = "MTGRPO_SANDBOX_HELPER_PING"
	helperGreeting  = "mtgrpo sandbox helper, protocol "
	helperCheckTime = 30 * time.Second // a start under heavy load; libtorch alone took 1.6 s
)

// helperRevision names the helper's steps. Change it when they change without helperSpec
// changing (a spec change changes the protocol by itself). A variable, not a constant, only so
// that a test can link a helper of another revision (-ldflags -X).
var helperRevision = "1"

// HelperProtocol is what a trainer and its helper must agree on: helperRevision and the shape
// of helperSpec (field names and types), so that a field added to the spec makes older helpers
// of a different protocol without anyone remembering to say so.
func HelperProtocol() string {
	sum := sha256.Sum256([]byte(typeShape(reflect.TypeOf(helperSpec{}))))
	return helperRevision + "-" + hex.EncodeToString(sum[:6])
}

// typeShape writes t's structure: struct fields by name and type, recursively.
func typeShape(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Struct:
		fields := make([]string, t.NumField())
		for i := range fields {
			f := t.Field(i)
			fields[i] = f.Name + " " + typeShape(f.Type)
		}
		return "{" + strings.Join(fields, "; ") + "}"
	case reflect.Pointer:
		return "*" + typeShape(t.Elem())
	case reflect.Slice:
		return "[]" + typeShape(t.Elem())
	case reflect.Map:
		return "map[" + typeShape(t.Key()) + "]" + typeShape(t.Elem())
	}
	return t.Kind().String()
}

// helperChoice is the binary each run starts as, and in words which one and why, for the log.
type helperChoice struct {
	path string
	note string
}

// chooseHelper resolves Config.Helper. A configured helper that is missing, not executable or
// not a helper of this protocol is an error; unset, it is the helper beside the running
// executable when that one answers, else this binary.
func chooseHelper(configured string) (helperChoice, error) {
	if configured == "" {
		exe, err := os.Executable()
		if err != nil {
			return helperChoice{selfExe, fmt.Sprintf("this binary (its path is unknown: %v)", err)}, nil
		}
		return besideOrSelf(exe), nil
	}
	path, err := exec.LookPath(configured)
	if err == nil {
		path, err = filepath.Abs(path) // runs start in their own directory
	}
	if err == nil {
		err = checkHelper(path)
	}
	if err != nil {
		return helperChoice{}, fmt.Errorf("sandbox: Config.Helper %q: %w", configured, err)
	}
	return helperChoice{path, path + " (Config.Helper)"}, nil
}

// besideOrSelf picks HelperName in exe's directory if it answers as a helper of this protocol,
// else this binary; the note says which and why.
func besideOrSelf(exe string) helperChoice {
	beside := filepath.Join(filepath.Dir(exe), HelperName)
	self := "this binary, " + exe
	_, err := os.Stat(beside)
	if errors.Is(err, fs.ErrNotExist) {
		return helperChoice{selfExe, fmt.Sprintf("%s (no %s beside it: each run loads all this binary links)", self, HelperName)}
	}
	if err == nil {
		err = checkHelper(beside)
	}
	if err != nil {
		return helperChoice{selfExe, fmt.Sprintf("%s (%s beside it is not used: %v)", self, HelperName, err)}
	}
	return helperChoice{beside, beside + " (beside " + exe + ")"}
}

// checkHelper starts path as a helper asked for its protocol and checks the answer.
func checkHelper(path string) error {
	ctx, cancel := context.WithTimeout(context.Background(), helperCheckTime)
	defer cancel()
	cmd := exec.CommandContext(ctx, path)
	cmd.Args = []string{HelperName}
	cmd.Env = []string{helperPingEnv + "=1"}
	cmd.WaitDelay = time.Second
	var out, errOut capped
	out.max, errOut.max = 256, 256
	cmd.Stdout, cmd.Stderr = &out, &errOut
	runErr := cmd.Run()
	answer := strings.TrimSpace(out.buf.String())
	want := HelperProtocol()
	switch {
	case answer == helperGreeting+want && runErr == nil:
		return nil
	case strings.HasPrefix(answer, helperGreeting):
		return fmt.Errorf("%s is the helper of another build (protocol %s, this build's is %s): rebuild it from the same source (make build)",
			path, strings.TrimPrefix(answer, helperGreeting), want)
	}
	why := fmt.Sprintf("stdout %q, stderr %q", answer, strings.TrimSpace(errOut.buf.String()))
	if ctx.Err() != nil {
		why = fmt.Sprintf("no answer within %v, ", helperCheckTime) + why
	} else if runErr != nil {
		why = runErr.Error() + ", " + why
	}
	return fmt.Errorf("%s did not answer as the sandbox helper (%s): it should be a build of cmd/%s", path, why, HelperName)
}
