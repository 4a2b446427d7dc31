import * as arrow from 'apache-arrow';
import { createRequire } from 'module';
import fs from 'fs';
const require = createRequire(import.meta.url);
const pw = require('parquet-wasm/node');
const t = pw.readParquet(fs.readFileSync(process.argv[2]));
const table = arrow.tableFromIPC(t.intoIPCStream());
console.log(table.schema.fields.map(f => `${f.name}: ${f.type}`).join('\n'));
console.log(JSON.stringify(table.get(0).toJSON().prompt));
