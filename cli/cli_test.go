package cli

import (
	"bytes"
	"testing"
)

// execCLI runs a fresh command tree in-process with args and returns stdout, stderr
// and the error Execute returned. Every command group's tests go through it.
func execCLI(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	root := newRootCmd()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs(args)
	err = root.Execute()
	return out.String(), errb.String(), err
}
