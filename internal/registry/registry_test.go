package registry

import (
	"slices"
	"sync"
	"testing"
)

type kind string

func TestTable(t *testing.T) {
	tb := New[kind, int]("test: kind")
	if _, ok := tb.Lookup("a"); ok || len(tb.Kinds()) != 0 {
		t.Fatal("empty table finds something")
	}
	var wg sync.WaitGroup
	for i, k := range []kind{"relu", "conv", "dense", "avgpool"} {
		wg.Add(1)
		go func() { defer wg.Done(); tb.Register(k, i) }()
	}
	wg.Wait()
	if got, want := tb.Kinds(), []kind{"avgpool", "conv", "dense", "relu"}; !slices.Equal(got, want) {
		t.Errorf("kinds %v, want %v", got, want)
	}
	if v, ok := tb.Lookup("dense"); !ok || v != 2 {
		t.Errorf("dense: %v %v, want 2 true", v, ok)
	}
	defer func() {
		if r := recover(); r != `test: kind "conv" registered twice` {
			t.Errorf("duplicate registration: recovered %v", r)
		}
	}()
	tb.Register("conv", 9)
	t.Error("duplicate registration did not panic")
}
