package sweep

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func ExampleGrid_Points() {
	g, err := ParseGrid([]byte(`
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
	jobs := make([]Job, 7)
	for i := range jobs {
		jobs[i].Index = i
	}
	for i := 0; i < 3; i++ {
		var idx []int
		for _, j := range (Shard{I: i, N: 3}).Select(jobs) {
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
	s, err := SlurmScript(PlanOptions{Name: "fig5", Grid: "sweeps/mnist-fig5.yaml", Shards: 16, Out: "out"})
	if err != nil {
		panic(err)
	}
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, "#SBATCH --array") || strings.HasPrefix(line, "exec ") {
			fmt.Println(line)
		}
	}
	// Output:
	// #SBATCH --array=0-15
	// exec dpfil sweep run sweeps/mnist-fig5.yaml --out out/shard-"$SHARD" --shard "$SHARD/$N" --workers 1
}

func BenchmarkReadResults(b *testing.B) {
	var sb strings.Builder
	res, _ := json.Marshal(map[string]any{"test_accuracy": 0.9, "mse_bound_rdp": 0.01, "per_class_accuracy": make([]float64, 10)})
	for i := 0; i < 1000; i++ {
		line, _ := json.Marshal(Record{Hash: fmt.Sprintf("%016x", i), Index: i, Config: json.RawMessage(`{"sigma":1,"lr":0.1}`), Result: res})
		sb.Write(line)
		sb.WriteByte('\n')
	}
	data := sb.String()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		recs, bad, err := readResults(strings.NewReader(data), "bench")
		if err != nil || len(recs) != 1000 || len(bad) != 0 {
			b.Fatal(err)
		}
	}
}
