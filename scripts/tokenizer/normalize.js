// Runs the Rust library's Unicode normalizers over a list of strings, to find the code points
// where its (older) Unicode tables differ from Go's.
//
//   node normalize.js FORM IN.json OUT.json      (FORM: nfc, nfd, nfkc, nfkd)
"use strict";
const path = require("path");
const fs = require("fs");
const npm = process.env.MTGRPO_NPM || path.join(__dirname, "../../third_party/npm/node_modules");
const tk = require(path.join(npm, "tokenizers"));

const [form, inPath, outPath] = process.argv.slice(2);
const n = tk[`${form}Normalizer`]();
const input = JSON.parse(fs.readFileSync(inPath, "utf8"));
fs.writeFileSync(outPath, JSON.stringify(input.map((s) => n.normalizeString(s))));
