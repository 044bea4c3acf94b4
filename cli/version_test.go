package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/train"
)

// version reports the same build information as result.json's "dpfil" record, and
// says so when no commit was stamped (test binaries are built without VCS stamping).
func TestVersion(t *testing.T) {
	out, err := runCLI(t, newRootCmd(), "version", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var bi train.Binary
	if err := json.Unmarshal([]byte(out), &bi); err != nil {
		t.Fatalf("version --json: %v\n%s", err, out)
	}
	if v := train.Version(); bi.Commit != v.Revision || bi.Modified != v.Modified || bi.GoVersion == "" {
		t.Errorf("version %+v disagrees with train.Version %+v", bi, v)
	}
	human, err := runCLI(t, newRootCmd(), "version")
	if err != nil {
		t.Fatal(err)
	}
	if bi.Commit == "" && !strings.Contains(human, "no commit stamped") || bi.Commit != "" && !strings.Contains(human, bi.Commit) {
		t.Errorf("human version %q does not say which commit it is", human)
	}
}
