package hub

import (
	"fmt"
	"regexp"
	"strings"
)

// DefaultRevision is the branch an id without @REVISION names.
const DefaultRevision = "main"

// ID is a model on the Hub: Repo is ORG/NAME, Revision a branch, a tag or a commit.
type ID struct {
	Repo, Revision string
}

func (id ID) String() string {
	if id.Revision == DefaultRevision {
		return id.Repo
	}
	return id.Repo + "@" + id.Revision
}

// repoPart is one half of ORG/NAME as the Hub allows it: letters, digits, -, _ and ., not
// starting or ending with - or ., without -- or ..
var repoPart = regexp.MustCompile(`^[A-Za-z0-9_]([A-Za-z0-9_.-]{0,94}[A-Za-z0-9_])?$`)

// commitPattern is a full commit hash.
var commitPattern = regexp.MustCompile(`^[0-9a-f]{40}$`)

// ParseID reads ORG/NAME or ORG/NAME@REVISION; ok is false for anything else (paths such as
// ./model, /abs/model or a/b/c are never ids, nor is an id whose revision git would refuse).
func ParseID(s string) (ID, bool) {
	id, isID, err := parseID(s)
	return id, isID && err == nil
}

// parseID reads an id: isID says that s has the form ORG/NAME[@REVISION]; err that its
// revision is not one (checkRevision).
func parseID(s string) (id ID, isID bool, err error) {
	repo, rev, hasRev := strings.Cut(s, "@")
	if !hasRev {
		rev = DefaultRevision
	}
	org, name, ok := strings.Cut(repo, "/")
	if !ok {
		return ID{}, false, nil
	}
	for _, p := range []string{org, name} {
		if !repoPart.MatchString(p) || strings.Contains(p, "--") || strings.Contains(p, "..") {
			return ID{}, false, nil
		}
	}
	if err := checkRevision(rev); err != nil {
		return ID{}, true, fmt.Errorf("the revision %q is not a branch, tag or commit name: %v", rev, err)
	}
	return ID{Repo: repo, Revision: rev}, true, nil
}

// maxRevision bounds a revision's length (a file name's, since it names one under refs/).
const maxRevision = 255

// checkRevision checks a revision as git checks a ref name (git check-ref-format), since it
// becomes a path under the cache's refs/: no component "." or "..", none that begins with "." or
// ends with ".lock", no empty component (a leading, trailing or doubled "/"), no "..", no "@{",
// not "@" alone, no ASCII control character, space, ~ ^ : ? * [ or \, not ending with ".".
func checkRevision(rev string) error {
	switch {
	case rev == "":
		return fmt.Errorf("it is empty")
	case len(rev) > maxRevision:
		return fmt.Errorf("it is longer than %d bytes", maxRevision)
	case rev == "@":
		return fmt.Errorf(`"@" alone is no ref`)
	case strings.Contains(rev, ".."):
		return fmt.Errorf(`it holds ".."`)
	case strings.Contains(rev, "@{"):
		return fmt.Errorf(`it holds "@{"`)
	case strings.HasSuffix(rev, "."):
		return fmt.Errorf(`it ends with "."`)
	}
	for _, r := range rev {
		if r < 0x20 || r == 0x7f || strings.ContainsRune(" ~^:?*[\\", r) {
			return fmt.Errorf("it holds %q", r)
		}
	}
	for _, part := range strings.Split(rev, "/") {
		switch {
		case part == "":
			return fmt.Errorf(`it has an empty part (a leading, trailing or doubled "/")`)
		case strings.HasPrefix(part, "."):
			return fmt.Errorf("its part %q begins with \".\"", part)
		case strings.HasSuffix(part, ".lock"):
			return fmt.Errorf("its part %q ends with \".lock\"", part)
		}
	}
	return nil
}

// folder is the repository's directory in the cache: models--ORG--NAME.
func (id ID) folder() string { return "models--" + strings.ReplaceAll(id.Repo, "/", "--") }

// isCommit reports whether the revision is a full commit hash.
func (id ID) isCommit() bool { return commitPattern.MatchString(id.Revision) }

// checkCommit checks a commit hash the Hub sent before it becomes a directory name.
func checkCommit(c string) error {
	if !commitPattern.MatchString(c) {
		return fmt.Errorf("the Hub answered with a malformed commit %q", c)
	}
	return nil
}
