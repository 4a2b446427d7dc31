package env

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"
	"unicode"

	"github.com/mtgrpo/mtgrpo/env/data"
)

// Okapi BM25 (Robertson & Zaragoza, "The Probabilistic Relevance Framework: BM25 and Beyond",
// 2009, eq. 3.15), with the non-negative idf Lucene uses:
//
//	score(q, d) = Σ_{t∈q} idf(t) · tf·(k1+1) / (tf + k1·(1 − b + b·|d|/avgdl))
//	idf(t)      = ln(1 + (N − n_t + 0.5) / (n_t + 0.5))
//
// with k1 = 1.5 and b = 0.75 (rank_bm25's BM25Okapi defaults). Terms are lower-cased runs of
// letters and digits; a query term counts once per occurrence in the query.
const (
	DefaultK1 = 1.5
	DefaultB  = 0.75
)

// Document is one corpus entry, as a JSONL line {"id", "title", "text"}.
type Document struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Text  string `json:"text"`
}

// Index is a BM25 index over documents. It is read-only after NewIndex and safe for concurrent
// use.
type Index struct {
	K1, B  float64
	docs   []Document
	tf     []map[string]int
	length []int
	df     map[string]int
	post   map[string][]int // term → documents containing it, ascending
	avgdl  float64
}

// Hit is one search result.
type Hit struct {
	Doc   Document
	Score float64
	pos   int
}

// Terms splits text into BM25 terms.
func Terms(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
}

// NewIndex indexes the documents' titles and texts.
func NewIndex(docs []Document) *Index {
	ix := &Index{K1: DefaultK1, B: DefaultB, docs: docs, df: map[string]int{}, post: map[string][]int{}}
	total := 0
	for i, d := range docs {
		tf := map[string]int{}
		terms := Terms(d.Title + " " + d.Text)
		for _, t := range terms {
			tf[t]++
		}
		for t := range tf {
			ix.df[t]++
			ix.post[t] = append(ix.post[t], i)
		}
		ix.tf = append(ix.tf, tf)
		ix.length = append(ix.length, len(terms))
		total += len(terms)
	}
	if len(docs) > 0 {
		ix.avgdl = float64(total) / float64(len(docs))
	}
	return ix
}

// IDF is the inverse document frequency of a term.
func (ix *Index) IDF(term string) float64 {
	n, N := float64(ix.df[term]), float64(len(ix.docs))
	return math.Log(1 + (N-n+0.5)/(n+0.5))
}

// Score is the BM25 score of document i for the query.
func (ix *Index) Score(query string, i int) float64 {
	s := 0.0
	for _, t := range Terms(query) {
		s += ix.termScore(t, i)
	}
	return s
}

func (ix *Index) termScore(t string, i int) float64 {
	tf := float64(ix.tf[i][t])
	if tf == 0 {
		return 0
	}
	norm := ix.K1 * (1 - ix.B + ix.B*float64(ix.length[i])/ix.avgdl)
	return ix.IDF(t) * tf * (ix.K1 + 1) / (tf + norm)
}

// Search returns the k best documents with a positive score, best first (ties by corpus order).
// Only documents sharing a term with the query are scored (through the postings lists).
func (ix *Index) Search(query string, k int) []Hit {
	hits, _ := ix.SearchContext(context.Background(), query, k)
	return hits
}

// SearchContext is Search that gives up with ctx's error once ctx is done; it looks at ctx
// between query terms (a common term's postings list spans the corpus).
func (ix *Index) SearchContext(ctx context.Context, query string, k int) ([]Hit, error) {
	scores := map[int]float64{}
	for _, t := range Terms(query) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for _, i := range ix.post[t] {
			scores[i] += ix.termScore(t, i)
		}
	}
	hits := make([]Hit, 0, len(scores))
	for i, s := range scores {
		if s > 0 {
			hits = append(hits, Hit{Doc: ix.docs[i], Score: s, pos: i})
		}
	}
	sort.Slice(hits, func(a, b int) bool {
		if hits[a].Score != hits[b].Score {
			return hits[a].Score > hits[b].Score
		}
		return hits[a].pos < hits[b].pos
	})
	if len(hits) > k {
		hits = hits[:k]
	}
	return hits, nil
}

// Len is the number of documents.
func (ix *Index) Len() int { return len(ix.docs) }

// ReadCorpus reads JSONL documents. A bad line is an error naming the file and line.
func ReadCorpus(path string) ([]Document, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("corpus: %w", err)
	}
	defer f.Close()
	return decodeCorpus(f, path)
}

// decodeCorpus reads documents under env/data's default bounds on line length and total bytes,
// so that a corpus path pointing at an endless stream fails instead of exhausting memory.
func decodeCorpus(r io.Reader, name string) ([]Document, error) {
	var docs []Document
	lines := data.NewLineReader(r, data.DefaultMaxLineBytes, data.DefaultMaxBytes)
	for {
		b, line, err := lines.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("corpus %s line %d: %w", name, line, err)
		}
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		var d Document
		if err := json.Unmarshal(b, &d); err != nil {
			return nil, fmt.Errorf("corpus %s line %d: %v", name, line, err)
		}
		if d.Text == "" && d.Title == "" {
			return nil, fmt.Errorf("corpus %s line %d: document %q has neither title nor text", name, line, d.ID)
		}
		docs = append(docs, d)
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("corpus %s: no documents", name)
	}
	return docs, nil
}

// WriteCorpus saves documents as JSONL ({id, title, text} per line), the format ReadCorpus reads.
func WriteCorpus(path string, docs []Document) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	enc.SetEscapeHTML(false)
	for _, d := range docs {
		if err := enc.Encode(d); err != nil {
			f.Close()
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return f.Close()
}

// SearchTool retrieves passages from a BM25 index. Each document is one passage: split long
// documents before indexing.
type SearchTool struct {
	Index *Index
	// K is the number of passages returned when the call does not say (default 3).
	K int
	// MaxChars truncates each passage's text (default 500).
	MaxChars int
}

func (*SearchTool) Name() string { return "search" }
func (*SearchTool) Description() string {
	return "Search the knowledge base and return the most relevant passages."
}
func (*SearchTool) Parameters() json.RawMessage {
	return json.RawMessage(`{"type": "object", "properties": {"query": {"type": "string", "description": "What to look for."}, "k": {"type": "integer", "description": "How many passages to return (1-10).", "minimum": 1, "maximum": 10}}, "required": ["query"]}`)
}

// maxQueryTerms bounds a query: each term walks a postings list that can span the corpus.
const maxQueryTerms = 256

// Call searches {"query": "...", "k": n}. It returns ctx's error once ctx is done.
func (t *SearchTool) Call(ctx context.Context, args json.RawMessage) (string, error) {
	var a struct {
		Query string `json:"query"`
		K     int    `json:"k"`
	}
	if err := DecodeArgs(args, &a, "query"); err != nil {
		return "", err
	}
	if strings.TrimSpace(a.Query) == "" {
		return "", fmt.Errorf("bad arguments: query is empty")
	}
	if n := len(Terms(a.Query)); n > maxQueryTerms {
		return "", fmt.Errorf("bad arguments: query has %d words; at most %d", n, maxQueryTerms)
	}
	k := a.K
	if k == 0 {
		k = max(t.K, 0)
		if k == 0 {
			k = 3
		}
	}
	if k < 1 || k > 10 {
		return "", fmt.Errorf("bad arguments: k must be between 1 and 10, got %d", a.K)
	}
	hits, err := t.Index.SearchContext(ctx, a.Query, k)
	if err != nil {
		return "", err
	}
	if len(hits) == 0 {
		return "No results.", nil
	}
	limit := t.MaxChars
	if limit <= 0 {
		limit = 500
	}
	var b strings.Builder
	for i, h := range hits {
		fmt.Fprintf(&b, "[%d] %s\n%s\n", i+1, h.Doc.Title, clip(h.Doc.Text, limit))
	}
	return strings.TrimSpace(b.String()), nil
}
