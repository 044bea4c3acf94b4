package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestAttackReconnCommand(t *testing.T) {
	out, stderr, err := execCLI(t, "attack", "reconn", "--quiet", "--json", "--fixed", "9", "--pool", "20", "--shadows", "6",
		"--targets", "2", "--steps", "2", "--fil-coords", "2", "--reconstructor", "ridge", "--out", t.TempDir())
	if err != nil {
		t.Fatalf("attack reconn: %v\n%s", err, stderr)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("invalid JSON: %v\n%s", err, out)
	}
	if m["shadows"].(float64) != 6 || len(m["targets"].([]any)) != 2 || len(m["files"].([]any)) != 2 {
		t.Fatalf("result: %v", m)
	}
	human, _, err := execCLI(t, "attack", "reconn", "--quiet", "--fixed", "9", "--pool", "20", "--shadows", "3",
		"--targets", "1", "--steps", "1", "--fil-coords", "0", "--rec-epochs", "2", "--hidden", "4")
	if err != nil || !strings.Contains(human, "RecoNN on mnist-embedded") {
		t.Fatalf("human output: %v\n%s", err, human)
	}
	for _, args := range [][]string{{"--repeats", "2"}, {"--fixed", "0"}, {"--reconstructor", "gan"}, {"--targets", "100000"}} {
		if _, _, err := execCLI(t, append([]string{"attack", "reconn", "--quiet", "--shadows", "2", "--steps", "1"}, args...)...); err == nil {
			t.Errorf("attack reconn %v accepted", args)
		}
	}
}
