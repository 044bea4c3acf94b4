package models_test

import (
	"fmt"
	"log"

	"github.com/dpfil/dpfil/models"
)

// The fields an architecture file may give a dense layer.
func ExampleLayerKindInfos() {
	infos, err := models.LayerKindInfos()
	if err != nil {
		log.Fatal(err)
	}
	for _, in := range infos {
		if in.Kind == "dense" {
			fmt.Println(in.Kind, in.Fields)
		}
	}
	// Output:
	// dense [out]
}
