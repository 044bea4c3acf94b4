package plot

import (
	"image"
	"slices"
	"testing"
)

// inkIn counts the non-white pixels of img inside r.
func inkIn(img *image.RGBA, r image.Rectangle) int {
	n := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if c := img.RGBAAt(x, y); c.R < 200 || c.G < 200 || c.B < 200 {
				n++
			}
		}
	}
	return n
}

// TestImageGridLabels: a labelled grid writes its title, row labels and captions in
// margins of their own (ink there, none without them) and leaves every image pixel
// exact; too many labels is an error.
func TestImageGridLabels(t *testing.T) {
	const h, w, scale, pad = 4, 5, 3, 2
	var imgs [][]float32
	for k := 0; k < 6; k++ {
		im := make([]float32, h*w)
		for i := range im {
			im[i] = float32((i*(k+2)+k)%7) / 6 // distinct images
		}
		imgs = append(imgs, im)
	}
	plain, err := ImageGrid(imgs, 1, h, w, GridOptions{Cols: 3, Scale: scale, Pad: pad})
	if err != nil {
		t.Fatal(err)
	}
	opt := GridOptions{Cols: 3, Scale: scale, Pad: pad, Title: "targets over reconstructions",
		RowLabels: []string{"target", "reconstruction"},
		Captions:  []string{"label 3", "label 1", "label 7", "MSE 0.012", "MSE 0.5", "MSE 1.2e-05"}}
	img, err := ImageGrid(imgs, 1, h, w, opt)
	if err != nil {
		t.Fatal(err)
	}
	ps, ls := plain.Bounds().Size(), img.Bounds().Size()
	if ls.X <= ps.X || ls.Y <= ps.Y {
		t.Fatalf("labelled grid %v is not larger than the plain one %v", ls, ps)
	}
	// Locate the images: find each tile's top-left by matching the plain grid's tiles.
	face := gridFace()
	lineH := int(face.Extents().Height/(72.0/DPI)) + 1
	var tiles []image.Rectangle
	for k := range imgs {
		px := image.Pt(pad+(k%3)*(w*scale+pad), pad+(k/3)*(h*scale+pad))
		tile := image.Rectangle{Min: px, Max: px.Add(image.Pt(w*scale, h*scale))}
		found := false
		for dy := 0; dy+tile.Max.Y <= ls.Y && !found; dy++ {
			for dx := 0; dx+tile.Max.X <= ls.X && !found; dx++ {
				same := true
				for y := tile.Min.Y; y < tile.Max.Y && same; y++ {
					for x := tile.Min.X; x < tile.Max.X && same; x++ {
						same = img.RGBAAt(x+dx, y+dy) == plain.RGBAAt(x, y)
					}
				}
				if same {
					tiles = append(tiles, tile.Add(image.Pt(dx, dy)))
					found = true
				}
			}
		}
		if !found {
			t.Fatalf("image %d is not drawn pixel for pixel in the labelled grid", k)
		}
	}
	if !slices.IsSortedFunc(tiles, func(a, b image.Rectangle) int {
		if a.Min.Y != b.Min.Y {
			return a.Min.Y - b.Min.Y
		}
		return a.Min.X - b.Min.X
	}) {
		t.Errorf("tiles out of order: %v", tiles)
	}
	if n := inkIn(img, image.Rect(0, 0, ls.X, tiles[0].Min.Y)); n < 30 {
		t.Errorf("title band above the first row holds %d ink pixels", n)
	}
	for r := 0; r < 2; r++ {
		row := image.Rect(0, tiles[3*r].Min.Y, tiles[3*r].Min.X, tiles[3*r].Max.Y)
		if n := inkIn(img, row); n < 20 {
			t.Errorf("row %d label area %v holds %d ink pixels", r, row, n)
		}
	}
	for k, tile := range tiles {
		below := image.Rect(tile.Min.X-6, tile.Max.Y, tile.Max.X+6, tile.Max.Y+lineH)
		if n := inkIn(img, below); n < 10 {
			t.Errorf("caption %q of image %d: %d ink pixels under it", opt.Captions[k], k, n)
		}
	}
	if n := inkIn(plain, image.Rect(0, 0, pad, ps.Y)); n != 0 {
		t.Errorf("the unlabelled grid has ink in its left padding")
	}
	for name, bad := range map[string]GridOptions{
		"too many rows":     {Cols: 3, RowLabels: []string{"a", "b", "c"}},
		"too many captions": {Cols: 3, Captions: make([]string, 7)},
	} {
		if _, err := ImageGrid(imgs, 1, h, w, bad); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
}

// TestMissingGlyphs: the figures' font has σ, ², ε, γ, κ, ≤ but not the superscript
// minus of "I_S⁻¹" (which rendered as "I_S¹").
func TestMissingGlyphs(t *testing.T) {
	if got := MissingGlyphs("σ²Tr(I_S^-1)/|S| ε γ κ ≤ ≥ δ ·"); len(got) != 0 {
		t.Errorf("missing %q", string(got))
	}
	if got := MissingGlyphs("I_S⁻¹ ⁻"); !slices.Equal(got, []rune{'⁻'}) {
		t.Errorf("MissingGlyphs(I_S⁻¹) = %q, want ⁻ only", string(got))
	}
}
