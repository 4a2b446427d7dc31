// Reference encoder: the Hugging Face Rust tokenizer (npm "tokenizers") encodes a corpus so
// that Go tests can compare ids, and times the encoding for docs/bench/tokenizer.md.
//
//   node encode.js CORPUS.json OUT_PREFIX TOKENIZER.json...
//
// CORPUS.json is a JSON array of strings. For each tokenizer i it writes OUT_PREFIX.i.bin:
// for add_special_tokens false then true, per document a uint32 count and that many uint32
// ids (little endian), and OUT_PREFIX.i.dec.json: the add_special_tokens=true ids decoded
// with skip_special_tokens false, then true. With --bench it only times encoding and prints
// JSON.
"use strict";
const path = require("path");
const fs = require("fs");
const npm = process.env.MTGRPO_NPM || path.join(__dirname, "../../third_party/npm/node_modules");
const { Tokenizer } = require(path.join(npm, "tokenizers"));

async function encodeAll(tok, docs, addSpecialTokens) {
  const encs = await tok.encodeBatch(docs, { addSpecialTokens });
  return encs.map((e) => e.getIds());
}

function pack(idLists) {
  let n = 0;
  for (const ids of idLists) n += 1 + ids.length;
  const buf = Buffer.alloc(4 * n);
  let o = 0;
  for (const ids of idLists) {
    buf.writeUInt32LE(ids.length, o);
    o += 4;
    for (const id of ids) {
      buf.writeUInt32LE(id, o);
      o += 4;
    }
  }
  return buf;
}

async function bench(tokPath, docs) {
  const bytes = docs.reduce((a, d) => a + Buffer.byteLength(d, "utf8"), 0);
  const t0 = process.hrtime.bigint();
  const tok = Tokenizer.fromFile(tokPath);
  const load = Number(process.hrtime.bigint() - t0) / 1e9;
  await encodeAll(tok, docs.slice(0, 50), false); // warm up
  let best = Infinity;
  let bestCPU = Infinity;
  for (let r = 0; r < 3; r++) {
    const s = process.hrtime.bigint();
    const c = process.cpuUsage();
    await encodeAll(tok, docs, false);
    best = Math.min(best, Number(process.hrtime.bigint() - s) / 1e9);
    const d = process.cpuUsage(c);
    bestCPU = Math.min(bestCPU, (d.user + d.system) / 1e6);
  }
  // cpu_mb_per_s divides by the CPU time of the whole node process (all its threads).
  return { tokenizer: tokPath, bytes, seconds: best, mb_per_s: bytes / 1e6 / best,
    cpu_mb_per_s: bytes / 1e6 / bestCPU, load_s: load,
    rayon_threads: process.env.RAYON_NUM_THREADS || "default" };
}

async function main() {
  const args = process.argv.slice(2);
  const benchMode = args[0] === "--bench";
  if (benchMode) args.shift();
  const [corpusPath, outPrefix, ...toks] = args;
  const docs = JSON.parse(fs.readFileSync(corpusPath, "utf8"));
  if (benchMode) {
    const out = [];
    for (const t of toks) out.push(await bench(t, docs));
    console.log(JSON.stringify(out));
    return;
  }
  for (let i = 0; i < toks.length; i++) {
    const tok = Tokenizer.fromFile(toks[i]);
    const a = await encodeAll(tok, docs, false);
    const b = await encodeAll(tok, docs, true);
    fs.writeFileSync(`${outPrefix}.${i}.bin`, Buffer.concat([pack(a), pack(b)]));
    const keep = await tok.decodeBatch(b, false);
    const skip = await tok.decodeBatch(b, true);
    fs.writeFileSync(`${outPrefix}.${i}.dec.json`, JSON.stringify([keep, skip]));
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
