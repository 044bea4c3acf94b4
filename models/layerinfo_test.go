package models_test

import (
	"slices"
	"testing"

	"github.com/dpfil/dpfil/models"
)

func TestLayerKindInfos(t *testing.T) {
	infos, err := models.LayerKindInfos()
	if err != nil {
		t.Fatal(err)
	}
	kinds := models.LayerKinds()
	if len(infos) != len(kinds) {
		t.Fatalf("%d infos for %d kinds", len(infos), len(kinds))
	}
	for i, in := range infos {
		l, err := models.LayerOf(kinds[i])
		if err != nil {
			t.Fatal(err)
		}
		if in.Kind != kinds[i] || in.Doc != l.Doc() || in.Fields == nil || len(l.Fields()) > 0 && !slices.Equal(in.Fields, l.Fields()) {
			t.Errorf("info %d: %+v", i, in)
		}
	}
}
