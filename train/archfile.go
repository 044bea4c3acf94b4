package train

import (
	"fmt"

	"github.com/dpfil/dpfil/data"
	"github.com/dpfil/dpfil/models"
)

// PrepareConfig applies an architecture file (YAML or JSON, models.LoadArchSpec) to
// cfg when archFile is not "", and, for a user dataset (npz:, npy:, imagefolder:,
// idx:), pins its fingerprint (Config.DataSHA256), so that the configuration hash,
// and a resumed run, know which data it is. logf, if set, receives the data
// loader's messages.
func PrepareConfig(cfg Config, archFile string, logf func(string, ...any)) (Config, error) {
	if archFile != "" {
		spec, err := models.LoadArchSpec(archFile)
		if err != nil {
			return cfg, err
		}
		cfg = cfg.WithArch(spec)
	}
	if data.IsUserDataset(cfg.Dataset) && cfg.DataSHA256 == "" {
		split, err := data.Load(cfg.Dataset, data.Options{DataDir: cfg.DataDir, NoDownload: true, Logf: logf})
		if err != nil {
			return cfg, fmt.Errorf("load dataset %s: %w", cfg.Dataset, err)
		}
		cfg.DataSHA256 = split.Fingerprint()
	}
	return cfg, nil
}

// ResolveArch returns the architecture cfg trains: the built-in cfg.Model, or the
// one of archFile when it is not ""; a file without input shape or classes takes
// them from cfg's dataset (loaded for that, with logf receiving the loader's
// messages).
func ResolveArch(cfg Config, archFile string, logf func(string, ...any)) (models.Arch, error) {
	if archFile == "" {
		return models.ArchByName(cfg.Model)
	}
	spec, err := models.LoadArchSpec(archFile)
	if err != nil {
		return models.Arch{}, err
	}
	if len(spec.Input) == 3 && spec.Classes > 0 {
		return spec.Resolve(models.Shape{}, 0)
	}
	split, err := data.Load(cfg.Dataset, data.Options{DataDir: cfg.DataDir, Logf: logf})
	if err != nil {
		return models.Arch{}, fmt.Errorf("%s takes its input shape or classes from the data: load dataset %s: %w", archFile, cfg.Dataset, err)
	}
	tr := split.Train
	return spec.Resolve(models.Shape{C: tr.C, H: tr.H, W: tr.W}, tr.Classes)
}
