package data

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

func sampleRows() []Row {
	return []Row{
		{
			DataSource:  "openai/gsm8k",
			Prompt:      []Message{{Role: "user", Content: "What is 6*7? Let's think step by step."}},
			Ability:     "math",
			RewardModel: RewardModel{Style: "rule", GroundTruth: "42"},
			ExtraInfo:   map[string]any{"split": "train", "index": int64(0), "score": 0.5, "hard": true, "tags": []any{"a", "b"}},
		},
		{
			DataSource:  "countdown",
			Prompt:      []Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Reach 5 with [2, 3]. ünïcödé"}},
			Ability:     "math",
			RewardModel: RewardModel{Style: "rule", GroundTruth: `{"numbers":[2,3],"target":5}`},
			ExtraInfo:   map[string]any{"split": "test", "index": int64(1), "score": int64(2)},
		},
	}
}

// After a round trip extra_info keeps its types: index int64 everywhere, score becomes double
// (0.5 and 2 mix into float), a list becomes a JSON string in parquet (no nested inference).
func TestParquetRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rows.parquet")
	if err := WriteParquet(path, sampleRows()); err != nil {
		t.Fatal(err)
	}
	got, st, err := ReadParquet(path, Options{})
	if err != nil || st.Rows != 2 {
		t.Fatalf("%v %+v", err, st)
	}
	want := sampleRows()
	want[0].ExtraInfo["tags"] = `["a","b"]`
	want[1].ExtraInfo["score"] = 2.0
	want[1].ExtraInfo["hard"] = nil
	want[1].ExtraInfo["tags"] = nil
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}

// The schema is the one pyarrow writes for verl's GSM8K (field names, LIST structure, types);
// parquet-go orders group fields by name.
func TestParquetSchemaMatchesVerl(t *testing.T) {
	var buf bytes.Buffer
	rows := sampleRows()[:1]
	rows[0].ExtraInfo = map[string]any{"answer": "x", "index": int64(0), "question": "q", "split": "train"}
	if err := EncodeParquet(&buf, rows); err != nil {
		t.Fatal(err)
	}
	f, err := parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	want := `message schema {
	optional binary ability (STRING);
	optional binary data_source (STRING);
	optional group extra_info {
		optional binary answer (STRING);
		optional int64 index (INT(64,true));
		optional binary question (STRING);
		optional binary split (STRING);
	}
	optional group prompt (LIST) {
		repeated group list {
			optional group element {
				optional binary content (STRING);
				optional binary role (STRING);
			}
		}
	}
	optional group reward_model {
		optional binary ground_truth (STRING);
		optional binary style (STRING);
	}
}`
	if got := f.Schema().String(); got != want {
		t.Fatalf("schema\n%s\nwant\n%s", got, want)
	}
}

// verl's GSM8K layout with the first two GSM8K train rows, written by three independent writers:
// the Apache Arrow Rust writer (parquet-wasm, make_arrow_fixture.mjs), pyarrow's write_table and
// pandas' to_parquet (make_pyarrow_fixture.py: struct fields in verl's order, role before content;
// pandas adds large_string columns and its own metadata).
var outsideWriterFiles = []string{"verl_gsm8k_arrow.parquet", "verl_gsm8k_pyarrow.parquet", "verl_gsm8k_pandas.parquet"}

func TestReadArrowWrittenParquet(t *testing.T) {
	for _, file := range outsideWriterFiles {
		t.Run(file, func(t *testing.T) {
			rows, _, err := ReadParquet(filepath.Join("testdata", file), Options{RequireGroundTruth: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != 2 || rows[0].RewardModel.GroundTruth != "72" || rows[1].RewardModel.GroundTruth != "10" {
				t.Fatalf("%+v", rows)
			}
			r := rows[0]
			if r.DataSource != "openai/gsm8k" || r.Ability != "math" || r.RewardModel.Style != "rule" || len(r.Prompt) != 1 || r.Prompt[0].Role != "user" ||
				!strings.HasPrefix(r.Prompt[0].Content, "Natalia sold clips") || !strings.HasSuffix(r.Prompt[0].Content, `after "####".`) {
				t.Fatalf("%+v", r)
			}
			if r.ExtraInfo["index"] != int64(0) || r.ExtraInfo["split"] != "train" || !strings.HasSuffix(r.ExtraInfo["answer"].(string), "#### 72") ||
				!strings.HasPrefix(r.ExtraInfo["question"].(string), "Natalia sold clips") {
				t.Fatalf("extra_info %+v", r.ExtraInfo)
			}
			if rows[1].ExtraInfo["index"] != int64(1) || !strings.HasPrefix(rows[1].Prompt[0].Content, "Weng earns $12") {
				t.Fatalf("second row %+v", rows[1])
			}
		})
	}
}

// TinyZero's countdown parquet stores ground_truth as a struct; it loads as JSON text.
func TestParquetStructGroundTruth(t *testing.T) {
	type gt struct {
		Numbers []int64 `parquet:"numbers,list"`
		Target  int64   `parquet:"target"`
	}
	type row struct {
		Prompt []Message `parquet:"prompt,list"`
		RM     struct {
			GroundTruth gt     `parquet:"ground_truth"`
			Style       string `parquet:"style"`
		} `parquet:"reward_model"`
	}
	var r row
	r.Prompt = []Message{{Role: "user", Content: "go"}}
	r.RM.GroundTruth = gt{Numbers: []int64{2, 3}, Target: 5}
	var buf bytes.Buffer
	if err := parquet.Write(&buf, []row{r}); err != nil {
		t.Fatal(err)
	}
	rows, _, err := DecodeParquet(bytes.NewReader(buf.Bytes()), int64(buf.Len()), "cd.parquet", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := rows[0].RewardModel.GroundTruth; got != `{"numbers":[2,3],"target":5}` {
		t.Fatalf("ground truth %s", got)
	}
}

func TestParquetErrors(t *testing.T) {
	var buf bytes.Buffer
	if err := EncodeParquet(&buf, sampleRows()); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	// Truncated and corrupted files are errors naming the file, never panics.
	for _, bad := range [][]byte{b[:len(b)/2], append(append([]byte{}, b[:100]...), bytes.Repeat([]byte{0xff}, len(b)-100)...), []byte("PAR1")} {
		if _, _, err := DecodeParquet(bytes.NewReader(bad), int64(len(bad)), "bad.parquet", Options{}); err == nil || !strings.Contains(err.Error(), "bad.parquet") {
			t.Fatalf("corrupt file: %v", err)
		}
	}
	// No prompt column.
	buf.Reset()
	if err := parquet.Write(&buf, []struct {
		Question string `parquet:"question"`
	}{{"q"}}); err != nil {
		t.Fatal(err)
	}
	_, _, err := DecodeParquet(bytes.NewReader(buf.Bytes()), int64(buf.Len()), "other.parquet", Options{})
	if err == nil || !strings.Contains(err.Error(), "no prompt column (columns: [question])") {
		t.Fatalf("no prompt: %v", err)
	}
	// A row with an empty prompt is reported by its index, or skipped and counted.
	rows := sampleRows()
	rows = append(rows, Row{DataSource: "x"}, rows[0])
	buf.Reset()
	if err := EncodeParquet(&buf, rows); err != nil {
		t.Fatal(err)
	}
	_, _, err = DecodeParquet(bytes.NewReader(buf.Bytes()), int64(buf.Len()), "rows.parquet", Options{})
	var re *RowError
	if !errors.As(err, &re) || re.Row != 2 || re.Field != "prompt" || err.Error() != "rows.parquet: row 2: prompt: empty (want a list of {role, content})" {
		t.Fatalf("empty prompt: %v", err)
	}
	got, st, err := DecodeParquet(bytes.NewReader(buf.Bytes()), int64(buf.Len()), "rows.parquet", Options{SkipInvalid: true})
	if err != nil || len(got) != 3 || st.Skipped != 1 || st.Errors[0].Row != 2 {
		t.Fatalf("skip: %v %+v", err, st)
	}
}

func TestJSONLRoundTripAndErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rows.jsonl")
	if err := Write(path, sampleRows()); err != nil {
		t.Fatal(err)
	}
	got, _, err := Read(path, Options{})
	if err != nil || !reflect.DeepEqual(got, sampleRows()) {
		t.Fatalf("round trip: %v\n%+v", err, got)
	}
	good := `{"data_source": "d", "prompt": [{"role": "user", "content": "hi"}], "reward_model": {"ground_truth": 7}}`
	cases := map[string]string{
		`{"prompt": 5}`: "f.jsonl: row 2: prompt: want a list of {role, content} or a string, got 5",
		`{"prompt": [{"role": "wizard", "content": "x"}]}`:   "f.jsonl: row 2: prompt[0].role: \"wizard\" is not one of system, user, assistant, tool",
		`{"prompt": [{"role": "user", "content": 3}]}`:       "f.jsonl: row 2: prompt[0].content: want a string, got 3",
		`{"prompt": [{"role": "user", "content": ""}]}`:      "f.jsonl: row 2: prompt[0].content: empty",
		`{"prompt": "x", "data_source": 1}`:                  "f.jsonl: row 2: data_source: want a string, got 1",
		`{"prompt": "x", "reward_model": "r"}`:               "f.jsonl: row 2: reward_model: want an object {style, ground_truth}, got \"r\"",
		`{"prompt": "x", "extra_info": []}`:                  "f.jsonl: row 2: extra_info: want an object, got []",
		`{"prompt": "x", "reward_model": {"style": "rule"}}`: "f.jsonl: row 2: reward_model.ground_truth: missing or empty",
		`not json`: "f.jsonl: row 2: not a JSON object: invalid character 'o' in literal null (expecting 'u')",
		`{}`:       "f.jsonl: row 2: prompt: missing",
	}
	for line, want := range cases {
		_, _, err := DecodeJSONL(strings.NewReader(good+"\n"+line+"\n"+good), "f.jsonl", Options{RequireGroundTruth: true})
		if err == nil || err.Error() != want {
			t.Errorf("%s:\n got %v\nwant %s", line, err, want)
		}
	}
	rows, st, err := DecodeJSONL(strings.NewReader(good+"\n\n{}\nnope\n"+good), "f.jsonl", Options{SkipInvalid: true})
	if err != nil || len(rows) != 2 || st.Skipped != 2 || st.Errors[1].Row != 4 {
		t.Fatalf("skip: %v %+v", err, st)
	}
	// A number ground truth becomes text; a string prompt becomes one user message.
	rows, _, _ = DecodeJSONL(strings.NewReader(`{"prompt": "hello", "reward_model": {"ground_truth": 7.5}}`), "f", Options{})
	if rows[0].RewardModel.GroundTruth != "7.5" || rows[0].Prompt[0] != (Message{Role: "user", Content: "hello"}) {
		t.Fatalf("%+v", rows[0])
	}
	if _, _, err := Read("x.csv", Options{}); err == nil {
		t.Fatal("csv accepted")
	}
}

func TestApplyGroundTruth(t *testing.T) {
	dir := t.TempDir()
	rows := sampleRows()
	byIndex := filepath.Join(dir, "gt.jsonl")
	os.WriteFile(byIndex, []byte(`{"index": 1, "ground_truth": "5"}`+"\n"+`{"index": 0, "ground_truth": {"a": 1}}`+"\n"), 0o644)
	if err := ApplyGroundTruth(rows, byIndex); err != nil {
		t.Fatal(err)
	}
	if rows[0].RewardModel.GroundTruth != `{"a":1}` || rows[1].RewardModel.GroundTruth != "5" {
		t.Fatalf("%+v", rows)
	}
	plain := filepath.Join(dir, "gt.txt")
	os.WriteFile(plain, []byte("11\n12\n"), 0o644)
	if err := ApplyGroundTruth(rows, plain); err != nil || rows[0].RewardModel.GroundTruth != "11" || rows[1].RewardModel.GroundTruth != "12" {
		t.Fatalf("plain: %v %+v", err, rows)
	}
	os.WriteFile(plain, []byte("11\n"), 0o644)
	if err := ApplyGroundTruth(rows, plain); err == nil || !strings.Contains(err.Error(), "1 answers for 2 rows") {
		t.Fatalf("count mismatch: %v", err)
	}
	os.WriteFile(byIndex, []byte(`{"index": 9, "ground_truth": "5"}`), 0o644)
	if err := ApplyGroundTruth(rows, byIndex); err == nil || !strings.Contains(err.Error(), "no row has extra_info.index 9") {
		t.Fatalf("unknown index: %v", err)
	}
}

// A file whose footer length is corrupt fails at once, without allocating that length:
// "PAR1PAR1" states a footer of 0x31524150 bytes (827 MB).
func TestParquetCorruptFooterLength(t *testing.T) {
	for _, b := range []string{"PAR1PAR1", "PAR1\xff\xff\xff\x7fPAR1", "PAR1\x00\x00\x00\x00\x04\x00\x00\x00PAR1"} {
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		_, _, err := DecodeParquet(strings.NewReader(b), int64(len(b)), "bad.parquet", Options{})
		runtime.ReadMemStats(&m1)
		if err == nil || !strings.Contains(err.Error(), "bad.parquet: not a parquet file") {
			t.Errorf("%q: want a 'not a parquet file' error, got %v", b, err)
		}
		if a := m1.TotalAlloc - m0.TotalAlloc; a > 1<<20 {
			t.Errorf("%q: allocated %d bytes", b, a)
		}
	}
}
