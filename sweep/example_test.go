package sweep_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dpfil/dpfil/sweep"
)

func ExampleGrid_Points() {
	g, err := sweep.ParseGrid([]byte(`
name: demo
base: {model: mnist-cnn, batch: 600}
grid: {sigma: [1, 2], lr: [0.01, 0.1]}
`))
	if err != nil {
		panic(err)
	}
	for _, p := range g.Points() {
		fmt.Println(p["lr"], p["sigma"])
	}
	// Output:
	// 0.01 1
	// 0.01 2
	// 0.1 1
	// 0.1 2
}

func ExampleShard_Select() {
	jobs := make([]sweep.Job, 7)
	for i := range jobs {
		jobs[i].Index = i
	}
	for i := 0; i < 3; i++ {
		var idx []int
		for _, j := range (sweep.Shard{I: i, N: 3}).Select(jobs) {
			idx = append(idx, j.Index)
		}
		fmt.Println(i, idx)
	}
	// Output:
	// 0 [0 3 6]
	// 1 [1 4]
	// 2 [2 5]
}

func ExampleSlurmScript() {
	s, err := sweep.SlurmScript(sweep.PlanOptions{Name: "fig5", Grid: "sweeps/mnist-fig5.yaml", Shards: 16, Out: "out"})
	if err != nil {
		panic(err)
	}
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, "#SBATCH --array") || strings.HasPrefix(line, "#SBATCH --signal") || strings.HasPrefix(line, "dpfil ") {
			fmt.Println(line)
		}
	}
	// Output:
	// #SBATCH --array=0-15
	// #SBATCH --signal=B:TERM@120
	// dpfil sweep run sweeps/mnist-fig5.yaml --out out/shard-"$SHARD" --shard "$SHARD/$N" --workers 1 &
}

// Expand a grid file and list the jobs of one shard, as 'dpfil sweep list' does.
func ExampleExpanded_List() {
	dir, err := os.MkdirTemp("", "sweep-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "grid.yaml")
	grid := "name: demo\nbase: {model: linear, steps: 10}\ngrid: {sigma: [0.5, 1, 2], lr: [0.1]}\n"
	if err := os.WriteFile(file, []byte(grid), 0o644); err != nil {
		panic(err)
	}
	e, err := sweep.Expand(file)
	if err != nil {
		panic(err)
	}
	l, err := e.List(sweep.Shard{I: 0, N: 2})
	if err != nil {
		panic(err)
	}
	fmt.Println(l.Total, l.Keys)
	for _, j := range l.Jobs {
		fmt.Println(j.Index, j.Config.Sigma)
	}
	// Output:
	// 3 [lr sigma]
	// 0 0.5
	// 2 2
}

func ExampleFrontier() {
	front, _ := sweep.Frontier([]sweep.Point{
		{Index: 0, Accuracy: 0.95, Bound: 0.02},
		{Index: 1, Accuracy: 0.90, Bound: 0.50},
		{Index: 2, Accuracy: 0.85, Bound: 0.10}, // dominated by 1
		{Index: 3, Accuracy: 0.97, Bound: 0.001},
	})
	for _, p := range front {
		fmt.Printf("%d acc=%.2f bound=%g\n", p.Index, p.Accuracy, p.Bound)
	}
	// Output:
	// 1 acc=0.90 bound=0.5
	// 0 acc=0.95 bound=0.02
	// 3 acc=0.97 bound=0.001
}
