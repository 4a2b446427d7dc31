package safetensors

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

func TestPlanShards(t *testing.T) {
	sizes := map[string]int64{"a": 4, "b": 4, "c": 10, "d": 3, "e": 2, "f": 1}
	// max 8, in name order: a(4) b(4) → 8 fits; c(10) > 8 → alone; d(3) e(2) f(1) → 6.
	got := PlanShards(sizes, 8)
	want := [][]string{{"a", "b"}, {"c"}, {"d", "e", "f"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("PlanShards(max 8) = %v, want %v", got, want)
	}
	// max 7: a(4), b would make 8 → new shard; b(4); c alone (closing b's shard); d e f = 6.
	if got := PlanShards(sizes, 7); !reflect.DeepEqual(got, [][]string{{"a"}, {"b"}, {"c"}, {"d", "e", "f"}}) {
		t.Errorf("PlanShards(max 7) = %v", got)
	}
	if got := PlanShards(sizes, 0); len(got) != 1 || len(got[0]) != 6 {
		t.Errorf("PlanShards(0) = %v, want one shard", got)
	}
	if got := PlanShards(nil, 8); len(got) != 1 || len(got[0]) != 0 {
		t.Errorf("PlanShards(empty) = %v, want one empty shard", got)
	}
	if ShardName(1, 3) != "model-00002-of-00003.safetensors" {
		t.Errorf("ShardName(1, 3) = %s", ShardName(1, 3))
	}
}

// sampleWriter holds five U8 tensors of 4 bytes each, byte values = their index.
func sampleWriter(t *testing.T) *Writer {
	w := NewWriter()
	for i, n := range []string{"w0", "w1", "w2", "w3", "w4"} {
		must(t, w.Add(n, U8, []int64{2, 2}, bytes.Repeat([]byte{byte(i)}, 4)))
	}
	return w
}

func TestWriteDirShardedAndSingle(t *testing.T) {
	dir := t.TempDir()
	w := sampleWriter(t)
	// 8-byte shards: (w0 w1) (w2 w3) (w4).
	files, err := w.WriteDir(dir, 8)
	must(t, err)
	wantFiles := []string{ShardName(0, 3), ShardName(1, 3), ShardName(2, 3), IndexName}
	if !reflect.DeepEqual(files, wantFiles) {
		t.Fatalf("files %v, want %v", files, wantFiles)
	}
	ix, err := ReadIndex(filepath.Join(dir, IndexName))
	must(t, err)
	if ix.TotalSize != 20 || ix.WeightMap["w3"] != ShardName(1, 3) || ix.WeightMap["w4"] != ShardName(2, 3) {
		t.Errorf("index %+v", ix)
	}
	c, err := OpenDir(dir)
	must(t, err)
	checkSample(t, c)
	if c.Index() == nil || c.Metadata()["format"] != "pt" {
		t.Errorf("index %v metadata %v", c.Index(), c.Metadata())
	}
	must(t, c.Close())
	must(t, c.Close())

	// Saving again unsharded replaces the shards and index with model.safetensors.
	files, err = w.WriteDir(dir, 0)
	must(t, err)
	if !reflect.DeepEqual(files, []string{SingleName}) || !reflect.DeepEqual(listDir(t, dir), []string{SingleName}) {
		t.Fatalf("files %v, directory %v, want only %s", files, listDir(t, dir), SingleName)
	}
	c, err = OpenDir(dir)
	must(t, err)
	checkSample(t, c)
	if c.Index() != nil {
		t.Error("single-file checkpoint has an index")
	}
	c.Close()
	c, err = OpenDir(filepath.Join(dir, SingleName)) // a file path works too
	must(t, err)
	checkSample(t, c)
	c.Close()

	// And sharded again (2 shards now) removes model.safetensors.
	_, err = w.WriteDir(dir, 12)
	must(t, err)
	if got := listDir(t, dir); !reflect.DeepEqual(got, []string{ShardName(0, 2), ShardName(1, 2), IndexName}) {
		t.Errorf("directory %v", got)
	}
}

func checkSample(t *testing.T, c *Checkpoint) {
	t.Helper()
	if got := c.Names(); !reflect.DeepEqual(got, []string{"w0", "w1", "w2", "w3", "w4"}) {
		t.Fatalf("names %v", got)
	}
	if !c.Has("w3") || c.Has("w5") {
		t.Errorf("Has(w3) = %v, Has(w5) = %v", c.Has("w3"), c.Has("w5"))
	}
	for i, n := range c.Names() {
		d, err := c.Data(n)
		must(t, err)
		if !bytes.Equal(d, bytes.Repeat([]byte{byte(i)}, 4)) {
			t.Errorf("%s = %v", n, d)
		}
		if info, _ := c.Info(n); !reflect.DeepEqual(info.Shape, []int64{2, 2}) {
			t.Errorf("%s info %+v", n, info)
		}
	}
}

func listDir(t *testing.T, dir string) []string {
	ents, err := os.ReadDir(dir)
	must(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

func TestOpenDirErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := sampleWriter(t).WriteDir(dir, 8)
	must(t, err)
	ixPath := filepath.Join(dir, IndexName)

	// An index that lists a tensor its shard lacks: the error names tensor, index and shard.
	ix, _ := ReadIndex(ixPath)
	ix.WeightMap["ghost"] = ShardName(0, 3)
	must(t, WriteIndex(ixPath, ix))
	_, err = OpenDir(dir)
	for _, want := range []string{`tensor "ghost"`, IndexName, ShardName(0, 3)} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not mention %s", err, want)
		}
	}

	bad := map[string]string{
		`{"weight_map": {"a": "../model.safetensors"}}`:      "must be a file name in the checkpoint directory",
		`{"weight_map": {"a": "x", "a": "y"}}`:               `duplicate key "a"`,
		`{"metadata": {"total_size": -1}, "weight_map": {}}`: "total_size",
		`{"metadata": {}}`:                          `missing "weight_map"`,
		`{"weight_map": `:                           "invalid JSON",
		`{"weight_map": {"a": "nope.safetensors"}}`: "nope.safetensors",
	}
	for content, want := range bad {
		must(t, os.WriteFile(ixPath, []byte(content), 0o644))
		if _, err := OpenDir(dir); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("index %s: error %v, want %q", content, err, want)
		}
	}

	if _, err := OpenDir(t.TempDir()); err == nil || !strings.Contains(err.Error(), "holds neither") {
		t.Errorf("empty dir: error %v", err)
	}
}
