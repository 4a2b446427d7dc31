// Prints the Arrow schema and first prompt of a parquet file as the Arrow Rust reader sees it
// (checks that files written by env/data read as list<struct<content, role>>).
// Run: npm install parquet-wasm@0.8.0 apache-arrow@21.2.0; node read_with_arrow.mjs FILE
import * as arrow from 'apache-arrow';
import { createRequire } from 'module';
import fs from 'fs';
const require = createRequire(import.meta.url);
const pw = require('parquet-wasm/node');
const t = pw.readParquet(fs.readFileSync(process.argv[2]));
const table = arrow.tableFromIPC(t.intoIPCStream());
console.log(table.schema.fields.map(f => `${f.name}: ${f.type}`).join('\n'));
console.log(JSON.stringify(table.get(0).toJSON().prompt));
