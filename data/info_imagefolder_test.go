package data

import (
	"bytes"
	"fmt"
	"image"
	"path/filepath"
	"strings"
	"testing"
)

// TestImageFolderInfoSummarises: 'data info' on an image folder prints a summary
// whose length does not grow with the number of images (class counts with the
// folder's class names, shape, value range, one line for the files), while --json
// keeps every file.
func TestImageFolderInfoSummarises(t *testing.T) {
	for _, per := range []int{3, 40} {
		dir := t.TempDir()
		for i, cls := range []string{"cat", "dog", "ant"} {
			for j := 0; j < per+i; j++ {
				g := image.NewGray(image.Rect(0, 0, 3, 2))
				for k := range g.Pix {
					g.Pix[k] = uint8(20 + 10*i + k)
				}
				writePNG(t, filepath.Join(dir, "train", cls, fmt.Sprintf("img%03d.png", j)), g)
			}
			writePNG(t, filepath.Join(dir, "test", cls, "t.png"), image.NewGray(image.Rect(0, 0, 3, 2)))
		}
		l, err := LoadFiles("imagefolder:"+dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		info := Describe("imagefolder:"+dir, l)
		n := 3*per + 3 + 3
		if len(info.Files) != n || len(info.ClassNames) != 3 {
			t.Fatalf("%d files, classes %v; want %d files", len(info.Files), info.ClassNames, n)
		}
		var buf bytes.Buffer
		info.WriteText(&buf)
		out := buf.String()
		lines := strings.Count(out, "\n")
		if lines > 16 {
			t.Errorf("per=%d: %d lines for %d images:\n%s", per, lines, n, out)
		}
		for _, want := range []string{
			fmt.Sprintf("images    %d (train %d, test 3), shape 1×2×3", n, n-3),
			fmt.Sprintf("values in [0, %.3g]", float64(20+10*2+5)/255), // class 2's brightest pixel
			fmt.Sprintf("0 ant   %8d %8d %8d", per+2, 1, per+3),
			fmt.Sprintf("1 cat   %8d %8d %8d", per, 1, per+1),
			fmt.Sprintf("files     %d files under %s", n, dir),
		} {
			if !strings.Contains(out, want) {
				t.Errorf("per=%d: output lacks %q:\n%s", per, want, out)
			}
		}
		if strings.Contains(out, "img000.png") {
			t.Errorf("per=%d: output lists the images one by one:\n%s", per, out)
		}
	}
}
