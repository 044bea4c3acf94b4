package models

import "testing"

func TestArchShapesAndParams(t *testing.T) {
	tests := []struct {
		name   string
		params int
		shapes []Shape // selected: after layer index -> shape
		at     []int
	}{
		// Papernot et al.'s net: 16*64+16 + 32*16*16+32 + 512*32+32 + 32*10+10.
		{"mnist-cnn", 1040 + 8224 + 16416 + 330, []Shape{{16, 14, 14}, {16, 13, 13}, {32, 5, 5}, {32, 4, 4}}, []int{1, 3, 4, 6}},
		// Table 1: 28+4-3 /2 +1 = 15 -> pool 14 -> (14-3)/2+1 = 6 -> pool 5.
		{"mnist-cnn-3x3", 16*9 + 16 + 32*16*9 + 32 + 800*32 + 32 + 330, []Shape{{16, 15, 15}, {16, 14, 14}, {32, 6, 6}, {32, 5, 5}}, []int{1, 3, 4, 6}},
		{"cifar-cnn", (32*3*9 + 32) + (32*32*9 + 32) + (64*32*9 + 64) + (64*64*9 + 64) + (128*64*9 + 128) + (128*128*9 + 128) + (2048*128 + 128) + 1290,
			[]Shape{{32, 32, 32}, {32, 16, 16}, {64, 8, 8}, {128, 4, 4}}, []int{2, 6, 11, 16}},
		{"mlp", 7850 + 110, []Shape{{784, 1, 1}, {10, 1, 1}}, []int{1, 3}},
		{"linear", 7850, []Shape{{784, 1, 1}, {10, 1, 1}}, []int{1, 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := ArchByName(tc.name)
			if err != nil {
				t.Fatal(err)
			}
			if got := a.NumParams(); got != tc.params {
				t.Errorf("NumParams = %d, want %d", got, tc.params)
			}
			shapes, err := a.Shapes()
			if err != nil {
				t.Fatal(err)
			}
			for i, at := range tc.at {
				if shapes[at] != tc.shapes[i] {
					t.Errorf("shape after layer %d = %v, want %v", at-1, shapes[at], tc.shapes[i])
				}
			}
		})
	}
	if _, err := ArchByName("resnet"); err == nil {
		t.Error("unknown model accepted")
	}
}
