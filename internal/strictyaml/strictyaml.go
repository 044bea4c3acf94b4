// Package strictyaml decodes the YAML files users write (architecture files, sweep
// grids) one way: the first document, unknown keys refused, an empty file an error.
package strictyaml

import (
	"errors"
	"io"

	"gopkg.in/yaml.v3"
)

// Decode decodes the first YAML document of r into v (JSON is accepted as the YAML
// subset it is). A key v has no field for is an error, and so is an input without
// a document ("empty file").
func Decode(r io.Reader, v any) error {
	dec := yaml.NewDecoder(r)
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("empty file")
		}
		return err
	}
	return nil
}
