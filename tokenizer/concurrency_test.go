package tokenizer

import (
	"slices"
	"sync"
	"testing"
)

// One Tokenizer serves many goroutines (the rollout renders and encodes from several);
// run with -race to check for data races.
func TestConcurrentUse(t *testing.T) {
	tk, err := Load("testdata/tiny")
	if err != nil {
		t.Fatal(err)
	}
	docs := testCorpus()[:200]
	want := make([][]int, len(docs))
	for i, d := range docs {
		want[i] = tk.Encode(d, true)
	}
	msgs := []Message{{Role: "system", Content: "s"}, {Role: "user", Content: "What is 7 times 8?"}}
	prompt, err := tk.ApplyChatTemplate(msgs, ChatOptions{AddGenerationPrompt: true})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := g; i < len(docs); i += 4 {
				if got := tk.Encode(docs[i], true); !slices.Equal(got, want[i]) {
					errs <- "encode differs under concurrency"
					return
				}
				if p, err := tk.ApplyChatTemplate(msgs, ChatOptions{AddGenerationPrompt: true}); err != nil || p != prompt {
					errs <- "chat rendering differs under concurrency"
					return
				}
			}
		}(g)
	}
	batch := tk.EncodeBatch(docs, true)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	for i := range docs {
		if !slices.Equal(batch[i], want[i]) {
			t.Fatalf("EncodeBatch doc %d differs", i)
		}
	}
}
