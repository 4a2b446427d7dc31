package tokenizer

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// Benchmarks. Encode speed is reported in MB/s of UTF-8 input over the test corpus;
// BenchmarkRustReference times the Rust library (one rayon thread) on the same corpus in
// the same run. Results and commands: docs/bench/tokenizer.md.
//
//	go test ./tokenizer -run '^$' -bench . -benchtime 3x

var benchModels = []string{"tokenizer-qwen3", "tokenizer-llama3_1"}

// benchCorpora: the whole test corpus, and its first 500 documents (English prose and code,
// 2.15 MB), which is closer to chat text.
func benchCorpora() map[string][]string {
	all := testCorpus()
	return map[string][]string{"corpus": all, "prose": all[:500]}
}

func corpusBytes(docs []string) int64 {
	n := 0
	for _, d := range docs {
		n += len(d)
	}
	return int64(n)
}

// cpuSeconds is the process's user+system CPU time: on a shared machine, MB per CPU
// second is a steadier measure than MB per wall second.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

func BenchmarkEncode(b *testing.B) {
	for corpusName, docs := range benchCorpora() {
		for _, name := range benchModels {
			b.Run(corpusName+"/"+name, func(b *testing.B) { benchEncode(b, loadModel(b, name), docs) })
		}
	}
}

func benchEncode(b *testing.B, tk *Tokenizer, docs []string) {
	b.SetBytes(corpusBytes(docs))
	b.ResetTimer()
	cpu0 := cpuSeconds()
	for i := 0; i < b.N; i++ {
		for _, d := range docs {
			tk.Encode(d, false)
		}
	}
	b.ReportMetric(float64(corpusBytes(docs))*float64(b.N)/1e6/(cpuSeconds()-cpu0), "cpu-MB/s")
}

func BenchmarkEncodeBatch(b *testing.B) {
	docs := testCorpus()
	for _, name := range benchModels {
		b.Run(name, func(b *testing.B) {
			tk := loadModel(b, name)
			b.SetBytes(corpusBytes(docs))
			b.ReportMetric(float64(runtime.GOMAXPROCS(0)), "goroutines")
			b.ResetTimer()
			cpu0 := cpuSeconds()
			for i := 0; i < b.N; i++ {
				tk.EncodeBatch(docs, false)
			}
			b.ReportMetric((cpuSeconds()-cpu0)/b.Elapsed().Seconds(), "cpus-busy")
		})
	}
}

// BenchmarkLongPiece encodes one 50,000-character piece (no cache: each run is new text).
func BenchmarkLongPiece(b *testing.B) {
	tk := loadModel(b, "tokenizer-qwen3")
	b.SetBytes(50000)
	for i := 0; i < b.N; i++ {
		tk.Encode(strings.Repeat(string(rune('a'+i%26)), 50000), false)
	}
}

// BenchmarkApplyChatTemplate renders Qwen3's template over a short conversation (system, user,
// assistant with <think>, user, generation prompt): the cost of one render in its sandbox.
func BenchmarkApplyChatTemplate(b *testing.B) {
	tk := loadModel(b, "tokenizer-qwen3")
	msgs := []Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "What is 2+2? Explain."},
		{Role: "assistant", Content: "<think>\nadd\n</think>\n\n4"}, {Role: "user", Content: "And 3+3?"}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := tk.ApplyChatTemplate(msgs, ChatOptions{AddGenerationPrompt: true}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoad reports load time and the heap a loaded tokenizer keeps.
func BenchmarkLoad(b *testing.B) {
	for _, name := range benchModels {
		b.Run(name, func(b *testing.B) {
			requireAssets(b)
			var heap float64
			for i := 0; i < b.N; i++ {
				runtime.GC()
				var m0, m1 runtime.MemStats
				runtime.ReadMemStats(&m0)
				tk, err := Load(modelDir(name))
				if err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				runtime.ReadMemStats(&m1)
				heap = float64(m1.HeapAlloc-m0.HeapAlloc) / 1e6
				runtime.KeepAlive(tk)
			}
			b.ReportMetric(heap, "heap-MB")
		})
	}
}

// BenchmarkRustReference runs scripts/tokenizer/encode.js --bench on the same corpus and
// reports the Rust library's single-thread speed as rust-MB/s (ns/op is node's whole run).
func BenchmarkRustReference(b *testing.B) {
	requireAssets(b)
	dir := b.TempDir()
	for corpusName, docs := range benchCorpora() {
		data, _ := json.Marshal(docs)
		corpusPath := filepath.Join(dir, corpusName+".json")
		if err := os.WriteFile(corpusPath, data, 0o644); err != nil {
			b.Fatal(err)
		}
		for _, name := range benchModels {
			b.Run(corpusName+"/"+name, func(b *testing.B) { benchRust(b, corpusPath, name) })
		}
	}
}

func benchRust(b *testing.B, corpusPath, name string) {
	var res []struct {
		MBPerS    float64 `json:"mb_per_s"`
		CPUMBPerS float64 `json:"cpu_mb_per_s"`
		LoadS     float64 `json:"load_s"`
	}
	for i := 0; i < b.N; i++ {
		cmd := exec.Command("node", "../scripts/tokenizer/encode.js", "--bench", corpusPath, "-",
			filepath.Join(modelDir(name), "tokenizer.json"))
		cmd.Env = append(os.Environ(), "MTGRPO_NPM="+npmDir(), "RAYON_NUM_THREADS=1")
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("encode.js --bench: %v", err)
		}
		if err := json.Unmarshal(out, &res); err != nil || len(res) != 1 {
			b.Fatalf("encode.js --bench output %q: %v", out, err)
		}
	}
	b.ReportMetric(res[0].MBPerS, "rust-MB/s")
	b.ReportMetric(res[0].CPUMBPerS, "rust-cpu-MB/s")
	b.ReportMetric(res[0].LoadS*1000, "rust-load-ms")
}
