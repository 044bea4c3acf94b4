package data

import (
	"fmt"
	"image"
	_ "image/gif"  // GIF decoder for image folders
	_ "image/jpeg" // JPEG decoder for image folders
	_ "image/png"  // PNG decoder for image folders
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// imageExts are the image file extensions an image folder may hold.
var imageExts = map[string]bool{".png": true, ".jpg": true, ".jpeg": true, ".gif": true}

// readImageFolder reads DIR/<class>/<image>, or DIR/train/<class>/<image> and
// DIR/test/<class>/<image> (then the test classes must be among the training
// classes). Classes are the sub-directory names in sorted order, as torchvision's
// ImageFolder orders them.
func readImageFolder(dir string) (*userParts, error) {
	u := &userParts{}
	trainDir, testDir := filepath.Join(dir, "train"), filepath.Join(dir, "test")
	if isDir(trainDir) && isDir(testDir) {
		classes, err := classDirs(trainDir)
		if err != nil {
			return nil, err
		}
		if u.train, err = readClasses(trainDir, classes, &u.files); err != nil {
			return nil, err
		}
		testClasses, err := classDirs(testDir)
		if err != nil {
			return nil, err
		}
		for _, c := range testClasses {
			if !slices.Contains(classes, c) {
				return nil, fmt.Errorf("%s: class %q has no training directory in %s", testDir, c, trainDir)
			}
		}
		if u.test, err = readClasses(testDir, classes, &u.files); err != nil {
			return nil, err
		}
		if u.test.C != u.train.C || u.test.H != u.train.H || u.test.W != u.train.W {
			return nil, fmt.Errorf("%s: test images are %dx%dx%d, training images %dx%dx%d", dir, u.test.C, u.test.H, u.test.W, u.train.C, u.train.H, u.train.W)
		}
		u.classNames = classes
		return u, nil
	}
	classes, err := classDirs(dir)
	if err != nil {
		return nil, err
	}
	if u.train, err = readClasses(dir, classes, &u.files); err != nil {
		return nil, err
	}
	u.classNames = classes
	return u, nil
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// classDirs lists the class sub-directories of dir, refusing files beside them.
func classDirs(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var classes []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if !e.IsDir() {
			return nil, fmt.Errorf("%s: unexpected file %q: an image folder holds one sub-directory per class (or train/ and test/ with one per class)", dir, e.Name())
		}
		classes = append(classes, e.Name())
	}
	if len(classes) < 2 {
		return nil, fmt.Errorf("%s: %d class directories, want at least 2 (DIR/<class>/<image>)", dir, len(classes))
	}
	sort.Strings(classes)
	return classes, nil
}

// readClasses decodes the images of dir/<class>/ for the classes present in dir
// (labels are indices into classes); all images must have one size, and are gray
// (C = 1) when every one is, RGB (C = 3) otherwise (alpha is dropped).
func readClasses(dir string, classes []string, files *[]string) (*Dataset, error) {
	type item struct {
		path  string
		img   image.Image
		label int
	}
	var items []item
	gray := true
	for ci, c := range classes {
		cdir := filepath.Join(dir, c)
		if !isDir(cdir) {
			continue // a class without test images
		}
		ents, err := os.ReadDir(cdir)
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			name := e.Name()
			if strings.HasPrefix(name, ".") {
				continue
			}
			p := filepath.Join(cdir, name)
			if e.IsDir() {
				return nil, fmt.Errorf("%s: unexpected directory: a class directory holds images only", p)
			}
			if !imageExts[strings.ToLower(filepath.Ext(name))] {
				return nil, fmt.Errorf("%s: not a PNG, JPEG or GIF image (by its extension)", p)
			}
			f, err := os.Open(p)
			if err != nil {
				return nil, err
			}
			img, _, err := image.Decode(f)
			f.Close()
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p, err)
			}
			if !isGray(img) {
				gray = false
			}
			items = append(items, item{p, img, ci})
			*files = append(*files, p)
		}
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("%s: no images", dir)
	}
	b0 := items[0].img.Bounds()
	d := &Dataset{N: len(items), C: 3, H: b0.Dy(), W: b0.Dx()}
	if gray {
		d.C = 1
	}
	dim := d.Dim()
	d.Images = make([]float32, d.N*dim)
	d.Labels = make([]int, d.N)
	for i, it := range items {
		b := it.img.Bounds()
		if b.Dx() != d.W || b.Dy() != d.H {
			return nil, fmt.Errorf("%s: %dx%d pixels, but %s is %dx%d: every image must have the same size", it.path, b.Dx(), b.Dy(), items[0].path, d.W, d.H)
		}
		pixels(it.img, d.C, d.Images[i*dim:(i+1)*dim])
		d.Labels[i] = it.label
	}
	return d, nil
}

// isGray reports whether an image's colour model is grayscale.
func isGray(img image.Image) bool {
	switch img.(type) {
	case *image.Gray, *image.Gray16:
		return true
	}
	return false
}

// pixels writes an image's 8-bit values /255 as C planes (CHW).
func pixels(img image.Image, C int, dst []float32) {
	b := img.Bounds()
	hw := b.Dx() * b.Dy()
	k := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if C == 1 {
				dst[k] = float32(r>>8) / 255
			} else {
				dst[k] = float32(r>>8) / 255
				dst[hw+k] = float32(g>>8) / 255
				dst[2*hw+k] = float32(bl>>8) / 255
			}
			k++
		}
	}
}

// ReadImage decodes one PNG, JPEG or GIF image as C×H×W values in [0,1] (byte/255):
// it must be h×w pixels (no resizing); for c = 1 a colour image is accepted only
// when its channels are equal (gray stored as RGB), for c = 3 a gray one is
// replicated into the three channels.
func ReadImage(path string, c, h, w int) ([]float32, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	img, _, err := image.Decode(f)
	if err != nil {
		return nil, fmt.Errorf("%s: not a PNG, JPEG or GIF image (%w)", path, err)
	}
	b := img.Bounds()
	if b.Dx() != w || b.Dy() != h {
		return nil, fmt.Errorf("%s: %dx%d pixels, the model takes %dx%d (resize it first)", path, b.Dx(), b.Dy(), w, h)
	}
	if c != 1 && c != 3 {
		return nil, fmt.Errorf("%s: the model takes %d channels; images give 1 or 3", path, c)
	}
	rgb := make([]float32, 3*h*w)
	pixels(img, 3, rgb)
	if c == 3 {
		return rgb, nil
	}
	hw := h * w
	for k := 0; k < hw; k++ {
		if rgb[k] != rgb[hw+k] || rgb[k] != rgb[2*hw+k] {
			return nil, fmt.Errorf("%s: a colour image, the model takes gray (1 channel)", path)
		}
	}
	return rgb[:hw], nil
}
