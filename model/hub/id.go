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
// ./model, /abs/model or a/b/c are never ids).
func ParseID(s string) (ID, bool) {
	repo, rev, hasRev := strings.Cut(s, "@")
	if hasRev && (rev == "" || strings.Contains(rev, "..") || strings.HasPrefix(rev, "/")) {
		return ID{}, false
	}
	if !hasRev {
		rev = DefaultRevision
	}
	org, name, ok := strings.Cut(repo, "/")
	if !ok {
		return ID{}, false
	}
	for _, p := range []string{org, name} {
		if !repoPart.MatchString(p) || strings.Contains(p, "--") || strings.Contains(p, "..") {
			return ID{}, false
		}
	}
	return ID{Repo: repo, Revision: rev}, true
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
