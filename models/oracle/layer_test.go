package oracle

import (
	"slices"
	"strings"
	"testing"

	"github.com/dpfil/dpfil/models"
)

// TestNodesForEveryKind: every layer kind of the engine has Gorgonia nodes here (a
// kind added to models without its node_<kind>.go fails this), and no nodes exist for
// a kind the engine does not know.
func TestNodesForEveryKind(t *testing.T) {
	if got, want := NodeKinds(), models.LayerKinds(); !slices.Equal(got, want) {
		t.Errorf("kinds with Gorgonia nodes %v, engine kinds %v", got, want)
	}
	if _, err := NodeOf("nosuch"); err == nil || !strings.Contains(err.Error(), `"nosuch" has no Gorgonia nodes`) {
		t.Errorf("unknown kind: %v", err)
	}
}

// TestAppendUnknownKind: a layer of an unknown kind is an error, not a panic.
func TestAppendUnknownKind(t *testing.T) {
	gr, err := NewGraph("t", models.Shape{C: 1, H: 2, W: 2}, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gr.Append(models.LayerSpec{Kind: "nosuch"}, gr.Input()); err == nil || !strings.Contains(err.Error(), "nosuch") {
		t.Errorf("Append of an unknown kind: %v", err)
	}
}

// TestRegisterNodeTwicePanics: a kind's nodes are registered once.
func TestRegisterNodeTwicePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("registering conv's nodes twice did not panic")
		}
	}()
	registerNode(models.KindConv, convNode)
}
